"""Cast$Key / Cast$Value: whole-value and per-field casts, with and without schemas."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connectrt.api.records import SinkRecord, SourceRecord
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp, Type
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.cast import CastKey, CastValue, java_double_str


def cast_value(**config: str) -> CastValue[Any]:
    t: CastValue[Any] = CastValue()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


def record(value: Any, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("t", 0, None, None, schema, value, 5)


def test_whole_value_schemaless_int_to_string() -> None:
    out = cast_value(spec="string").apply(record(42))
    assert out.value == "42"
    assert out.value_schema is None


def test_whole_value_with_schema_updates_schema() -> None:
    out = cast_value(spec="int8").apply(record(42, Schema.INT64_SCHEMA))
    assert out.value == 42
    assert out.value_schema == Schema.INT8_SCHEMA


def test_whole_value_optional_schema_stays_optional() -> None:
    out = cast_value(spec="string").apply(record(7, Schema.OPTIONAL_INT32_SCHEMA))
    assert out.value_schema == Schema.OPTIONAL_STRING_SCHEMA


def test_key_variant_casts_key_only() -> None:
    t: CastKey[Any] = CastKey()
    t.configure({"spec": "int32"})
    r = SourceRecord(None, None, "t", None, Schema.STRING_SCHEMA, "12", Schema.STRING_SCHEMA, "v")
    out = t.apply(r)
    assert (out.key, out.key_schema) == (12, Schema.INT32_SCHEMA)
    assert (out.value, out.value_schema) == ("v", Schema.STRING_SCHEMA)


def test_fields_with_schema() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("rec")
        .field("a", Schema.INT64_SCHEMA)
        .field("b", Schema.OPTIONAL_STRING_SCHEMA)
        .field("c", Schema.FLOAT64_SCHEMA)
        .field("keep", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct(schema).put("a", 300).put("b", "true").put("c", 2.9).put("keep", "k")
    out = cast_value(spec="a:int8,b:boolean,c:int32").apply(record(value, schema))
    s = out.value_schema
    assert s.name == "rec"
    assert s.field("a").schema == Schema.INT8_SCHEMA
    assert s.field("b").schema == Schema.OPTIONAL_BOOLEAN_SCHEMA
    assert s.field("c").schema == Schema.INT32_SCHEMA
    assert s.field("keep").schema == Schema.STRING_SCHEMA
    # Java narrowing: 300 wraps to 44 in a byte; 2.9 truncates to 2.
    assert out.value.get("a") == 44
    assert out.value.get("b") is True
    assert out.value.get("c") == 2
    assert out.value.get("keep") == "k"


def test_field_default_is_cast_too() -> None:
    schema = SchemaBuilder.struct().field("n", SchemaBuilder.int32().default_value(5)).build()
    out = cast_value(spec="n:string").apply(record(Struct(schema), schema))
    assert out.value_schema.field("n").schema.default == "5"
    assert out.value.get("n") == "5"


def test_replace_null_with_default_false_keeps_null() -> None:
    schema = (
        SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(5)).build()
    )
    t = cast_value(spec="n:int64", replace_null_with_default="false")
    out = t.apply(record(Struct(schema), schema))
    assert out.value.get_without_default("n") is None
    out2 = cast_value(spec="n:int64").apply(record(Struct(schema), schema))
    assert out2.value.get_without_default("n") == 5


def test_fields_schemaless() -> None:
    out = cast_value(spec="a:int16,b:float32,c:string").apply(
        record({"a": "12", "b": 1, "c": b"\x01\x02", "d": "x"})
    )
    assert out.value == {"a": 12, "b": 1.0, "c": "AQI=", "d": "x"}
    assert isinstance(out.value["b"], float)


def test_schema_cache_reuses_updated_schema() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    t = cast_value(spec="a:string")
    s1 = t.apply(record(Struct(schema).put("a", 1), schema)).value_schema
    s2 = t.apply(record(Struct(schema).put("a", 2), schema)).value_schema
    assert s1 is s2


def test_null_value_passes_through() -> None:
    r = record(None, Schema.OPTIONAL_INT32_SCHEMA)
    assert cast_value(spec="string").apply(r) is r


def test_bytes_only_cast_to_string() -> None:
    with pytest.raises(DataError, match="Cast\\$Value"):
        cast_value(spec="int32").apply(record(b"abc", Schema.BYTES_SCHEMA))


def test_string_parse_failure_names_field() -> None:
    with pytest.raises(DataError, match=r"field a.*out of range"):
        cast_value(spec="a:int8").apply(record({"a": "1000"}))
    with pytest.raises(DataError, match="out of range"):
        cast_value(spec="int32").apply(record("abc"))


def test_struct_input_is_rejected() -> None:
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("s", inner).build()
    value = Struct(schema).put("s", Struct(inner).put("x", 1))
    with pytest.raises(DataError, match="does not support casting from STRUCT"):
        cast_value(spec="s:string").apply(record(value, schema))


def test_field_cast_needs_struct_or_map() -> None:
    with pytest.raises(DataError, match="Only Map objects"):
        cast_value(spec="a:int8").apply(record(5))
    with pytest.raises(DataError, match="Only Struct objects"):
        cast_value(spec="a:int8").apply(record(5, Schema.INT32_SCHEMA))


def test_logical_types() -> None:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)
    out = cast_value(spec="int64").apply(record(ts, Timestamp.SCHEMA))
    assert out.value == Timestamp.from_logical(None, ts)
    assert out.value_schema == Schema.INT64_SCHEMA
    out = cast_value(spec="string").apply(record(ts, Timestamp.SCHEMA))
    assert out.value == "2024-01-02T03:04:05.006Z"
    assert out.value_schema == Schema.STRING_SCHEMA
    out = cast_value(spec="string").apply(record(dt.date(2024, 1, 2), Date.SCHEMA))
    assert out.value == "2024-01-02"
    out = cast_value(spec="float64").apply(record(decimal.Decimal("1.25"), Decimal.schema(2)))
    assert out.value == 1.25


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (True, "int32", 1),
        (0.5, "boolean", False),  # Java longValue() truncates before the != 0 test
        (2, "boolean", True),
        ("TRUE", "boolean", True),
        ("yes", "boolean", False),
        (1.5, "string", "1.5"),
        (1e10, "string", "1.0E10"),
        (2**40, "int32", 0),
        (-129, "int8", 127),
        (1e20, "int64", 2**63 - 1),
        ("-12", "int64", -12),
        ("3.5e2", "float64", 350.0),
        (True, "string", "true"),
    ],
)
def test_java_conversion_semantics(value: Any, target: str, expected: Any) -> None:
    assert cast_value(spec=target).apply(record(value)).value == expected


def test_float32_rounding_and_string_form() -> None:
    out = cast_value(spec="float32").apply(record(0.1))
    assert out.value != 0.1  # rounded to float32 precision
    assert abs(out.value - 0.1) < 1e-7
    assert java_double_str(out.value, float32=True) == "0.1"
    assert java_double_str(1234567.0) == "1234567.0"
    assert java_double_str(1.0e-5) == "1.0E-5"
    assert java_double_str(-0.0) == "-0.0"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("", "at least one field"),
        ("a:int8,int16", "only one type"),
        ("a:bytes", "does not support casting to bytes"),
        ("a:b:c", "Invalid cast mapping"),
        ("a:array", "does not support"),
    ],
)
def test_config_errors(spec: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as info:
        cast_value(spec=spec)
    assert info.value.name == "spec"


def test_missing_spec() -> None:
    with pytest.raises(ConfigError) as info:
        CastValue().configure({})
    assert info.value.name == "spec"


def test_type_is_case_insensitive_and_config_def_exposes_keys() -> None:
    out = cast_value(spec="a:INT32").apply(record({"a": "3"}))
    assert out.value == {"a": 3}
    assert set(CastValue().config_def().names()) == {"spec", "replace.null.with.default"}
    assert Type.INT32.value == "int32"
