"""Unit tests of the bridge's pure parts: type mapping, value conversion, options, limits.

No SparkSession, no broker: pyspark's type classes and pyarrow only.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from pyspark.sql import types as T
from pyspark.sql.datasource import InputPartition

from connectrt.api.config import ConfigError
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct, Time
from connectrt.errors import DataError
from connectrt.runtime.redaction import redact
from connectrt.spark.datasource.options import BridgeOptions, parse_duration_ms
from connectrt.spark.datasource.schema import (
    arrow_type,
    connect_schema,
    row_converter,
    spark_type,
    to_arrow_value,
)
from connectrt.spark.datasource.source import (
    BatchReader,
    KafkaRange,
    _limit,
    delay_batch,
    split_ranges,
)
from tests.spark.bridge_helpers import ORDER, order

pytestmark = pytest.mark.spark

BS = {"kafka.bootstrap.servers": "localhost:9092"}


def test_connect_struct_maps_to_spark_and_arrow_values_fit() -> None:
    data_type = spark_type(ORDER)
    assert isinstance(data_type, T.StructType)
    assert data_type["amount"].dataType == T.DecimalType(10, 2)
    values = [to_arrow_value(data_type)(order(i)) for i in range(3)]
    array = pa.array(values, type=arrow_type(data_type))
    assert array.to_pylist()[2]["item"] == {"sku": "sku-2", "qty": 2}
    assert array.to_pylist()[1]["attrs"] == [("n", 1), ("sq", 1)]


def test_schemaless_and_time_values_become_text() -> None:
    assert spark_type(None) == T.StringType()
    fn = to_arrow_value(T.StringType())
    assert fn({"a": [1, 2]}) == '{"a":[1,2]}'
    assert fn("as is") == "as is"
    assert fn(dt.time(12, 30, 1)) == "12:30:01"
    assert spark_type(Time.SCHEMA) == T.StringType()


def test_values_that_do_not_fit_a_struct_column_are_data_errors() -> None:
    fn = to_arrow_value(spark_type(ORDER))
    with pytest.raises(DataError, match="expected a struct"):
        fn("not a struct")


def test_decimal_precision_is_capped_and_bad_scales_rejected() -> None:
    wide = Decimal.builder(4).parameter("connect.decimal.precision", "64").build()
    assert spark_type(wide) == T.DecimalType(38, 4)
    assert spark_type(Decimal.schema(2)) == T.DecimalType(38, 2)
    with pytest.raises(DataError, match="does not fit"):
        spark_type(Decimal.builder(40).build())


def test_spark_rows_become_connect_structs_with_logical_types() -> None:
    data_type = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("amount", T.DecimalType(12, 3), True),
            T.StructField("at", T.TimestampNTZType(), True),
            T.StructField("tags", T.ArrayType(T.StringType()), True),
        ]
    )
    schema = connect_schema(data_type, False, "Row")
    assert schema.name == "Row" and not schema.optional
    assert schema.field("id").schema == Schema.INT64_SCHEMA  # type: ignore[union-attr]
    amount = schema.field("amount").schema  # type: ignore[union-attr]
    assert Decimal.scale(amount) == 3
    assert (amount.parameters or {})["connect.decimal.precision"] == "12"
    struct = row_converter(data_type, schema)(
        (7, decimal.Decimal("1.500"), dt.datetime(2026, 1, 2, 3, 4, 5), ["a"])
    )
    assert isinstance(struct, Struct)
    struct.validate()
    assert struct.get("at") == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def test_unsupported_spark_type_is_named() -> None:
    with pytest.raises(DataError, match="interval"):
        connect_schema(T.DayTimeIntervalType())


def test_options_need_bootstrap_and_exactly_one_subscription() -> None:
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap\.servers"):
        BridgeOptions.parse({"subscribe": "t"})
    with pytest.raises(ConfigError, match="exactly one"):
        BridgeOptions.parse({**BS, "subscribe": "a", "subscribePattern": "b.*"})
    with pytest.raises(ConfigError, match="exactly one"):
        BridgeOptions.parse({**BS, "subscribe": "a", "pattern": "b.*"})  # old name counts
    with pytest.raises(ConfigError, match="Invalid subscribePattern"):
        BridgeOptions.parse({**BS, "subscribePattern": "("})
    with pytest.raises(ConfigError, match="assign"):
        BridgeOptions.parse({**BS, "assign": "[0, 1]"})
    with pytest.raises(ConfigError, match="startingOffsets"):
        BridgeOptions.parse({**BS, "subscribe": "t", "startingOffsets": "yesterday"})
    with pytest.raises(ConfigError, match="maxOffsetsPerTrigger"):
        BridgeOptions.parse({**BS, "subscribe": "t", "maxOffsetsPerTrigger": "0"})
    with pytest.raises(ConfigError, match="failOnDataLoss"):
        BridgeOptions.parse({**BS, "subscribe": "t", "failOnDataLoss": "maybe"})
    with pytest.raises(ConfigError, match="maxTriggerDelay"):
        BridgeOptions.parse({**BS, "subscribe": "t", "maxTriggerDelay": "soon"})
    with pytest.raises(ConfigError, match="startingOffsetsByTimestampStrategy"):
        BridgeOptions.parse({**BS, "subscribe": "t", "startingOffsetsByTimestampStrategy": "first"})
    for owned in ("auto.offset.reset", "enable.auto.commit", "value.deserializer"):
        with pytest.raises(ConfigError, match=f"kafka.{owned} is not supported"):
            BridgeOptions.parse({**BS, "subscribe": "t", f"kafka.{owned}": "x"})


def test_options_keep_spark_names_defaults_and_the_old_names() -> None:
    opts = BridgeOptions.parse({**BS, "subscribe": "a, b"})
    assert opts.topics == ("a", "b") and opts.pattern is None and opts.assign is None
    assert opts.starting_for(streaming=True).kind == "latest"  # Spark's streaming default
    assert opts.starting_for(streaming=False).kind == "earliest"
    assert opts.ending_for(streaming=False).kind == "latest"
    assert opts.fail_on_data_loss and not opts.include_headers
    assert opts.max_trigger_delay_ms == 15 * 60_000
    assert opts.min_partitions is None and opts.min_offsets_per_trigger is None
    assert opts.group_id("u1") == "spark-kafka-relation-u1"
    import dataclasses

    assert dataclasses.replace(opts, streaming=True).group_id("u1") == "spark-kafka-source-u1"
    prefixed = BridgeOptions.parse({**BS, "subscribe": "a", "groupIdPrefix": "team-x"})
    assert prefixed.group_id("u2") == "team-x-u2"
    fixed = BridgeOptions.parse({**BS, "subscribe": "a", "kafka.group.id": "acl-group"})
    assert fixed.group_id("u3") == "acl-group"
    # the bridge's former names still work
    assert BridgeOptions.parse({**BS, "topic": "a"}).topics == ("a",)
    assert BridgeOptions.parse({**BS, "topics": "a,b"}).topics == ("a", "b")
    assert BridgeOptions.parse({**BS, "pattern": "a.*"}).pattern == "a.*"
    assigned = BridgeOptions.parse({**BS, "assign": '{"b": [1, 0], "a": [2]}'})
    assert assigned.assign == {"a": (2,), "b": (0, 1)} and assigned.topics == ("a", "b")
    tuned = BridgeOptions.parse(
        {
            **BS,
            "subscribe": "a",
            "minPartitions": "8",
            "minOffsetsPerTrigger": "100",
            "maxTriggerDelay": "30s",
            "includeHeaders": "true",
            "failOnDataLoss": "false",
            "kafkaConsumer.pollTimeoutMs": "5000",
        }
    )
    assert (tuned.min_partitions, tuned.min_offsets_per_trigger) == (8, 100)
    assert tuned.max_trigger_delay_ms == 30_000 and tuned.poll_timeout == 5.0
    assert tuned.include_headers and not tuned.fail_on_data_loss


def test_java_style_security_options_become_librdkafka_settings() -> None:
    """As Spark's Kafka source users write them: the JAAS password comes out as
    ``sasl.password``, hidden from logs and from the options' repr; a JKS store is refused
    naming the ``kafka.`` key; librdkafka's own keys pass as they are."""
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule"
    secret = "bridge-unit-secret-4411"
    opts = BridgeOptions.parse(
        {
            **BS,
            "subscribe": "a",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": f'{scram} required username="u" password="{secret}";',
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
            "kafka.ssl.endpoint.identification.algorithm": "",
            "kafka.client.id": "bridge",
        }
    )
    assert opts.kafka == {
        "bootstrap.servers": "localhost:9092",
        "client.id": "bridge",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": secret,
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert secret not in repr(opts)
    assert secret not in redact(f"password {secret}")
    with pytest.raises(ConfigError, match=r"kafka\.ssl\.truststore\.location is a JKS"):
        BridgeOptions.parse({**BS, "subscribe": "a", "kafka.ssl.truststore.location": "t.jks"})
    native = {"kafka.sasl.username": "u", "kafka.ssl.ca.location": "/ca.pem"}
    plain = BridgeOptions.parse({**BS, "subscribe": "a", **native})
    assert plain.kafka == {"bootstrap.servers": "localhost:9092", "sasl.username": "u",
                           "ssl.ca.location": "/ca.pem"}  # fmt: skip


def test_offset_checks_are_sparks() -> None:
    batch_latest = BridgeOptions.parse({**BS, "subscribe": "t", "startingOffsets": "latest"})
    assert batch_latest.starting_for(streaming=True).kind == "latest"
    with pytest.raises(ConfigError, match="not valid for a batch read"):
        batch_latest.starting_for(streaming=False)
    minus_one = BridgeOptions.parse({**BS, "subscribe": "t", "startingOffsets": '{"t": {"0": -1}}'})
    with pytest.raises(ConfigError, match="not valid for a batch read"):
        minus_one.starting_for(streaming=False)
    ending = BridgeOptions.parse({**BS, "subscribe": "t", "endingOffsets": "earliest"})
    with pytest.raises(ConfigError, match="not valid for a batch read"):
        ending.ending_for(streaming=False)
    with pytest.raises(ConfigError, match="batch reads only"):
        ending.ending_for(streaming=True)
    # the global time wins over per-partition times, which win over offsets (as in Spark)
    all_three = BridgeOptions.parse(
        {
            **BS,
            "subscribe": "t",
            "startingTimestamp": "1000",
            "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
            "startingOffsets": "earliest",
        }
    )
    assert all_three.starting_for(streaming=True).kind == "timestamp"
    two = BridgeOptions.parse(
        {
            **BS,
            "subscribe": "t",
            "startingOffsetsByTimestamp": '{"t": {"0": 5}}',
            "startingOffsets": "earliest",
        }
    )
    spec = two.starting_for(streaming=False)
    assert spec.kind == "timestamps" and spec.offsets == {"t": {0: 5}}


def test_durations_as_spark_writes_them() -> None:
    assert parse_duration_ms("15m", "k") == 900_000
    assert parse_duration_ms("30s", "k") == 30_000
    assert parse_duration_ms("250ms", "k") == 250
    assert parse_duration_ms("2h", "k") == 7_200_000
    assert parse_duration_ms("1200", "k") == 1200


def test_min_partitions_splits_ranges_by_their_share() -> None:
    ranges = [KafkaRange("t", 0, 0, 300), KafkaRange("t", 1, 10, 110), KafkaRange("t", 2, 5, 5)]
    split = split_ranges(ranges, 8)
    assert [(r.partition, r.start, r.end) for r in split] == [
        (0, 0, 50),
        (0, 50, 100),
        (0, 100, 150),
        (0, 150, 200),
        (0, 200, 250),
        (0, 250, 300),
        (1, 10, 60),
        (1, 60, 110),
    ]
    assert [(r.partition, r.start, r.end) for r in split_ranges(ranges, None)] == [
        (0, 0, 300),
        (1, 10, 110),
    ]


def test_a_batch_with_only_empty_ranges_reads_nothing() -> None:
    # Every range empty (a start at the end of each partition): partitions() is empty and
    # Spark runs one task on InputPartition(None), which must read nothing, not fail.
    options = BridgeOptions.parse({**BS, "subscribe": "t"})
    schema = T.StructType([T.StructField("value", T.StringType())])
    reader = BatchReader(options, schema)
    assert split_ranges([KafkaRange("t", 0, 7, 7), KafkaRange("t", 1, 3, 3)], 4) == []
    assert list(reader.read(InputPartition(None))) == []
    assert list(reader.read(KafkaRange("t", 0, 7, 7))) == []
    with pytest.raises(TypeError, match="Not a Kafka offset range"):
        list(reader.read(InputPartition("what")))


def test_min_offsets_per_trigger_delays_only_small_batches_within_the_delay() -> None:
    assert delay_batch(available=5, minimum=10, waited_ms=100, max_delay_ms=1000)
    assert not delay_batch(available=5, minimum=10, waited_ms=1000, max_delay_ms=1000)
    assert not delay_batch(available=10, minimum=10, waited_ms=0, max_delay_ms=1000)
    assert not delay_batch(available=0, minimum=None, waited_ms=0, max_delay_ms=1000)


def test_max_offsets_per_trigger_is_shared_by_backlog() -> None:
    begin = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    end = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    limited = _limit(begin, end, 100)
    assert limited == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    assert _limit(begin, end, 1000) == end
    unchanged = SchemaBuilder.struct().build()
    assert spark_type(unchanged) == T.StructType([])
