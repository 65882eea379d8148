"""Header text -> a single Connect value with its inferred schema: numbers, dates and times.

Kafka's ``Values`` inference for one token: whole numbers take the smallest integer type that
holds them, other numbers FLOAT32, FLOAT64 or a Decimal with the text's scale; ISO-8601
``yyyy-MM-dd``, ``HH:mm:ss.SSSZ`` and ``yyyy-MM-ddTHH:mm:ss.SSSZ`` are Date, Time and
Timestamp.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from typing import Final

from connectrt.api.converter import SchemaAndValue
from connectrt.data.logical import Date, Time, Timestamp
from connectrt.data.logical import Decimal as DecimalType
from connectrt.data.schema import Schema

__all__ = ["FALSE", "NULL", "TEMPORAL_PREFIX", "TRUE", "parse_scalar", "parse_temporal"]

NULL: Final = SchemaAndValue(None, None)
TRUE: Final = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
FALSE: Final = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)

_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_TIMESTAMP: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T" + _TIME.pattern)
TEMPORAL_PREFIX: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
)
"""A Time or Timestamp at the start of the text (they contain ':', a delimiter in lists)."""

_BIGGER_THAN_LONG: Final = decimal.Decimal("1e19")
_INT_SCHEMAS: Final = (
    (Schema.INT8_SCHEMA, 2**7),
    (Schema.INT16_SCHEMA, 2**15),
    (Schema.INT32_SCHEMA, 2**31),
    (Schema.INT64_SCHEMA, 2**63),
)


def parse_temporal(token: str) -> SchemaAndValue | None:
    """Date, Time or Timestamp for exactly Kafka's ISO-8601 forms, else None."""
    try:
        if m := _DATE.fullmatch(token):
            y, mo, d = (int(g) for g in m.groups())
            return SchemaAndValue(Date.SCHEMA, dt.date(y, mo, d))
        if m := _TIME.fullmatch(token):
            h, mi, s, ms = (int(g) for g in m.groups())
            return SchemaAndValue(Time.SCHEMA, dt.time(h, mi, s, ms * 1000))
        if m := _TIMESTAMP.fullmatch(token):
            y, mo, d, h, mi, s, ms = (int(g) for g in m.groups())
            value = dt.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=dt.UTC)
            return SchemaAndValue(Timestamp.SCHEMA, value)
    except ValueError:  # month 13, hour 25, ...
        return None
    return None


def _fits_float32(value: float) -> bool:
    try:
        struct.pack("<f", value)
    except OverflowError:
        return False
    return not math.isinf(value)


def _parse_number(token: str) -> SchemaAndValue | None:
    """Kafka's inference for a number literal (Java ``BigDecimal`` syntax), else None."""
    if not _NUMBER.fullmatch(token):
        return None
    number = decimal.Decimal(token)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite by the regex
    scale = -exponent
    magnitude = abs(number)
    exact = not (magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and magnitude != 0))
    if exact and (exponent >= 0 or number == number.to_integral_value()):
        integral = int(number)
        for schema, bound in _INT_SCHEMAS:
            if -bound <= integral < bound:
                return SchemaAndValue(schema, integral)
    if scale != 0:
        as_float = float(number)
        if _fits_float32(as_float):
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
        if not math.isinf(as_float):
            return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_float)
    return SchemaAndValue(DecimalType.schema(scale), number)


def parse_scalar(token: str) -> SchemaAndValue | None:
    """A date, time or number token's value and schema; None for other text."""
    if not token:
        return None
    first = token[0]
    if first.isascii() and first.isdigit():
        temporal = parse_temporal(token)
        if temporal is not None:
            return temporal
    if first in "+-" or (first.isascii() and first.isdigit()):
        return _parse_number(token)
    return None
