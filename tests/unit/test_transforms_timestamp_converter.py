"""TimestampConverter$Key/$Value between string, unix, Date, Time and Timestamp."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connectrt.api.records import SinkRecord
from connectrt.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.timestamp_converter import (
    TimestampConverterKey,
    TimestampConverterValue,
)

WHEN = dt.datetime(2017, 1, 1, 12, 34, 56, 789000, tzinfo=dt.UTC)
WHEN_MS = 1483274096789
DATE = dt.date(2017, 1, 1)
TIME = dt.time(12, 34, 56, 789000)
EPOCH = dt.date(1970, 1, 1)
FORMAT = "yyyy MM dd HH:mm:ss SSS z"
WHEN_STR = "2017 01 01 12:34:56 789 UTC"


def conv(cls: type = TimestampConverterValue, **config: str) -> Any:
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


def rec(value: Any, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("t", 0, None, None, schema, value, 0)


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (WHEN, "Timestamp", WHEN),
        (WHEN, "Date", DATE),
        (WHEN, "Time", TIME),
        (WHEN, "unix", WHEN_MS),
        (WHEN, "string", WHEN_STR),
        (WHEN_MS, "Timestamp", WHEN),
        (WHEN_STR, "unix", WHEN_MS),
        (DATE, "unix", 1483228800000),
        (TIME, "unix", 45296789),
        (WHEN_MS, "Time", TIME),
    ],
)
def test_schemaless_whole_value(value: Any, target: str, expected: Any) -> None:
    out = conv(target_type=target, format=FORMAT).apply(rec(value))
    assert out.value == expected
    assert out.value_schema is None


@pytest.mark.parametrize(
    ("schema", "value", "target", "expected_schema", "expected"),
    [
        (Timestamp.SCHEMA, WHEN, "unix", Schema.INT64_SCHEMA, WHEN_MS),
        (Schema.INT64_SCHEMA, WHEN_MS, "Timestamp", Timestamp.SCHEMA, WHEN),
        (Schema.INT64_SCHEMA, WHEN_MS, "Date", Date.SCHEMA, DATE),
        (Schema.STRING_SCHEMA, WHEN_STR, "Time", Time.SCHEMA, TIME),
        (Date.SCHEMA, DATE, "string", Schema.STRING_SCHEMA, "2017 01 01 00:00:00 000 UTC"),
        (
            Time.SCHEMA,
            TIME,
            "Timestamp",
            Timestamp.SCHEMA,
            dt.datetime.combine(EPOCH, TIME, dt.UTC),
        ),
    ],
)
def test_with_schema_whole_value(
    schema: Schema, value: Any, target: str, expected_schema: Schema, expected: Any
) -> None:
    out = conv(target_type=target, format=FORMAT).apply(rec(value, schema))
    assert out.value_schema == expected_schema
    assert out.value == expected


def test_optional_schema_and_null() -> None:
    out = conv(target_type="unix").apply(rec(None, Timestamp.builder().optional().build()))
    assert out.value is None
    assert out.value_schema == Schema.OPTIONAL_INT64_SCHEMA
    assert conv(target_type="unix").apply(rec(None)).value is None


@pytest.mark.parametrize(
    ("precision", "unix"),
    [
        ("seconds", WHEN_MS // 1000),
        ("milliseconds", WHEN_MS),
        ("microseconds", WHEN_MS * 1000),
        ("nanoseconds", WHEN_MS * 1_000_000),
    ],
)
def test_unix_precision(precision: str, unix: int) -> None:
    out = conv(target_type="unix", unix_precision=precision).apply(rec(WHEN))
    assert out.value == unix
    back = conv(target_type="Timestamp", unix_precision=precision).apply(rec(unix))
    expected = WHEN.replace(microsecond=0) if precision == "seconds" else WHEN
    assert back.value == expected


def test_field_with_schema() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("E")
        .field("ts", Schema.OPTIONAL_INT64_SCHEMA)
        .field("other", Schema.STRING_SCHEMA)
        .build()
    )
    t = conv(field="ts", target_type="string", format="yyyy-MM-dd")
    out = t.apply(rec(Struct(schema).put("ts", WHEN_MS).put("other", "x"), schema))
    assert out.value_schema.name == "E"
    assert out.value_schema.field("ts").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert out.value.get("ts") == "2017-01-01"
    assert out.value.get("other") == "x"
    null_ts = t.apply(rec(Struct(schema).put("other", "y"), schema))
    assert null_ts.value.get("ts") is None


def test_field_replace_null_with_default() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("ts", SchemaBuilder.int64().optional().default_value(0))
        .build()
    )
    with_default = conv(field="ts", target_type="Timestamp").apply(rec(Struct(schema), schema))
    assert with_default.value.get("ts") == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    without = conv(field="ts", target_type="Timestamp", replace_null_with_default="false")
    assert without.apply(rec(Struct(schema), schema)).value.get("ts") is None


def test_field_schemaless_and_key() -> None:
    out = conv(field="ts", target_type="Date").apply(rec({"ts": WHEN_MS, "x": 1}))
    assert out.value == {"ts": DATE, "x": 1}
    key_out = conv(TimestampConverterKey, target_type="unix").apply(
        SinkRecord("t", 0, Timestamp.SCHEMA, WHEN, None, "v", 0)
    )
    assert (key_out.key, key_out.key_schema, key_out.value) == (
        WHEN_MS,
        Schema.INT64_SCHEMA,
        "v",
    )


def test_data_errors() -> None:
    with pytest.raises(DataError, match="does not correspond to a known timestamp type"):
        conv(target_type="unix").apply(rec(1, Schema.INT32_SCHEMA))
    with pytest.raises(DataError, match="does not support float"):
        conv(target_type="unix").apply(rec(1.5))
    with pytest.raises(DataError, match="does not match pattern"):
        conv(target_type="unix", format="yyyy-MM-dd").apply(rec("01/01/2017"))
    with pytest.raises(DataError, match="format is required"):
        conv(target_type="unix").apply(rec("2017-01-01"))
    with pytest.raises(DataError, match="field ts"):
        conv(field="ts", target_type="unix").apply(rec({"ts": [1]}))


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"target.type": "string"}, "format"),
        ({"target.type": "string", "format": "yyyy-qq"}, "format"),
        ({"target.type": "date"}, "target.type"),  # case-sensitive, as in Kafka
        ({}, "target.type"),
        ({"target.type": "unix", "unix.precision": "minutes"}, "unix.precision"),
    ],
)
def test_config_errors(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        TimestampConverterValue().configure(config)
    assert info.value.name == key
