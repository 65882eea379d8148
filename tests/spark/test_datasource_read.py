"""spark.read.format("connectrt"): Connect schemas become Spark schemas, records become rows.

The session's broker, a real schema registry, the session's local SparkSession.
"""

from __future__ import annotations

import decimal
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from connectrt.broker import EmbeddedBroker
from connectrt.converters.avro import AvroConverter
from connectrt.converters.json import JsonConverter
from connectrt.schema_registry.server import SchemaRegistryServer
from connectrt.spark.datasource import register
from connectrt.testing.harness import create_topic
from tests.spark.bridge_helpers import check_order_row, expected_value_type, order, produce_raw

pytestmark = [pytest.mark.spark, pytest.mark.integration]

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
AVRO = "io.confluent.connect.avro.AvroConverter"
N = 40


@pytest.fixture(scope="module")
def bridge(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def test_batch_read_json_with_schemas(
    bridge: SparkSession, broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("orders")
    create_topic(broker.bootstrap_servers, topic, 2)
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, False)
    produce_raw(
        broker.bootstrap_servers,
        topic,
        (
            (f"k{i}".encode(), conv.from_connect_data(topic, order(i).schema, order(i)), i % 2)
            for i in range(N)
        ),
        headers=[("origin", b"unit-test")],
    )

    def load(**extra: str) -> Any:
        subscription = (
            {"subscribePattern": extra.pop("pattern")}
            if "pattern" in extra
            else {"subscribe": topic}
        )
        reader = (
            bridge.read.format("connectrt")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .options(**subscription)
            .option("key.converter", STRING)
            .option("value.converter", JSON)
            .option("value.converter.schemas.enable", "true")
        )
        for k, v in extra.items():
            reader = reader.option(k, v)
        return reader.load()

    assert "headers" not in load().schema.fieldNames()  # includeHeaders defaults to false
    df = load(includeHeaders="true")
    assert df.schema["key"].dataType == T.StringType()
    assert df.schema["value"].dataType == expected_value_type(10)
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert df.rdd.getNumPartitions() == 2  # one Spark partition per Kafka partition
    rows = df.collect()
    assert len(rows) == N
    for row in rows:
        i = row["value"]["id"]
        check_order_row(row["value"], i)
        assert row["key"] == f"k{i}"
        assert (row["topic"], row["partition"], row["offset"]) == (topic, i % 2, i // 2)
        assert row["timestamp"] is not None
        assert row["timestampType"] == 0  # CreateTime, Kafka's id as in Spark's column
        assert [(h["key"], bytes(h["value"])) for h in row["headers"]] == [("origin", b"unit-test")]

    # offset ranges: per-partition JSON, -2 = earliest
    starting = json.dumps({topic: {"0": 5, "1": -2}})
    ending = json.dumps({topic: {"0": 10, "1": 3}})
    ranged = load(startingOffsets=starting, endingOffsets=ending).select("partition", "offset")
    got = sorted((r[0], r[1]) for r in ranged.collect())
    assert got == [(0, o) for o in range(5, 10)] + [(1, o) for o in range(3)]

    # SQL over the typed columns
    total = df.selectExpr("sum(value.amount) AS s").collect()[0]["s"]
    assert total == sum((order(i).get("amount") for i in range(N)), decimal.Decimal(0))

    # timestamps: 6 later records on partition 0, one second apart (the embedded broker
    # answers timestamp lookups with offset 0: the bridge checks by reading). Ten minutes
    # ahead: Apache Kafka refuses a CreateTime more than an hour ahead of its clock
    # (log.message.timestamp.after.max.ms).
    later = int(time.time() * 1000) + 600_000
    produce_raw(
        broker.bootstrap_servers,
        topic,
        (
            (None, conv.from_connect_data(topic, order(i).schema, order(i)), 0)
            for i in range(100, 106)
        ),
        timestamps=[later + k * 1000 for k in range(6)],
    )
    # partition 1 has no record that late: it starts at its end (Spark's default would fail)
    from_time = (
        load(startingTimestamp=str(later + 2500), startingOffsetsByTimestampStrategy="latest")
        .select("value.id")
        .collect()
    )
    assert sorted(r[0] for r in from_time) == [103, 104, 105]
    until_time = load(endingTimestamp=str(later + 2500), pattern=re.escape(topic) + "$")
    assert until_time.count() == N + 3


@pytest.fixture
def registry_server(broker: EmbeddedBroker, unique_name: Callable[[str], str]) -> Iterator[str]:
    server = SchemaRegistryServer(
        broker.bootstrap_servers, unique_name("schemas"), "http://127.0.0.1:0", timeout=10.0
    )
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def test_batch_read_avro_through_registry(
    bridge: SparkSession,
    broker: EmbeddedBroker,
    registry_server: str,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("avro-orders")
    create_topic(broker.bootstrap_servers, topic, 1)
    conv = AvroConverter()
    conv.configure({"schema.registry.url": registry_server}, False)
    try:
        payloads = [conv.from_connect_data(topic, order(i).schema, order(i)) for i in range(N)]
    finally:
        conv.close()
    assert all(p is not None and p[0] == 0 for p in payloads)  # Confluent wire format
    produce_raw(broker.bootstrap_servers, topic, ((None, p, 0) for p in payloads))

    def load(**extra: str) -> Any:
        reader = (
            bridge.read.format("connectrt")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("topic", topic)  # the bridge's former name for subscribe still works
            .option("key.converter", STRING)
            .option("value.converter", AVRO)
            .option("value.converter.schema.registry.url", registry_server)
        )
        for k, v in extra.items():
            reader = reader.option(k, v)
        return reader.load()

    sampled = load()
    assert sampled.schema["value"].dataType == expected_value_type(10)
    rows = sorted(sampled.collect(), key=lambda r: r["offset"])
    assert [r["value"]["id"] for r in rows] == list(range(N))
    for row in rows:
        check_order_row(row["value"], row["value"]["id"])
        assert row["key"] is None

    # the schema from the registry subject instead of a sample: same Spark schema
    by_subject = load(**{"value.schema.subject": f"{topic}-value"})
    assert by_subject.schema == sampled.schema
    assert by_subject.filter("value.customer = 'c1'").count() == sum(
        1 for i in range(N) if i % 10 and i % 3 == 1
    )
