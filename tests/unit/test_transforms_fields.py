"""ReplaceField$Key/$Value, SetSchemaMetadata$Key/$Value and ValueToKey."""

from __future__ import annotations

from typing import Any

import pytest

from connectrt.api.records import SinkRecord
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connectrt.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from connectrt.transforms.value_to_key import ValueToKey

SCHEMA = (
    SchemaBuilder.struct()
    .name("Row")
    .field("dont", Schema.STRING_SCHEMA)
    .field("abc", Schema.INT32_SCHEMA)
    .field("foo", Schema.BOOLEAN_SCHEMA)
    .field("etc", SchemaBuilder.string().optional().default_value("d"))
    .build()
)


def row() -> Struct:
    return Struct(SCHEMA).put("dont", "whatever").put("abc", 42).put("foo", True)


def configured(cls: type, **config: str) -> Any:
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


def rec(value: Any, schema: Schema | None = None, key: Any = None) -> SinkRecord:
    return SinkRecord("t", 0, None, key, schema, value, 0)


# -- ReplaceField ------------------------------------------------------------------------------


def test_replace_field_schemaless_kafka_example() -> None:
    t = configured(ReplaceFieldValue, exclude="dont", renames="abc:xyz,foo:bar")
    out = t.apply(rec({"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_replace_field_with_schema() -> None:
    t = configured(ReplaceFieldValue, include="abc,foo,dont", exclude="dont", renames="abc:xyz")
    out = t.apply(rec(row(), SCHEMA))
    assert [f.name for f in out.value_schema.fields] == ["xyz", "foo"]
    assert out.value_schema.name == "Row"
    assert out.value.get("xyz") == 42
    assert out.value.get("foo") is True


def test_replace_field_replace_null_with_default() -> None:
    keep_etc = configured(ReplaceFieldValue, include="etc")
    assert keep_etc.apply(rec(row(), SCHEMA)).value.get_without_default("etc") == "d"
    no_default = configured(ReplaceFieldValue, include="etc", replace_null_with_default="false")
    assert no_default.apply(rec(row(), SCHEMA)).value.get_without_default("etc") is None


def test_replace_field_legacy_aliases() -> None:
    t = configured(ReplaceFieldValue, blacklist="a", whitelist="a,b,c")
    assert t.apply(rec({"a": 1, "b": 2, "d": 4})).value == {"b": 2}
    # the new names win when both are present
    t2 = configured(ReplaceFieldValue, blacklist="a", exclude="b")
    assert t2.apply(rec({"a": 1, "b": 2})).value == {"a": 1}


def test_replace_field_key_tombstone_and_wrong_type() -> None:
    out = configured(ReplaceFieldKey, exclude="x").apply(rec("v", key={"x": 1, "y": 2}))
    assert (out.key, out.value) == ({"y": 2}, "v")
    r = rec(None)
    assert configured(ReplaceFieldValue, exclude="x").apply(r) is r
    with pytest.raises(DataError, match="ReplaceField\\$Value"):
        configured(ReplaceFieldValue, exclude="x").apply(rec(3))


@pytest.mark.parametrize("renames", ["abc", "a:b:c", ":b", "a:"])
def test_replace_field_bad_renames(renames: str) -> None:
    with pytest.raises(ConfigError, match="Invalid rename mapping") as info:
        configured(ReplaceFieldValue, renames=renames)
    assert info.value.name == "renames"


# -- SetSchemaMetadata -------------------------------------------------------------------------


def test_set_schema_metadata_struct_value_is_rebuilt() -> None:
    t = configured(SetSchemaMetadataValue, schema_name="com.example.Row", schema_version="3")
    out = t.apply(rec(row(), SCHEMA))
    assert (out.value_schema.name, out.value_schema.version) == ("com.example.Row", 3)
    assert out.value.schema is out.value_schema
    assert out.value.get("abc") == 42
    assert out.value_schema.fields == SCHEMA.fields


def test_set_schema_metadata_only_version_keeps_name() -> None:
    out = configured(SetSchemaMetadataValue, schema_version="7").apply(rec(row(), SCHEMA))
    assert (out.value_schema.name, out.value_schema.version) == ("Row", 7)


def test_set_schema_metadata_primitive_key_and_struct_default() -> None:
    out = configured(SetSchemaMetadataKey, schema_name="K").apply(
        SinkRecord("t", 0, Schema.STRING_SCHEMA, "k", None, None, 0)
    )
    assert out.key_schema.name == "K"
    assert out.key_schema.type is Schema.STRING_SCHEMA.type
    assert out.key == "k"
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    with_default = (
        SchemaBuilder.struct()
        .field("x", Schema.INT32_SCHEMA)
        .default_value(Struct(inner).put("x", 1))
        .build()
    )
    renamed = configured(SetSchemaMetadataValue, schema_name="N").apply(
        rec(Struct(with_default).put("x", 2), with_default)
    )
    assert renamed.value_schema.default.get("x") == 1
    assert renamed.value.get("x") == 2


def test_set_schema_metadata_requires_schema_and_config() -> None:
    with pytest.raises(DataError, match="Schema required"):
        configured(SetSchemaMetadataValue, schema_name="x").apply(rec({"a": 1}))
    with pytest.raises(ConfigError, match="Neither schema name nor version"):
        configured(SetSchemaMetadataValue)
    with pytest.raises(ConfigError) as info:
        configured(SetSchemaMetadataValue, schema_version="one")
    assert info.value.name == "schema.version"


# -- ValueToKey --------------------------------------------------------------------------------


def test_value_to_key_schemaless() -> None:
    out = configured(ValueToKey, fields="a,b").apply(rec({"a": 1, "b": 2, "c": 3}, key="old"))
    assert out.key == {"a": 1, "b": 2}
    assert out.key_schema is None
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_value_to_key_with_schema() -> None:
    t = configured(ValueToKey, fields="abc,etc")
    out = t.apply(rec(row(), SCHEMA))
    assert [f.name for f in out.key_schema.fields] == ["abc", "etc"]
    assert out.key_schema.field("etc").schema == SCHEMA.field("etc").schema
    assert out.key.get("abc") == 42
    assert out.key.get_without_default("etc") == "d"
    assert t.apply(rec(row(), SCHEMA)).key_schema is out.key_schema
    plain = configured(ValueToKey, fields="etc", replace_null_with_default="false")
    assert plain.apply(rec(row(), SCHEMA)).key.get_without_default("etc") is None


def test_value_to_key_errors() -> None:
    with pytest.raises(DataError, match="Field does not exist: nope"):
        configured(ValueToKey, fields="nope").apply(rec(row(), SCHEMA))
    with pytest.raises(DataError, match="Only Map objects"):
        configured(ValueToKey, fields="a").apply(rec(None))
    with pytest.raises(ConfigError, match="duplicated") as info:
        configured(ValueToKey, fields="a,a")
    assert info.value.name == "fields"
    with pytest.raises(ConfigError) as info:
        configured(ValueToKey, fields="")
    assert info.value.name == "fields"
