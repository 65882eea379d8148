"""Protobuf wire-format pieces for OTLP messages: varints, length-delimited fields, ``AnyValue``
and repeated ``KeyValue`` attributes, written as bytes without the protobuf package.

Used by :mod:`connectrt.runtime.tracing.otlp_encoding`, which builds whole span messages from
them. Pure functions; the attribute cache is shared by the one exporter thread that uses it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

__all__ = ["CACHE_MAX", "encode_attributes", "length_delimited", "varint"]

_pack_double = struct.Struct("<d").pack


def varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def length_delimited(tag: bytes, data: bytes) -> bytes:
    """A length-delimited field: its tag byte(s), the length, the data."""
    return tag + varint(len(data)) + data


def _value(value: Any) -> bytes:
    """An ``AnyValue`` message."""
    if isinstance(value, bool):
        return b"\x10" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, list | tuple):
        values = b"".join(length_delimited(b"\x0a", _value(v)) for v in value)
        # array_value: ArrayValue{repeated AnyValue values = 1}
        return length_delimited(b"\x2a", values)
    return length_delimited(b"\x0a", str(value).encode())


_cache: dict[tuple[bytes, str, Any], bytes] = {}
CACHE_MAX = 4096


def encode_attributes(attributes: Mapping[str, Any], tag: bytes = b"\x4a") -> bytes:
    """Repeated ``KeyValue`` fields (``tag``: the field's tag; 9, a span's, by default).
    Encoded pairs are kept (up to :data:`CACHE_MAX`): the connector, task and topic recur."""
    parts = []
    for key, value in attributes.items():
        cached = (tag, key, value)
        try:
            encoded = _cache.get(cached)
        except TypeError:  # a list value
            encoded, cached = None, None  # type: ignore[assignment]
        if encoded is None:
            name = length_delimited(b"\x0a", key.encode())
            pair = name + length_delimited(b"\x12", _value(value))
            encoded = length_delimited(tag, pair)
            if cached is not None:
                if len(_cache) >= CACHE_MAX:
                    _cache.clear()
                _cache[cached] = encoded
        parts.append(encoded)
    return b"".join(parts)
