"""Connect values -> header text: Kafka's ``Values.convertToString``.

The form follows the Python type: numbers, booleans and ``null`` as Java prints them, strings
as they are (double-quoted and escaped inside lists and maps), bytes as base64, lists as
``[e1,e2]``, maps and Structs as ``{k1:v1,k2:v2}``, dates and times in ISO-8601 UTC.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from collections.abc import Mapping
from typing import Any

from connectrt.data.logical import Time
from connectrt.data.schema import Schema
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["convert_to_string"]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _format_time_ms(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


def _format_date(value: dt.date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _format_timestamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    ms = value.hour * 3_600_000 + value.minute * 60_000 + value.second * 1000
    return f"{_format_date(value)}T{_format_time_ms(ms + value.microsecond // 1000)}"


def _append(out: list[str], value: Any, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(_format_float(value))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _append(out, element, True)
        out.append("]")
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, k, True)
            out.append(":")
            _append(out, v, True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, f in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, f.name, True)
            out.append(":")
            _append(out, value.get(f.name), True)
        out.append("}")
    elif isinstance(value, dt.datetime):
        out.append(_format_timestamp(value))
    elif isinstance(value, dt.date):
        out.append(_format_date(value))
    elif isinstance(value, dt.time):
        out.append(_format_time_ms(Time.from_logical(None, value)))
    else:
        raise DataError(
            f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}"
        )


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """Kafka's ``Values.convertToString``: the text form of a Connect value (None for None).

    ``schema`` is accepted for symmetry with Kafka and not needed: the form follows the
    Python type. Raises DataError for values that are not Connect values.
    """
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, False)
    return "".join(out)
