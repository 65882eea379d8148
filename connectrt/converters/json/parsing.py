"""Bytes -> parsed JSON: orjson first, then a lenient parser for what orjson refuses.

Kafka's Jackson reader accepts what orjson does not: numbers with leading zeros (``007``),
anything after a complete top-level object, array or string (a number or literal must be
followed by whitespace, a literal by no letter or digit), and empty input (Jackson's "missing"
node, read as null). Such messages are parsed again with the standard library. The exact mode
keeps non-integer numbers as ``Decimal`` (for NUMERIC decimals).

Without a schema Kafka reads every integer as INT64 (a wider one wraps to its low 64 bits) and
every other number as a ``BigDecimal``'s double (so -0.0 is 0.0): :func:`parse_schemaless`
gives the same, re-reading a message exactly only when its bytes hold a run of 19 digits or a
negative zero.
"""

from __future__ import annotations

import decimal
import json as _stdjson
import re
from typing import Any, Final

import orjson

from connectrt.errors import DataError

__all__ = [
    "decimal_fragment",
    "kafka_schemaless",
    "lenient_loads",
    "parse",
    "parse_schemaless",
    "schemaless_suspect",
]

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_Fragment = orjson.Fragment
_PyDecimal = decimal.Decimal

# A JSON string, or leading zeros of a number (not after a digit, '.', exponent or sign).
_LEADING_ZEROS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])(-?)0+(?=\d)')


def _strip_zeros(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else match.group(1)


#: A negative zero where a JSON value starts (after ``[``, ``:``, ``,``, whitespace or nothing).
NEGATIVE_ZERO: Final = re.compile(rb"(?<![^\[:,\s])-0+(?:\.0*)?(?:[eE][-+]?[0-9]+)?(?![0-9.eE])")
_JSON_SPACE: Final = " \t\n\r"
_INT64_HALF: Final = 1 << 63


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard JSON token {name}")


def decimal_fragment(value: Any) -> Any:
    """orjson ``default=``: a ``Decimal`` (from an exact parse) written as its number text."""
    if isinstance(value, _PyDecimal):
        return _Fragment(str(value))
    raise TypeError


def lenient_loads(data: bytes, exact: bool) -> Any:
    """Parse the first JSON value of ``data`` as Jackson does: leading zeros in numbers
    allowed, trailing bytes ignored after an object, array or string, None for empty input.
    ``exact`` keeps non-integers as Decimal."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff").lstrip(_JSON_SPACE)  # BOM: Jackson's
        if not text:
            return None  # Jackson's MissingNode
        text = _LEADING_ZEROS.sub(_strip_zeros, text)
        decoder = _stdjson.JSONDecoder(
            parse_float=_PyDecimal if exact else float, parse_constant=_reject_constant
        )
        value, end = decoder.raw_decode(text)
        if end < len(text) and text[0] not in '{["':
            nxt = text[end]
            if text[0] in "tfn" and not (nxt.isalnum() or nxt in "_$"):
                return value  # a literal ends at any non-identifier character
            if nxt not in _JSON_SPACE:
                raise ValueError(f"Unexpected character {nxt!r} after a top-level value")
        return value
    except (ValueError, RecursionError) as exc:
        raise DataError(
            f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
        ) from exc


def parse(data: bytes) -> Any:
    """Parse JSON with orjson, falling back to :func:`lenient_loads` where it fails."""
    try:
        return _loads(data)
    except _JSONDecodeError:
        return lenient_loads(data, exact=False)


def kafka_schemaless(value: Any) -> Any:
    """A parsed schemaless value as Kafka reads it: integers wrapped to 64 bits, -0.0 as 0.0."""
    t = type(value)
    if t is int:
        return ((value + _INT64_HALF) & ((_INT64_HALF << 1) - 1)) - _INT64_HALF
    if t is float:
        return value + 0.0
    if t is list:
        return [kafka_schemaless(x) for x in value]
    if t is dict:
        return {k: kafka_schemaless(x) for k, x in value.items()}
    return value


_DIGITS_TO_ZERO: Final = bytes(0x30 if 0x30 <= b <= 0x39 else b for b in range(256))
_NINETEEN_DIGITS: Final = b"0" * 19


def schemaless_suspect(data: bytes) -> bool:
    """Whether ``data`` may hold an integer beyond 64 bits or a negative zero (C-level tests:
    ``-0`` before the pattern, 19 digits in all before a 19-digit run)."""
    if b"-0" in data and NEGATIVE_ZERO.search(data) is not None:
        return True
    if len(data) - len(data.translate(None, b"0123456789")) < 19:  # fewer digits in all
        return False
    return _NINETEEN_DIGITS in data.translate(_DIGITS_TO_ZERO)


def parse_schemaless(data: bytes) -> Any:
    """:func:`parse`, with Kafka's reading of wide integers and negative zeros."""
    if not schemaless_suspect(data):
        return parse(data)
    return kafka_schemaless(lenient_loads(data, exact=False))
