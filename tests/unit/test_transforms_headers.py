"""DropHeaders, HeaderFrom$Key/$Value and InsertHeader."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.headers import (
    DropHeaders,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
    parse_literal,
)

SCHEMA = (
    SchemaBuilder.struct()
    .name("V")
    .field("a", Schema.INT32_SCHEMA)
    .field("b", SchemaBuilder.string().optional().default_value("dflt"))
    .field("c", Schema.STRING_SCHEMA)
    .build()
)


def configured(cls: type, **config: str) -> Any:
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in config.items()})
    return t


def rec(value: Any, schema: Schema | None = None, headers: list[Header] | None = None) -> Any:
    return SinkRecord("t", 0, None, None, schema, value, 1, headers=headers)


# -- DropHeaders -------------------------------------------------------------------------------


def test_drop_headers_removes_all_named() -> None:
    r = rec(1, headers=[Header("a", 1), Header("b", 2), Header("a", 3), Header("c", 4)])
    out = configured(DropHeaders, headers="a,c").apply(r)
    assert out.headers == [Header("b", 2)]
    assert len(r.headers) == 4  # the input record is untouched


def test_drop_headers_without_matches_returns_record() -> None:
    r = rec(1, headers=[Header("x", 1)])
    assert configured(DropHeaders, headers="a").apply(r) is r
    r2 = rec(1)
    assert configured(DropHeaders, headers="a").apply(r2) is r2


def test_drop_headers_requires_non_empty_list() -> None:
    for config in ({}, {"headers": ""}):
        with pytest.raises(ConfigError) as info:
            DropHeaders().configure(config)
        assert info.value.name == "headers"


# -- HeaderFrom --------------------------------------------------------------------------------


def test_header_from_copy_with_schema() -> None:
    value = Struct(SCHEMA).put("a", 1).put("c", "x")
    t = configured(HeaderFromValue, fields="a,b", headers="h_a,h_b", operation="copy")
    out = t.apply(rec(value, SCHEMA, [Header("old", 0)]))
    assert out.headers == [
        Header("old", 0),
        Header("h_a", 1, Schema.INT32_SCHEMA),
        Header("h_b", "dflt", SCHEMA.field("b").schema),
    ]
    assert out.value is value
    assert out.value_schema is SCHEMA


def test_header_from_move_with_schema() -> None:
    value = Struct(SCHEMA).put("a", 1).put("c", "x")
    t = configured(HeaderFromValue, fields="a", headers="h", operation="move")
    out = t.apply(rec(value, SCHEMA))
    assert [f.name for f in out.value_schema.fields] == ["b", "c"]
    assert out.value_schema.name == "V"
    assert out.value.get("c") == "x"
    assert out.headers == [Header("h", 1, Schema.INT32_SCHEMA)]


def test_header_from_replace_null_with_default_false() -> None:
    value = Struct(SCHEMA).put("a", 1).put("c", "x")
    t = configured(
        HeaderFromValue,
        fields="b",
        headers="h",
        operation="copy",
        replace_null_with_default="false",
    )
    assert t.apply(rec(value, SCHEMA)).headers[0].value is None


def test_header_from_schemaless_move_and_copy() -> None:
    move = configured(HeaderFromValue, fields="a,z", headers="ha,hz", operation="move")
    out = move.apply(rec({"a": 1, "b": 2}))
    assert out.value == {"b": 2}
    assert out.headers == [Header("ha", 1, None), Header("hz", None, None)]
    copy = configured(HeaderFromValue, fields="a", headers="ha", operation="copy")
    assert copy.apply(rec({"a": 1, "b": 2})).value == {"a": 1, "b": 2}


def test_header_from_key() -> None:
    t = configured(HeaderFromKey, fields="id", headers="id", operation="move")
    r = SourceRecord(None, None, "t", None, None, {"id": 5, "x": 1}, None, "v")
    out = t.apply(r)
    assert out.key == {"x": 1}
    assert out.headers == [Header("id", 5, None)]
    assert out.value == "v"


def test_header_from_unknown_field_and_wrong_type() -> None:
    value = Struct(SCHEMA).put("a", 1).put("c", "x")
    t = configured(HeaderFromValue, fields="nope", headers="h", operation="copy")
    with pytest.raises(DataError, match="HeaderFrom\\$Value: nope"):
        t.apply(rec(value, SCHEMA))
    with pytest.raises(DataError, match="Only Map objects"):
        t.apply(rec("str"))


def test_header_from_tombstone_passes_through() -> None:
    r = rec(None)
    t = configured(HeaderFromValue, fields="a", headers="h", operation="move")
    assert t.apply(r) is r


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"fields": "a,b", "headers": "h", "operation": "copy"}, "headers"),
        ({"fields": "a", "headers": "h", "operation": "rename"}, "operation"),
        ({"headers": "h", "operation": "copy"}, "fields"),
        ({"fields": "a", "headers": "h"}, "operation"),
    ],
)
def test_header_from_config_errors(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        HeaderFromValue().configure(config)
    assert info.value.name == key


# -- InsertHeader ------------------------------------------------------------------------------


def test_insert_header_appends_typed_header() -> None:
    t = configured(InsertHeader, header="n", value_literal="42")
    out = t.apply(rec(1, headers=[Header("n", "old")]))
    assert out.headers == [Header("n", "old"), Header("n", 42, Schema.INT8_SCHEMA)]
    out2 = t.apply(rec(1))
    assert out2.headers == [Header("n", 42, Schema.INT8_SCHEMA)]


@pytest.mark.parametrize(
    ("literal", "schema", "value"),
    [
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("False", Schema.BOOLEAN_SCHEMA, False),
        ("127", Schema.INT8_SCHEMA, 127),
        ("128", Schema.INT16_SCHEMA, 128),
        ("-40000", Schema.INT32_SCHEMA, -40000),
        ("3000000000", Schema.INT64_SCHEMA, 3000000000),
        ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
        ("1e300", Schema.FLOAT64_SCHEMA, 1e300),
        ("hello world", Schema.STRING_SCHEMA, "hello world"),
        ("2024-03-01", Date.SCHEMA, dt.date(2024, 3, 1)),
        ("12:30:00.250Z", Time.SCHEMA, dt.time(12, 30, 0, 250000)),
        (
            "2024-03-01T12:30:00.250Z",
            Timestamp.SCHEMA,
            dt.datetime(2024, 3, 1, 12, 30, 0, 250000, tzinfo=dt.UTC),
        ),
    ],
)
def test_parse_literal_infers_type(literal: str, schema: Schema, value: Any) -> None:
    assert parse_literal(literal) == (schema, value)


def test_parse_literal_big_integer_is_decimal() -> None:
    schema, value = parse_literal("99999999999999999999")
    assert schema == Decimal.schema(0)
    assert value == decimal.Decimal("99999999999999999999")
    assert parse_literal("null") == (None, None)


@pytest.mark.parametrize("missing", ["header", "value.literal"])
def test_insert_header_config_errors(missing: str) -> None:
    config = {"header": "h", "value.literal": "v"}
    del config[missing]
    with pytest.raises(ConfigError) as info:
        InsertHeader().configure(config)
    assert info.value.name == missing
