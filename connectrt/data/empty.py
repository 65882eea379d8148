"""The empty value of each Connect type: what a value of that type is when it says nothing.

``0``/``0.0`` for numbers, ``False``, ``""``, ``b""``; the Unix epoch for Date, Time and
Timestamp, ``Decimal(0)`` for Decimal. Users: MaskField (a masked field), the Arrow batch
conversion (a required field of a row whose struct is null, never read). The tables are
constants, read only.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any, Final

from connectrt.data.logical import Date, Decimal, Time, Timestamp
from connectrt.data.schema import Type

__all__ = ["EMPTY_LOGICAL", "EMPTY_PRIMITIVE", "EPOCH_DATE", "EPOCH_TIME", "EPOCH_TIMESTAMP"]

EPOCH_DATE: Final = dt.date(1970, 1, 1)
EPOCH_TIME: Final = dt.time(0)
EPOCH_TIMESTAMP: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

EMPTY_PRIMITIVE: Final[Mapping[Type, Any]] = {
    Type.INT8: 0,
    Type.INT16: 0,
    Type.INT32: 0,
    Type.INT64: 0,
    Type.FLOAT32: 0.0,
    Type.FLOAT64: 0.0,
    Type.BOOLEAN: False,
    Type.STRING: "",
    Type.BYTES: b"",
}
"""The empty value of each primitive type."""

EMPTY_LOGICAL: Final[Mapping[str, Any]] = {
    Decimal.LOGICAL_NAME: decimal.Decimal(0),
    Date.LOGICAL_NAME: EPOCH_DATE,
    Time.LOGICAL_NAME: EPOCH_TIME,
    Timestamp.LOGICAL_NAME: EPOCH_TIMESTAMP,
}
"""The empty value of each built-in logical type, by its name (Decimal's without a scale)."""
