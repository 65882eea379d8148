"""ExtractField (V1/V2 paths), HoistField and Flatten, with and without schemas."""

from __future__ import annotations

from typing import Any

import pytest

from connectrt.api.records import SinkRecord, SourceRecord
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from connectrt.transforms.field_path import SingleFieldPath
from connectrt.transforms.flatten import FlattenKey, FlattenValue
from connectrt.transforms.hoist_field import HoistFieldKey, HoistFieldValue

ADDRESS = (
    SchemaBuilder.struct()
    .name("Address")
    .field("city", Schema.STRING_SCHEMA)
    .field("zip", Schema.OPTIONAL_STRING_SCHEMA)
    .optional()
    .build()
)
USER = (
    SchemaBuilder.struct()
    .name("User")
    .field("id", Schema.INT64_SCHEMA)
    .field("country", SchemaBuilder.string().optional().default_value("NL"))
    .field("address", ADDRESS)
    .build()
)


def user(address: Struct | None = None) -> Struct:
    return Struct(USER).put("id", 7).put("address", address)


def rec(value: Any, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("t", 1, Schema.STRING_SCHEMA, "k", schema, value, 3)


def configured(cls: type, **config: str) -> Any:
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


# -- ExtractField ------------------------------------------------------------------------------


def test_extract_field_with_schema() -> None:
    out = configured(ExtractFieldValue, field="id").apply(rec(user(), USER))
    assert out.value == 7
    assert out.value_schema == Schema.INT64_SCHEMA
    assert out.key == "k"


def test_extract_field_schemaless_and_missing_field_gives_null() -> None:
    t = configured(ExtractFieldValue, field="a")
    assert t.apply(rec({"a": [1, 2], "b": 2})).value == [1, 2]
    assert t.apply(rec({"b": 2})).value is None


def test_extract_field_key_variant() -> None:
    t = configured(ExtractFieldKey, field="id")
    r = SourceRecord(None, None, "t", None, None, {"id": 9}, None, "v")
    out = t.apply(r)
    assert (out.key, out.value) == (9, "v")


def test_extract_field_unknown_field_with_schema_is_data_error() -> None:
    with pytest.raises(DataError, match="ExtractField\\$Value: Unknown field: nope"):
        configured(ExtractFieldValue, field="nope").apply(rec(user(), USER))


def test_extract_field_null_value_stays_null_but_schema_updates() -> None:
    optional_user = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).optional().build()
    out = configured(ExtractFieldValue, field="id").apply(rec(None, optional_user))
    assert out.value is None
    assert out.value_schema == Schema.INT64_SCHEMA
    assert configured(ExtractFieldValue, field="id").apply(rec(None)).value is None


def test_extract_field_wrong_type() -> None:
    with pytest.raises(DataError, match="Only Map objects"):
        configured(ExtractFieldValue, field="a").apply(rec("text"))
    with pytest.raises(DataError, match="Only Struct objects"):
        configured(ExtractFieldValue, field="a").apply(rec("text", USER))


def test_extract_field_replace_null_with_default() -> None:
    assert configured(ExtractFieldValue, field="country").apply(rec(user(), USER)).value == "NL"
    t = configured(ExtractFieldValue, field="country", replace_null_with_default="false")
    assert t.apply(rec(user(), USER)).value is None


def test_extract_field_v2_nested_paths() -> None:
    t = configured(ExtractFieldValue, field="address.city", field_syntax_version="V2")
    out = t.apply(rec(user(Struct(ADDRESS).put("city", "Delft")), USER))
    assert out.value == "Delft"
    assert out.value_schema == Schema.STRING_SCHEMA
    assert t.apply(rec(user(None), USER)).value is None
    assert t.apply(rec({"address": {"city": "Ghent"}})).value == "Ghent"
    assert t.apply(rec({"address": "flat"})).value is None
    # V1 treats the dotted name as a single (top-level) field.
    v1 = configured(ExtractFieldValue, field="address.city")
    assert v1.apply(rec({"address.city": "x", "address": {"city": "y"}})).value == "x"


def test_field_path_v2_backticks() -> None:
    assert SingleFieldPath("a.`b.c`.d", "V2").steps == ["a", "b.c", "d"]
    assert SingleFieldPath("`a.b`", "V2").steps == ["a.b"]
    assert SingleFieldPath("a.", "V2").steps == ["a", ""]
    assert SingleFieldPath("a.b", "v1").steps == ["a.b"]
    with pytest.raises(ConfigError, match="Incomplete backtick"):
        SingleFieldPath("`a.b", "V2")


def test_extract_field_config_errors() -> None:
    with pytest.raises(ConfigError) as info:
        configured(ExtractFieldValue)
    assert info.value.name == "field"
    with pytest.raises(ConfigError) as info:
        configured(ExtractFieldValue, field="a", field_syntax_version="V3")
    assert info.value.name == "field.syntax.version"


# -- HoistField --------------------------------------------------------------------------------


def test_hoist_field_with_schema() -> None:
    t = configured(HoistFieldValue, field="line")
    out = t.apply(rec("hello", Schema.STRING_SCHEMA))
    assert out.value_schema.field("line").schema == Schema.STRING_SCHEMA
    assert out.value.get("line") == "hello"
    assert t.apply(rec("again", Schema.STRING_SCHEMA)).value_schema is out.value_schema


def test_hoist_field_schemaless_and_key() -> None:
    assert configured(HoistFieldValue, field="v").apply(rec(5)).value == {"v": 5}
    out = configured(HoistFieldKey, field="k").apply(rec(5))
    assert out.key_schema.field("k").schema == Schema.STRING_SCHEMA
    assert out.key.get("k") == "k"
    assert out.value == 5


def test_hoist_field_null_into_required_schema_is_data_error() -> None:
    with pytest.raises(DataError, match=r"HoistField\$Value: .*'v'"):
        configured(HoistFieldValue, field="v").apply(rec(None, Schema.STRING_SCHEMA))


def test_hoist_field_requires_field() -> None:
    with pytest.raises(ConfigError) as info:
        configured(HoistFieldValue, field="")
    assert info.value.name == "field"


# -- Flatten -----------------------------------------------------------------------------------


def test_flatten_schemaless_nested_maps() -> None:
    value = {"a": {"b": {"c": 1}, "d": [1, {"x": 1}]}, "e": None, "f": b"x"}
    out = configured(FlattenValue).apply(rec(value))
    assert out.value == {"a.b.c": 1, "a.d": [1, {"x": 1}], "e": None, "f": b"x"}


def test_flatten_custom_delimiter_and_key() -> None:
    out = configured(FlattenKey, delimiter="_").apply(
        SourceRecord(None, None, "t", None, None, {"a": {"b": 1}}, None, {"a": {"b": 2}})
    )
    assert out.key == {"a_b": 1}
    assert out.value == {"a": {"b": 2}}


def test_flatten_with_schema() -> None:
    out = configured(FlattenValue).apply(rec(user(Struct(ADDRESS).put("city", "Delft")), USER))
    s = out.value_schema
    assert [f.name for f in s.fields] == ["id", "country", "address.city", "address.zip"]
    assert s.name == "User"
    # Fields nested in an optional struct become optional.
    assert s.field("address.city").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert s.field("country").schema.default == "NL"
    assert out.value.get("address.city") == "Delft"
    assert out.value.get("id") == 7


def test_flatten_with_schema_null_nested_struct() -> None:
    out = configured(FlattenValue).apply(rec(user(None), USER))
    assert out.value.get("address.city") is None
    assert out.value.get("id") == 7


def test_flatten_struct_default_propagates() -> None:
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    inner_default = Struct(inner).put("x", 42)
    schema = (
        SchemaBuilder.struct()
        .field(
            "in",
            SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).default_value(inner_default),
        )
        .build()
    )
    out_schema = configured(FlattenValue)._updated_schema(schema)
    assert out_schema.field("in.x").schema.default == 42


def test_flatten_with_schema_rejects_map_fields() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("m", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA))
        .build()
    )
    with pytest.raises(DataError, match=r"does not support MAP.*field m"):
        configured(FlattenValue).apply(rec(Struct(schema).put("m", {}), schema))


def test_flatten_tombstone_and_wrong_types() -> None:
    r = rec(None)
    assert configured(FlattenValue).apply(r) is r
    with pytest.raises(DataError, match="Only Map objects"):
        configured(FlattenValue).apply(rec(42))
    with pytest.raises(DataError, match="does not support object"):
        configured(FlattenValue).apply(rec({"a": object()}))
