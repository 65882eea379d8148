"""StringConverter, ByteArrayConverter and SimpleHeaderConverter."""

from __future__ import annotations

import pytest

from connectrt.api.converter import Converter, HeaderConverter, SchemaAndValue
from connectrt.converters import ByteArrayConverter, SimpleHeaderConverter, StringConverter
from connectrt.data import Schema
from connectrt.errors import ConfigError, DataError

T = "topic"


# -- StringConverter --------------------------------------------------------------------------


def test_string_converter_round_trip() -> None:
    c = StringConverter()
    c.configure({}, False)
    assert isinstance(c, Converter) and isinstance(c, HeaderConverter)
    assert c.from_connect_data(T, Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert c.to_connect_data(T, "héllo".encode()) == SchemaAndValue(
        Schema.OPTIONAL_STRING_SCHEMA, "héllo"
    )


def test_string_converter_stringifies_any_value() -> None:
    c = StringConverter()
    assert c.from_connect_data(T, None, 42) == b"42"
    assert c.from_connect_data(T, None, 1.5) == b"1.5"
    assert c.from_connect_data(T, None, True) == b"true"
    assert c.from_connect_data(T, None, False) == b"false"


def test_string_converter_nulls() -> None:
    c = StringConverter()
    assert c.from_connect_data(T, None, None) is None
    assert c.to_connect_data(T, None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)


def test_string_converter_encoding() -> None:
    c = StringConverter()
    c.configure({"converter.encoding": "UTF-16"}, True)
    data = c.from_connect_data(T, None, "ab")
    assert data == "ab".encode("utf-16")
    assert c.to_connect_data(T, data).value == "ab"
    latin = StringConverter()
    latin.configure({"serializer.encoding": "latin-1", "deserializer.encoding": "utf-8"}, False)
    assert latin.from_connect_data(T, None, "é") == b"\xe9"
    assert latin.to_connect_data(T, b"\xc3\xa9").value == "é"


def test_string_converter_bad_encoding_and_unencodable() -> None:
    with pytest.raises(ConfigError) as info:
        StringConverter().configure({"converter.encoding": "no-such-codec"}, False)
    assert info.value.name == "converter.encoding"
    ascii_conv = StringConverter()
    ascii_conv.configure({"converter.encoding": "ascii"}, False)
    with pytest.raises(DataError, match="ascii"):
        ascii_conv.from_connect_data(T, None, "é")


def test_string_converter_malformed_input_is_replaced() -> None:
    assert StringConverter().to_connect_data(T, b"a\xffb").value == "a\ufffdb"


def test_string_converter_headers() -> None:
    c = StringConverter()
    assert c.from_connect_header(T, "h", None, "v") == b"v"
    assert c.to_connect_header(T, "h", b"v") == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "v")


def test_string_converter_config_keys() -> None:
    assert StringConverter.config_def()["converter.encoding"][1] == "UTF-8"


# -- ByteArrayConverter -----------------------------------------------------------------------


def test_bytearray_passthrough() -> None:
    c = ByteArrayConverter()
    c.configure({}, False)
    assert c.from_connect_data(T, Schema.BYTES_SCHEMA, b"\x00\x01") == b"\x00\x01"
    assert c.from_connect_data(T, None, bytearray(b"ab")) == b"ab"
    assert c.from_connect_data(T, Schema.OPTIONAL_BYTES_SCHEMA, memoryview(b"cd")) == b"cd"
    assert c.from_connect_data(T, None, None) is None
    assert c.to_connect_data(T, b"\x00") == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b"\x00")
    assert c.to_connect_data(T, None) == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None)


def test_bytearray_rejects_wrong_schema_and_values() -> None:
    c = ByteArrayConverter()
    with pytest.raises(DataError, match="Invalid schema type for ByteArrayConverter: STRING"):
        c.from_connect_data(T, Schema.STRING_SCHEMA, b"x")
    with pytest.raises(DataError, match="not compatible with objects of type str"):
        c.from_connect_data(T, None, "x")


def test_bytearray_headers() -> None:
    c = ByteArrayConverter()
    assert c.from_connect_header(T, "h", None, b"v") == b"v"
    assert c.to_connect_header(T, "h", b"v").value == b"v"


# -- SimpleHeaderConverter --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    # Kafka's Values.convertToString: bytes are base64, scalars their text.
    [("abc", b"abc"), (b"\x01", b"AQ=="), (True, b"true"), (12, b"12"), (1.5, b"1.5")],
)
def test_simple_header_writes_text(value: object, expected: bytes) -> None:
    c = SimpleHeaderConverter()
    c.configure({})
    assert c.from_connect_header(T, "h", None, value) == expected


def test_simple_header_infers_types_on_read() -> None:
    c = SimpleHeaderConverter()
    assert c.to_connect_header(T, "h", b"42") == SchemaAndValue(Schema.INT8_SCHEMA, 42)
    assert c.to_connect_header(T, "h", b"forty") == SchemaAndValue(Schema.STRING_SCHEMA, "forty")
    assert c.to_connect_header(T, "h", None) == SchemaAndValue(None, None)
    assert c.from_connect_header(T, "h", None, None) is None


def test_simple_header_writes_maps_as_text() -> None:
    assert SimpleHeaderConverter().from_connect_header(T, "h", None, {"a": 1}) == b'{"a":1}'
