"""Unit tests of the bridge's pure parts: type mapping, value conversion, options, limits.

No SparkSession, no broker: pyspark's type classes and pyarrow only.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from connectrt.api.config import ConfigError
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct, Time
from connectrt.errors import DataError
from connectrt.spark.datasource.options import BridgeOptions
from connectrt.spark.datasource.schema import (
    arrow_type,
    connect_schema,
    row_converter,
    spark_type,
    to_arrow_value,
)
from connectrt.spark.datasource.source import _limit
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
        BridgeOptions.parse({"topic": "t"})
    with pytest.raises(ConfigError, match="exactly one"):
        BridgeOptions.parse({**BS, "topic": "a", "pattern": "b.*"})
    with pytest.raises(ConfigError, match="Invalid pattern"):
        BridgeOptions.parse({**BS, "pattern": "("})
    with pytest.raises(ConfigError, match="startingOffsets"):
        BridgeOptions.parse({**BS, "topic": "t", "startingOffsets": "yesterday"})
    with pytest.raises(ConfigError, match="maxOffsetsPerTrigger"):
        BridgeOptions.parse({**BS, "topic": "t", "maxOffsetsPerTrigger": "0"})


def test_options_split_kafka_and_connector_keys() -> None:
    opts = BridgeOptions.parse(
        {
            **BS,
            "kafka.fetch.max.bytes": "1000",
            "topics": "a, b",
            "startingOffsets": '{"a": {"0": 5, "1": -2}}',
            "startingTimestamp": "",
            "transforms": "Mask",
            "transforms.mask.type": "MaskField$Value",
        }
    )
    assert opts.kafka == {"bootstrap.servers": "localhost:9092", "fetch.max.bytes": "1000"}
    assert opts.topics == ("a", "b")
    assert opts.starting.kind == "offsets" and opts.starting.offsets == {"a": {0: 5, 1: -2}}
    assert opts.ending.kind == "latest"
    assert opts.connector["transforms"] == "mask"  # matches Spark's lower-cased keys
    by_time = BridgeOptions.parse({**BS, "topic": "t", "startingTimestamp": "1700000000000"})
    assert by_time.starting.kind == "timestamp" and by_time.starting.timestamp == 1700000000000


def test_max_offsets_per_trigger_is_shared_by_backlog() -> None:
    begin = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    end = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    limited = _limit(begin, end, 100)
    assert limited == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    assert _limit(begin, end, 1000) == end
    unchanged = SchemaBuilder.struct().build()
    assert spark_type(unchanged) == T.StructType([])
