"""Helpers shared by the Spark bridge tests: Connect test data and producing it."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaError, Producer
from pyspark.sql import types as T

from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp

ITEM = (
    SchemaBuilder.struct()
    .name("Item")
    .field("sku", Schema.STRING_SCHEMA)
    .field("qty", Schema.INT32_SCHEMA)
    .build()
)
ORDER = (
    SchemaBuilder.struct()
    .name("Order")
    .field("id", Schema.INT64_SCHEMA)
    .field("customer", Schema.OPTIONAL_STRING_SCHEMA)
    .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
    .field("day", Date.SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
    .field("item", ITEM)
    .build()
)


def order(i: int) -> Struct:
    item = Struct(ITEM).put("sku", f"sku-{i % 7}").put("qty", i % 5)
    return (
        Struct(ORDER)
        .put("id", i)
        .put("customer", None if i % 10 == 0 else f"c{i % 3}")
        .put("amount", decimal.Decimal(i) / 4 + decimal.Decimal("0.25"))
        .put("day", dt.date(2026, 1, 1) + dt.timedelta(days=i % 30))
        .put("at", dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i))
        .put("tags", [f"t{i % 2}", "x"])
        .put("attrs", {"n": i, "sq": i * i})
        .put("item", item)
    )


def produce_raw(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None, int]],
    headers: Sequence[tuple[str, bytes]] | None = None,
    timestamps: Sequence[int] | None = None,
) -> int:
    """Produce (key, value, partition) triples (with the i-th of ``timestamps`` as create
    time, if given); waits for every acknowledgement and fails on any refused record (Apache
    Kafka refuses, for one, a CreateTime more than ``log.message.timestamp.after.max.ms``, an
    hour by default, ahead of its clock)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    refused: list[KafkaError] = []

    def report(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            refused.append(err)

    n = 0
    kwargs: dict[str, Any] = {"on_delivery": report}
    if headers:
        kwargs["headers"] = list(headers)
    for key, value, partition in records:
        if timestamps is not None:
            kwargs["timestamp"] = timestamps[n]
        while True:
            try:
                producer.produce(topic, value, key, partition=partition, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
    assert producer.flush(30) == 0
    assert not refused, f"{len(refused)} of {n} records refused: {refused[0]}"
    return n


ITEM_TYPE = T.StructType(
    [T.StructField("sku", T.StringType(), True), T.StructField("qty", T.IntegerType(), True)]
)


def expected_value_type(precision: int) -> T.StructType:
    return T.StructType(
        [
            T.StructField("id", T.LongType(), True),
            T.StructField("customer", T.StringType(), True),
            T.StructField("amount", T.DecimalType(precision, 2), True),
            T.StructField("day", T.DateType(), True),
            T.StructField("at", T.TimestampType(), True),
            T.StructField("tags", T.ArrayType(T.StringType(), True), True),
            T.StructField("attrs", T.MapType(T.StringType(), T.LongType(), True), True),
            T.StructField("item", ITEM_TYPE, True),
        ]
    )


def check_order_row(value: Any, i: int) -> None:
    expected = order(i)
    assert value["id"] == i
    assert value["customer"] == expected.get("customer")
    assert value["amount"] == expected.get("amount")
    assert value["day"] == expected.get("day")
    at = value["at"]  # Spark hands back naive local time: compare as instants
    assert at.astimezone(dt.UTC) == expected.get("at")
    assert value["tags"] == expected.get("tags")
    assert value["attrs"] == expected.get("attrs")
    assert (value["item"]["sku"], value["item"]["qty"]) == (f"sku-{i % 7}", i % 5)
