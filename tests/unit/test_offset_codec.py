from __future__ import annotations

import base64
from collections import OrderedDict
from decimal import Decimal

import pytest

from connectrt.errors import DataError
from connectrt.storage.offset_codec import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    validate_offset_map,
)


def test_key_is_byte_exact_kafka_connect_format() -> None:
    key = encode_key("local-file-source", {"filename": "test.txt"})
    assert key == b'["local-file-source",{"filename":"test.txt"}]'


def test_key_keeps_partition_insertion_order() -> None:
    a = encode_key("jdbc", OrderedDict([("table", "t"), ("schema", "s")]))
    b = encode_key("jdbc", {"schema": "s", "table": "t"})
    assert a == b'["jdbc",{"table":"t","schema":"s"}]'
    assert b == b'["jdbc",{"schema":"s","table":"t"}]'


def test_key_escapes_like_json() -> None:
    assert encode_key('a"b', {"f": "ü\n"}) == '["a\\"b",{"f":"ü\\n"}]'.encode()


def test_value_is_compact_json() -> None:
    assert encode_value({"position": 30}) == b'{"position":30}'
    assert encode_value({"a": 1.5, "b": True, "c": None, "d": "x"}) == (
        b'{"a":1.5,"b":true,"c":null,"d":"x"}'
    )


def test_none_value_is_a_tombstone() -> None:
    assert encode_value(None) is None
    assert decode_value(None) is None
    assert decode_value(b"null") is None


def test_bytes_values_are_base64_strings() -> None:
    encoded = encode_value({"b": b"\x00\xff"})
    assert encoded == b'{"b":"' + base64.b64encode(b"\x00\xff") + b'"}'


def test_round_trip() -> None:
    key = encode_key("c", {"p": 1, "q": "x"})
    assert decode_key(key) == ("c", {"p": 1, "q": "x"})
    assert decode_value(encode_value({"o": 42})) == {"o": 42}


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"{}",
        b'"c"',
        b"[]",
        b'["c"]',
        b'["c",{},{}]',
        b'[1,{"p":1}]',
        b'["c",[1]]',
        b'["c",null]',
        b"null",
        b'["c",{"p":1}',
    ],
)
def test_garbage_keys_are_ignored(garbage: bytes) -> None:
    assert decode_key(garbage) is None


def test_none_key_is_ignored() -> None:
    assert decode_key(None) is None


@pytest.mark.parametrize("bad", [b"nope", b"[1,2]", b'"s"', b"42"])
def test_bad_values_raise_data_error(bad: bytes) -> None:
    with pytest.raises(DataError):
        decode_value(bad)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [({"nested": 1}, "MAP"), ([1, 2], "ARRAY"), ((1,), "ARRAY"), (Decimal("1.5"), "Decimal")],
)
def test_non_primitive_offset_values_are_rejected(value: object, type_name: str) -> None:
    with pytest.raises(DataError) as info:
        encode_value({"x": value})
    assert str(info.value) == (
        f"Offsets may only contain primitive types as values, but field 'x' contains {type_name}"
    )


def test_non_primitive_partition_values_are_rejected() -> None:
    with pytest.raises(DataError, match="Partitions may only contain primitive types"):
        encode_key("c", {"p": {"nested": True}})


def test_non_string_keys_are_rejected() -> None:
    with pytest.raises(DataError, match="String keys"):
        validate_offset_map("Offsets", {1: "x"})


def test_out_of_range_ints_are_rejected() -> None:
    with pytest.raises(DataError, match="64-bit"):
        encode_value({"x": 2**63})
    assert encode_value({"x": 2**63 - 1}) == b'{"x":9223372036854775807}'


def test_none_map_is_valid() -> None:
    validate_offset_map("Offsets", None)
