"""How the file sink writes a record value as text: as a person reads Kafka Connect's output.

* a string as it is; bytes decoded as UTF-8 (malformed bytes become U+FFFD);
* null as ``null``; a boolean as ``true``/``false``; a number as its decimal text, a
  ``Decimal`` as its plain string (``1.25``, ``1000``: never an exponent);
* a timestamp, date or time as ISO-8601 (``2024-05-01T12:30:00.250000+00:00``,
  ``2024-05-01``, ``12:30:00``);
* a struct, map or array as JSON (with orjson): struct fields by name, decimals as JSON
  numbers, timestamps/dates/times as ISO-8601 strings, bytes as base64 strings;
* anything else with ``str()``.

Pure functions, safe from any thread.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from typing import Any

import orjson

from connectrt.data import Struct

__all__ = ["value_text"]

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def _plain(value: decimal.Decimal) -> str:
    return format(value, "f") if value.is_finite() else str(value)


def _json_default(value: Any) -> Any:
    """orjson's fallback for what it does not write itself."""
    if isinstance(value, Struct):
        return {field.name: value.get(field) for field in value.schema.fields}
    if isinstance(value, decimal.Decimal):
        return orjson.Fragment(_plain(value)) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, default=_json_default, option=_JSON_OPTIONS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def value_text(value: Any) -> str:
    """One value as the file sink writes it (see the module docstring)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return _plain(value)
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Struct | dict | list | tuple):
        return _json(value)
    return str(value)
