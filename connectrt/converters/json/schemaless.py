"""Values without a schema -> JSON-able Python, the type inferred from the value as Kafka does.

Strings, 64-bit integers, booleans and None stay as they are (Kafka infers INT64 for a
``Long``; a wider integer is a ``BigInteger``, which has no schema type, so it raises); floats
are FLOAT64, written as Java does (NaN and the infinities as Jackson's strings); maps with
string keys become objects, other maps arrays of ``[key, value]`` pairs; lists and tuples
arrays; bytes base64 text. A Struct needs a schema.
"""

from __future__ import annotations

import binascii
from typing import Any

import orjson

from connectrt.converters.json.java_text import JAVA_NON_FINITE, double_text
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["schemaless_to_json"]

_b2a = binascii.b2a_base64
_Fragment = orjson.Fragment
_INT64_SPAN = 1 << 63


def _b64(value: bytes | bytearray | memoryview) -> str:
    return _b2a(value, newline=False).decode("ascii")


def schemaless_to_json(v: Any) -> Any:
    """Convert a value without a schema to JSON-able Python, inferring the type as Kafka does."""
    t = type(v)
    if t is str or t is bool or v is None:
        return v
    if t is int:
        if -_INT64_SPAN <= v < _INT64_SPAN:
            return v
        raise DataError(
            "Java class class java.math.BigInteger does not have corresponding schema type."
        )
    if t is float:
        if 1e-3 <= v < 1e7 or -1e7 < v <= -1e-3 or v == 0.0:
            return v
        if v - v != 0.0:
            return "NaN" if v != v else JAVA_NON_FINITE[v]
        return _Fragment(double_text(v))
    if t is dict:
        if all(type(k) is str for k in v):
            return {k: schemaless_to_json(x) for k, x in v.items()}
        return [[schemaless_to_json(k), schemaless_to_json(x)] for k, x in v.items()]
    if t is list or t is tuple:
        return [schemaless_to_json(x) for x in v]
    if isinstance(v, bytes | bytearray | memoryview):
        return _b64(v)
    if isinstance(v, bool):  # pragma: no cover - bool cannot be subclassed
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return schemaless_to_json(int(v))
    if isinstance(v, float):
        return schemaless_to_json(float(v))
    if isinstance(v, dict):
        return schemaless_to_json(dict(v))
    if isinstance(v, list | tuple):
        return [schemaless_to_json(x) for x in v]
    if isinstance(v, Struct):
        raise DataError("Mismatching schema.")
    raise DataError(f"Python type {t.__name__} does not have corresponding schema type.")
