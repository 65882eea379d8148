"""InsertField$Key/$Value and MaskField$Key/$Value."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connectrt.api.records import SinkRecord, SourceRecord
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.insert_field import InsertFieldKey, InsertFieldValue, InsertionSpec
from connectrt.transforms.mask_field import MaskFieldKey, MaskFieldValue

SCHEMA = (
    SchemaBuilder.struct()
    .name("V")
    .version(2)
    .field("magic", Schema.INT64_SCHEMA)
    .field("opt", SchemaBuilder.int32().optional().default_value(9))
    .build()
)


def configured(cls: type, **config: str) -> Any:
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


def sink(value: Any, schema: Schema | None = None, timestamp: int | None = 1_000) -> SinkRecord:
    return SinkRecord("topic", 3, None, None, schema, value, 42, timestamp)


ALL = {
    "topic_field": "topic_field!",
    "partition_field": "partition_field",
    "offset_field": "offset_field?",
    "timestamp_field": "timestamp_field",
    "static_field": "instance_id",
    "static_value": "my-instance-id",
}


# -- InsertField -------------------------------------------------------------------------------


def test_insertion_spec_suffixes() -> None:
    assert InsertionSpec.parse("f!") == InsertionSpec("f", False)
    assert InsertionSpec.parse("f?") == InsertionSpec("f", True)
    assert InsertionSpec.parse("f") == InsertionSpec("f", True)
    assert InsertionSpec.parse(None) is None
    assert InsertionSpec.parse("") is None


def test_insert_field_with_schema() -> None:
    t = configured(InsertFieldValue, **ALL)
    out = t.apply(sink(Struct(SCHEMA).put("magic", 42), SCHEMA))
    s = out.value_schema
    assert (s.name, s.version) == ("V", 2)
    assert s.field("magic").schema == Schema.INT64_SCHEMA
    assert s.field("topic_field").schema == Schema.STRING_SCHEMA  # "!" = required
    assert s.field("partition_field").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert s.field("offset_field").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert s.field("timestamp_field").schema.name == Timestamp.LOGICAL_NAME
    assert s.field("timestamp_field").schema.optional
    assert s.field("instance_id").schema == Schema.OPTIONAL_STRING_SCHEMA
    v = out.value
    assert v.get("magic") == 42
    assert v.get("opt") == 9
    assert v.get("topic_field") == "topic"
    assert v.get("partition_field") == 3
    assert v.get("offset_field") == 42
    assert v.get("timestamp_field") == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert v.get("instance_id") == "my-instance-id"


def test_insert_field_schema_is_cached() -> None:
    t = configured(InsertFieldValue, topic_field="t")
    a = t.apply(sink(Struct(SCHEMA).put("magic", 1), SCHEMA)).value_schema
    b = t.apply(sink(Struct(SCHEMA).put("magic", 2), SCHEMA)).value_schema
    assert a is b


def test_insert_field_replace_null_with_default_false() -> None:
    t = configured(InsertFieldValue, topic_field="t", replace_null_with_default="false")
    out = t.apply(sink(Struct(SCHEMA).put("magic", 1), SCHEMA))
    assert out.value.get_without_default("opt") is None


def test_insert_field_schemaless() -> None:
    out = configured(InsertFieldValue, **ALL).apply(sink({"magic": 42}))
    assert out.value == {
        "magic": 42,
        "topic_field": "topic",
        "partition_field": 3,
        "offset_field": 42,
        "timestamp_field": 1000,
        "instance_id": "my-instance-id",
    }


def test_insert_field_key_variant() -> None:
    t = configured(InsertFieldKey, topic_field="t")
    r = SinkRecord("topic", 0, None, {"k": 1}, None, "v", 0)
    out = t.apply(r)
    assert out.key == {"k": 1, "t": "topic"}
    assert out.value == "v"


def test_insert_field_offset_needs_sink_record() -> None:
    r = SourceRecord(None, None, "topic", 0, None, None, None, {"a": 1})
    with pytest.raises(DataError, match=r"InsertField\$Value.*SinkRecord"):
        configured(InsertFieldValue, offset_field="o").apply(r)
    out = configured(InsertFieldValue, topic_field="t").apply(r)
    assert out.value == {"a": 1, "t": "topic"}


def test_insert_field_required_field_with_null_is_data_error() -> None:
    t = configured(InsertFieldValue, timestamp_field="ts!")
    with pytest.raises(DataError, match=r"InsertField\$Value: .*'ts'"):
        t.apply(sink(Struct(SCHEMA).put("magic", 1), SCHEMA, timestamp=None))


def test_insert_field_tombstone_passes_and_wrong_type_fails() -> None:
    r = sink(None)
    assert configured(InsertFieldValue, topic_field="t").apply(r) is r
    with pytest.raises(DataError, match="Only Map objects"):
        configured(InsertFieldValue, topic_field="t").apply(sink("x"))
    with pytest.raises(DataError, match="Only Struct objects"):
        configured(InsertFieldValue, topic_field="t").apply(sink("x", Schema.STRING_SCHEMA))


def test_insert_field_config_type_error() -> None:
    with pytest.raises(ConfigError) as info:
        InsertFieldValue().configure({"replace.null.with.default": "maybe"})
    assert info.value.name == "replace.null.with.default"


# -- MaskField ---------------------------------------------------------------------------------

MASK_SCHEMA = (
    SchemaBuilder.struct()
    .field("int8", Schema.INT8_SCHEMA)
    .field("int64", Schema.INT64_SCHEMA)
    .field("f32", Schema.FLOAT32_SCHEMA)
    .field("bool", Schema.BOOLEAN_SCHEMA)
    .field("str", Schema.STRING_SCHEMA)
    .field("bytes", Schema.BYTES_SCHEMA)
    .field("date", Date.SCHEMA)
    .field("ts", Timestamp.SCHEMA)
    .field("dec", Decimal.schema(2))
    .field("arr", SchemaBuilder.array(Schema.INT32_SCHEMA))
    .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA))
    .field("opt", Schema.OPTIONAL_STRING_SCHEMA)
    .field("keep", Schema.STRING_SCHEMA)
    .build()
)


def mask_struct() -> Struct:
    return (
        Struct(MASK_SCHEMA)
        .put("int8", 5)
        .put("int64", 123)
        .put("f32", 1.5)
        .put("bool", True)
        .put("str", "secret")
        .put("bytes", b"\x01")
        .put("date", dt.date(2020, 5, 5))
        .put("ts", dt.datetime(2020, 5, 5, 1, tzinfo=dt.UTC))
        .put("dec", decimal.Decimal("12.34"))
        .put("arr", [1, 2])
        .put("map", {"a": "b"})
        .put("keep", "visible")
    )


def test_mask_field_with_schema_uses_empty_values() -> None:
    fields = ",".join(f.name for f in MASK_SCHEMA.fields if f.name != "keep")
    out = configured(MaskFieldValue, fields=fields).apply(sink(mask_struct(), MASK_SCHEMA))
    v = out.value
    assert out.value_schema is MASK_SCHEMA
    assert (v.get("int8"), v.get("int64"), v.get("f32"), v.get("bool")) == (0, 0, 0.0, False)
    assert (v.get("str"), v.get("bytes")) == ("", b"")
    assert v.get("date") == dt.date(1970, 1, 1)
    assert v.get("ts") == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert v.get("dec") == decimal.Decimal(0)
    assert (v.get("arr"), v.get("map")) == ([], {})
    assert v.get("opt") is None  # null stays null
    assert v.get("keep") == "visible"


def test_mask_field_schemaless() -> None:
    value = {"i": 5, "s": "x", "b": True, "l": [1], "m": {"a": 1}, "f": 2.5, "keep": "k"}
    out = configured(MaskFieldValue, fields="i,s,b,l,m,f,absent").apply(sink(value))
    assert out.value == {"i": 0, "s": "", "b": False, "l": [], "m": {}, "f": 0.0, "keep": "k"}
    assert value["i"] == 5


def test_mask_field_replacement() -> None:
    out = configured(MaskFieldValue, fields="int64,str,dec", replacement="99").apply(
        sink(mask_struct(), MASK_SCHEMA)
    )
    assert out.value.get("int64") == 99
    assert out.value.get("str") == "99"
    assert out.value.get("dec") == decimal.Decimal("99.00")
    out = configured(MaskFieldValue, fields="s,n", replacement="***").apply(
        sink({"s": "pw", "n": None})
    )
    assert out.value == {"s": "***", "n": None}


def test_mask_field_replacement_errors() -> None:
    with pytest.raises(DataError, match="Unable to convert abc"):
        configured(MaskFieldValue, fields="int64", replacement="abc").apply(
            sink(mask_struct(), MASK_SCHEMA)
        )
    with pytest.raises(DataError, match="Unable to convert 300"):
        configured(MaskFieldValue, fields="int8", replacement="300").apply(
            sink(mask_struct(), MASK_SCHEMA)
        )
    with pytest.raises(DataError, match=r"custom replacement.*bool"):
        configured(MaskFieldValue, fields="bool", replacement="x").apply(
            sink(mask_struct(), MASK_SCHEMA)
        )


def test_mask_field_struct_cannot_be_masked() -> None:
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("s", inner).build()
    value = Struct(schema).put("s", Struct(inner).put("x", 1))
    with pytest.raises(DataError, match="Cannot mask value of type STRUCT"):
        configured(MaskFieldValue, fields="s").apply(sink(value, schema))


def test_mask_field_key_and_config_errors() -> None:
    out = configured(MaskFieldKey, fields="pw").apply(
        SinkRecord("t", 0, None, {"pw": "x"}, None, {"pw": "y"}, 0)
    )
    assert (out.key, out.value) == ({"pw": ""}, {"pw": "y"})
    with pytest.raises(ConfigError) as info:
        MaskFieldValue().configure({"fields": ""})
    assert info.value.name == "fields"
    with pytest.raises(ConfigError) as info:
        MaskFieldValue().configure({"fields": "a", "replacement": " "})
    assert info.value.name == "replacement"
