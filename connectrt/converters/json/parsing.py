"""Bytes -> parsed JSON: orjson first, then a lenient parser for what orjson refuses.

Kafka's Jackson reader accepts numbers with leading zeros (``007``); orjson does not, so such
messages are parsed again with the standard library after the zeros are stripped. The exact
mode keeps non-integer numbers as ``Decimal`` (for NUMERIC decimals).
"""

from __future__ import annotations

import decimal
import json as _stdjson
import re
from typing import Any, Final

import orjson

from connectrt.errors import DataError

__all__ = ["decimal_fragment", "lenient_loads", "parse"]

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_Fragment = orjson.Fragment
_PyDecimal = decimal.Decimal

# A JSON string, or leading zeros of a number (not after a digit, '.', exponent or sign).
_LEADING_ZEROS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])(-?)0+(?=\d)')


def _strip_zeros(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else match.group(1)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard JSON token {name}")


def decimal_fragment(value: Any) -> Any:
    """orjson ``default=``: a ``Decimal`` (from an exact parse) written as its number text."""
    if isinstance(value, _PyDecimal):
        return _Fragment(str(value))
    raise TypeError


def lenient_loads(data: bytes, exact: bool) -> Any:
    """Parse JSON allowing leading zeros in numbers; ``exact`` keeps non-integers as Decimal."""
    try:
        text = data.decode("utf-8")
        text = _LEADING_ZEROS.sub(_strip_zeros, text)
        return _stdjson.loads(
            text,
            parse_float=_PyDecimal if exact else float,
            parse_constant=_reject_constant,
        )
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
