"""``Converter.from_connect_values``: a batch of one topic and schema converts exactly as
``from_connect_data`` converts each value and fails where any value would, or is declined
(None) where the converter has no batch path. (JsonConverter's batches in depth:
test_json_batch_writes.py.)"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connectrt.api.converter import Converter
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.errors import DataError

POINT = (
    SchemaBuilder.struct()
    .name("Point")
    .field("x", Schema.INT32_SCHEMA)
    .field("label", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)

# (schema, values): each batch mixes the easy values with the ones a fast path must not take.
CASES: list[tuple[Schema | None, list[Any]]] = [
    (Schema.STRING_SCHEMA, ["a", "", "é ü", 'quote " and \\ backslash', "x" * 300]),
    (Schema.OPTIONAL_STRING_SCHEMA, ["a", None, "b"]),
    (Schema.INT8_SCHEMA, [0, -128, 127]),
    (Schema.INT32_SCHEMA, [1, -(2**31), 2**31 - 1]),
    (Schema.INT64_SCHEMA, [2**63 - 1, -(2**63), 0]),
    (Schema.OPTIONAL_INT64_SCHEMA, [None, 5]),
    (Schema.FLOAT64_SCHEMA, [1.5, -0.0, 1e300]),
    (Schema.BOOLEAN_SCHEMA, [True, False]),
    (Schema.BYTES_SCHEMA, [b"\x00\x01", b""]),
    (SchemaBuilder.string().optional().default_value("dflt").build(), ["v", None]),
    (Decimal.builder(2).build(), [decimal.Decimal("1.25"), decimal.Decimal("-0.50")]),
    (Timestamp.SCHEMA, [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)]),
    (POINT, [Struct(POINT).put("x", 1).put("label", "one"), Struct(POINT).put("x", 2)]),
    (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [[1, 2], []]),
    (None, [{"a": 1}, [1, "x"], "text", 3, None]),
]

BAD: list[tuple[Schema, list[Any]]] = [
    (Schema.STRING_SCHEMA, ["a", 1]),
    (Schema.STRING_SCHEMA, ["a", None]),  # required
    (Schema.INT8_SCHEMA, [1, 128]),  # out of range: the min/max check must see it
    (Schema.INT32_SCHEMA, [1, True]),  # a bool is not an INT32 value
    (Schema.INT32_SCHEMA, [1, 2.0]),
    (Schema.FLOAT64_SCHEMA, [1.0, 3]),  # an int for a float schema, as Kafka's cast
    (Schema.BOOLEAN_SCHEMA, [True, 1]),
]


def json_converter(schemas: bool) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({"schemas.enable": str(schemas).lower()}, False)
    return conv


@pytest.mark.parametrize(("schema", "values"), CASES)
def test_json_batch_equals_value_by_value(schema: Any, values: list[Any]):
    batch = json_converter(True).from_connect_values("t", schema, values)
    one = json_converter(True)
    assert batch == [one.from_connect_data("t", schema, v) for v in values]


@pytest.mark.parametrize(("schema", "values"), BAD)
def test_json_batch_fails_where_a_value_fails(schema: Schema, values: list[Any]):
    conv = json_converter(True)
    with pytest.raises(DataError):
        conv.from_connect_data("t", schema, values[-1])
    with pytest.raises(DataError):
        conv.from_connect_values("t", schema, values)
    # The converter is still usable, and the good value still converts in a batch of its own.
    assert conv.from_connect_values("t", schema, values[:1]) == [
        conv.from_connect_data("t", schema, values[0])
    ]


@pytest.mark.parametrize(("schema", "values"), CASES)
def test_json_without_envelopes_batches_too(schema: Any, values: list[Any]):
    """Without envelopes the batch is written by one orjson call all the same."""
    batch = json_converter(False).from_connect_values("t", schema, values)
    one = json_converter(False)
    assert batch == [one.from_connect_data("t", schema, v) for v in values]


def test_json_batch_of_nothing_is_empty():
    assert json_converter(True).from_connect_values("t", Schema.STRING_SCHEMA, []) == []


def test_json_batch_follows_the_schema_it_is_given():
    """Alternating schemas between batches and single calls: each uses its own plan."""
    conv = json_converter(True)
    a = conv.from_connect_values("t", Schema.STRING_SCHEMA, ["x"])
    b = conv.from_connect_values("t", Schema.INT32_SCHEMA, [7])
    c = conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
    assert a == [b'{"schema":{"type":"string","optional":false},"payload":"x"}']
    assert b == [b'{"schema":{"type":"int32","optional":false},"payload":7}']
    assert c == a[0]


@pytest.mark.parametrize("conv", [StringConverter(), ByteArrayConverter()])
def test_the_default_declines_batches(conv: Converter):
    assert type(conv).from_connect_values is Converter.from_connect_values
    assert conv.from_connect_values("t", None, [b"a", None]) is None
