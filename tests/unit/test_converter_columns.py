"""``Converter.to_connect_columns``: a batch converted at once is the batch converted one by one.

The sink runtime converts a batch's keys and values with one ``to_connect_columns`` call and
falls back to ``to_connect_data`` per message when it raises; so for any batch, the columns
must equal the per-message results, and a batch with a malformed message must raise.
"""

from __future__ import annotations

import decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectrt.api import ConnectColumns, Converter
from connectrt.converters import ByteArrayConverter, JsonConverter, StringConverter
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct
from connectrt.errors import DataError

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)


def _one_by_one(converter: Converter, data: list[bytes | None]) -> tuple[list[Any], list[Any]]:
    pairs = [converter.to_connect_data("t", d) for d in data]
    return [p.schema for p in pairs], [p.value for p in pairs]


def _assert_same(converter: Converter, data: list[bytes | None]) -> None:
    expected = _one_by_one(converter, data)
    columns = converter.to_connect_columns("t", data)
    assert isinstance(columns, ConnectColumns)
    assert list(columns.schemas) == expected[0]
    assert list(columns.values) == expected[1]


def _json(schemas: bool) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": str(schemas).lower()}, is_key=False)
    return converter


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), json_values), max_size=20), st.data())
def test_plain_json(values: list[Any], data: Any) -> None:
    writer = _json(False)
    encoded: list[bytes | None] = [writer.from_connect_data("t", None, v) for v in values]
    if encoded and data.draw(st.booleans()):
        encoded[data.draw(st.integers(0, len(encoded) - 1))] = b'{"n": 007}'  # Jackson reads it
    _assert_same(_json(False), encoded)


_SCHEMA_A = (
    SchemaBuilder.struct()
    .name("a")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.OPTIONAL_STRING_SCHEMA)
    .field("price", Decimal.builder(2).optional().build())
    .build()
)
_SCHEMA_B = SchemaBuilder.struct().name("b").field("flag", Schema.BOOLEAN_SCHEMA).build()


def _struct_a(i: int, name: str | None) -> Struct:
    return (
        Struct(_SCHEMA_A).put("id", i).put("name", name).put("price", decimal.Decimal(i).scaleb(-2))
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.one_of(st.none(), st.text(max_size=6))),
             max_size=20),
    st.sampled_from(["base64", "numeric"]),
    st.sampled_from(["", "schema change", "null"]),
)  # fmt: skip
def test_json_envelopes(rows: list[Any], decimals: str, twist: str) -> None:
    writer = JsonConverter()
    writer.configure({"decimal.format": decimals.upper()}, is_key=False)
    encoded: list[bytes | None] = [
        writer.from_connect_data("t", _SCHEMA_A, _struct_a(i, n)) for i, n in rows
    ]
    if encoded and twist == "schema change":
        encoded[len(encoded) // 2] = writer.from_connect_data(
            "t", _SCHEMA_B, Struct(_SCHEMA_B).put("flag", True)
        )
    elif encoded and twist == "null":
        encoded[-1] = None
    reader = _json(True)
    _assert_same(reader, encoded)  # the first batch sees the schema for the first time
    _assert_same(reader, encoded)  # the next one knows it


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA, Schema.BOOLEAN_SCHEMA]),
    st.lists(st.one_of(st.text(max_size=8), st.booleans(), st.none()), min_size=1, max_size=12),
    st.sampled_from(["", "a payload of another type", "bytearray", "a null message"]),
)
def test_envelopes_of_one_primitive_schema(schema: Schema, raw: list[Any], twist: str) -> None:
    """STRING and BOOLEAN batches skip the decoder when every payload has its type (the
    envelopes checked and cut by framed_slices): the same columns and errors as one by one."""
    kind = bool if schema.type.name == "BOOLEAN" else str
    values = [v for v in raw if type(v) is kind or (v is None and schema.optional)] or [kind()]
    writer = _json(True)
    encoded: list[Any] = [writer.from_connect_data("t", schema, v) for v in values]
    if twist == "a payload of another type":
        encoded[len(encoded) // 2] = encoded[0][: encoded[0].index(b'"payload":') + 10] + b"7}"
    elif twist == "bytearray":
        encoded[-1] = bytearray(encoded[-1])
    elif twist == "a null message":
        encoded[0] = None
    reader = _json(True)
    for _ in range(2):  # the schema first seen, then known
        try:
            expected: Any = _one_by_one(reader, encoded)
        except DataError:
            with pytest.raises(DataError):
                reader.to_connect_columns("t", encoded)
            continue
        columns = reader.to_connect_columns("t", encoded)
        assert (list(columns.schemas), list(columns.values)) == (
            list(expected[0]),
            list(expected[1]),
        )
        assert [type(v) for v in columns.values] == [type(v) for v in expected[1]]


_MALFORMED = [b"{not json", b"[1,", b'1, "two"']


@pytest.mark.parametrize(
    ("schemas", "bad"),
    [(False, bad) for bad in _MALFORMED]
    + [
        (True, bad)
        for bad in [*_MALFORMED, b'{"a": 1} {"b": 2}', b'{"schema": null}', b'{"payload": 1}']
    ],
)
def test_a_malformed_message_fails_the_batch(schemas: bool, bad: bytes) -> None:
    writer = _json(schemas)
    good = [writer.from_connect_data("t", Schema.INT32_SCHEMA, i) for i in range(3)]
    converter = _json(schemas)
    converter.to_connect_columns("t", good)
    with pytest.raises(DataError):
        converter.to_connect_columns("t", [*good, bad, *good])


def test_messages_cannot_combine_into_a_valid_batch() -> None:
    """Pieces that would parse if the batch were joined into one document still fail."""
    with pytest.raises(DataError):
        _json(False).to_connect_columns("t", [b'"', b'"', b"1],[2"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=20))
def test_string_and_bytes(data: list[bytes | None]) -> None:
    for converter in (StringConverter(), ByteArrayConverter()):
        _assert_same(converter, data)
    latin = StringConverter()
    latin.configure({"converter.encoding": "latin-1"})
    _assert_same(latin, data)


class UpperConverter(Converter):
    """A third-party converter without a batch path: the default converts one by one."""

    def configure(self, config: Any, is_key: bool) -> None:
        pass

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> Any:
        return value.encode()

    def to_connect_data(self, topic: str, data: Any, headers: Any = None) -> Any:
        from connectrt.api import SchemaAndValue

        if data == b"boom":
            raise DataError("boom")
        return SchemaAndValue(Schema.STRING_SCHEMA, data.decode().upper())


def test_the_default_converts_one_by_one() -> None:
    columns = UpperConverter().to_connect_columns("t", [b"a", b"b"])
    assert list(columns.values) == ["A", "B"]
    assert list(columns.schemas) == [Schema.STRING_SCHEMA] * 2
    with pytest.raises(DataError, match="boom"):
        UpperConverter().to_connect_columns("t", [b"a", b"boom"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20).map(str.encode)))
def test_header_converters_flagged_never_failing_never_fail(data: bytes | None) -> None:
    """READ_NEVER_FAILS lets the sink runtime convert headers lazily, inside put(): only a
    header converter that cannot raise may say so."""
    flagged = [SimpleHeaderConverter(), StringConverter(), ByteArrayConverter()]
    for converter in flagged:
        assert converter.READ_NEVER_FAILS
        converter.to_connect_header("t", "h", data)
    assert not JsonConverter.READ_NEVER_FAILS  # b"{oops" raises: converted before put()
    with pytest.raises(DataError):
        _json(False).to_connect_header("t", "h", b"{oops")


class _CountingJson(JsonConverter):
    """A JsonConverter that counts its per-message conversions."""

    calls = 0

    def to_connect_data(self, topic: str, data: Any, headers: Any = None) -> Any:
        self.calls += 1
        return super().to_connect_data(topic, data, headers)


def _counting(schemas: bool) -> _CountingJson:
    converter = _CountingJson()
    converter.configure({"schemas.enable": str(schemas).lower()}, is_key=True)
    return converter


@pytest.mark.parametrize("schemas", [True, False])
def test_a_batch_of_null_keys_is_converted_without_a_call_per_message(schemas: bool) -> None:
    """The keys of a keyless topic under the deploy defaults (JsonConverter keys)."""
    converter = _counting(schemas)
    columns = converter.to_connect_columns("t", (None,) * 500)
    assert list(columns.schemas) == [None] * 500 and list(columns.values) == [None] * 500
    assert converter.calls == 0


@pytest.mark.parametrize("schemas", [True, False])
def test_the_messages_beside_nulls_are_converted_as_a_batch(schemas: bool) -> None:
    writer = _json(schemas)
    data: list[bytes | None] = [writer.from_connect_data("t", Schema.INT64_SCHEMA, 7)] * 3
    converter = _counting(schemas)
    converter.to_connect_columns("t", data)  # an envelope reader learns the schema here
    converter.calls = 0
    mixed = [None, data[0], None, data[1], data[2], None]
    _assert_same(_json(schemas), mixed)
    columns = converter.to_connect_columns("t", mixed)
    assert list(columns.values) == [None, 7, None, 7, 7, None]
    assert converter.calls == 0


def test_plain_json_is_checked_for_kafka_numbers_once_per_batch() -> None:
    """Wide integers and negative zeros, which Kafka reads differently, are found in a batch
    (and converted as to_connect_data does); a batch without them takes no call each."""
    plain = [b'{"a": 1}', b"[2, 3]", b'"x"'] * 10
    converter = _counting(False)
    converter.to_connect_columns("t", plain)
    assert converter.calls == 0
    for odd in (b'{"n": 123456789012345678901234}', b"-0", b"[1, -0.0]", b"-0e5"):
        _assert_same(_json(False), [*plain, odd, *plain])
        converter.calls = 0
        converter.to_connect_columns("t", [*plain, odd])
        assert converter.calls == len(plain) + 1  # message by message, as before
    # 20 digits in the batch but no message with 19 in a row: still the fast path
    converter.calls = 0
    converter.to_connect_columns("t", [b"1234567890", b"1234567890"])
    assert converter.calls == 0
