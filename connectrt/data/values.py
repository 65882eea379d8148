"""Checking Python values against Connect schemas.

The Python representation of each Connect type:

=========== ===============================================================
INT8..INT64 ``int`` (range-checked; ``bool`` is *not* accepted)
FLOAT32/64  ``float`` or ``int``
BOOLEAN     ``bool``
STRING      ``str``
BYTES       ``bytes``, ``bytearray`` or ``memoryview``
ARRAY       ``list`` or ``tuple``
MAP         ``dict``
STRUCT      :class:`~connectrt.data.struct.Struct` with an equal schema
Decimal     ``decimal.Decimal`` (finite, representable at the schema's scale)
Date        ``datetime.date``
Time        ``datetime.time``
Timestamp   ``datetime.datetime`` (naive means UTC)
=========== ===============================================================
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

from connectrt.data import logical as _logical
from connectrt.data import schema as _schema_module
from connectrt.data import struct as _struct
from connectrt.data.schema import Schema, Type
from connectrt.errors import DataError

__all__ = ["INT_RANGES", "validate_value"]

INT_RANGES: dict[Type, tuple[int, int]] = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}

_PLAIN_TYPES: dict[Type, tuple[type, ...]] = {
    Type.FLOAT32: (float, int),
    Type.FLOAT64: (float, int),
    Type.BOOLEAN: (bool,),
    Type.STRING: (str,),
    Type.BYTES: (bytes, bytearray, memoryview),
}


def _where(path: str | None) -> str:
    return f"Invalid value for field '{path}'" if path else "Invalid value"


def _mismatch(path: str | None, expected: str, value: Any) -> DataError:
    return DataError(f"{_where(path)}: expected {expected}, got {type(value).__name__}")


def validate_value(schema: Schema, value: Any, field_name: str | None = None) -> None:
    """Raise :class:`DataError` unless ``value`` is a valid Connect value for ``schema``.

    ``field_name`` is the path used in error messages (``"user.age"``). None is valid only for
    an optional schema or one with a default. Nested structs, arrays and maps are checked
    recursively.
    """
    if value is None:
        if schema.optional or schema.default is not None:
            return
        raise DataError(
            f"{_where(field_name)}: null is not allowed for a required {schema.type.name} field"
        )
    t = schema.type
    rng = INT_RANGES.get(t)
    if schema.name is not None:
        lname = _logical.logical_name(schema)
        if lname is not None:
            _LOGICAL_CHECKS[lname](schema, value, field_name)
            return
    if rng is not None:
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise _mismatch(field_name, t.name, value)
        if not rng[0] <= value <= rng[1]:
            raise DataError(f"{_where(field_name)}: {value} is out of range for {t.name}")
        return
    plain = _PLAIN_TYPES.get(t)
    if plain is not None:
        if not isinstance(value, plain) or (t is not Type.BOOLEAN and isinstance(value, bool)):
            raise _mismatch(field_name, t.name, value)
        return
    if t is Type.STRUCT:
        if not isinstance(value, _struct.Struct):
            raise _mismatch(field_name, "STRUCT", value)
        if not value.schema.equals_ignoring_default(schema):
            raise DataError(
                f"{_where(field_name)}: struct schema {value.schema!r} does not match {schema!r}"
            )
        value.validate(_prefix=field_name)
        return
    if t is Type.ARRAY:
        if not isinstance(value, list | tuple):
            raise _mismatch(field_name, "ARRAY", value)
        item_schema = schema.value_schema
        assert item_schema is not None
        base = field_name or ""
        for i, item in enumerate(value):
            validate_value(item_schema, item, f"{base}[{i}]")
        return
    if t is Type.MAP:
        if not isinstance(value, dict):
            raise _mismatch(field_name, "MAP", value)
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        base = field_name or ""
        for k, v in value.items():
            validate_value(key_schema, k, f"{base}<key {k!r}>")
            validate_value(value_schema, v, f"{base}[{k!r}]")
        return
    raise DataError(f"{_where(field_name)}: unknown schema type {t!r}")  # pragma: no cover


def _check_decimal(schema: Schema, value: Any, path: str | None) -> None:
    if not isinstance(value, decimal.Decimal):
        raise _mismatch(path, "Decimal", value)
    try:
        _logical.Decimal.rescale(value, _logical.Decimal.scale(schema))
    except DataError as exc:
        raise DataError(f"{_where(path)}: {exc}") from exc


def _check_date(schema: Schema, value: Any, path: str | None) -> None:
    if type(value) is _logical.RawLogical:
        return
    if not isinstance(value, dt.date):
        raise _mismatch(path, "Date", value)
    if isinstance(value, dt.datetime):
        try:
            _logical.Date.from_logical(schema, value)
        except DataError as exc:
            raise DataError(f"{_where(path)}: {exc}") from exc


def _check_time(schema: Schema, value: Any, path: str | None) -> None:
    if not isinstance(value, dt.time) and type(value) is not _logical.RawLogical:
        raise _mismatch(path, "Time", value)


def _check_timestamp(schema: Schema, value: Any, path: str | None) -> None:
    if not isinstance(value, dt.datetime) and type(value) is not _logical.RawLogical:
        raise _mismatch(path, "Timestamp", value)


_LOGICAL_CHECKS: dict[str, Callable[[Schema, Any, str | None], None]] = {
    _logical.Decimal.LOGICAL_NAME: _check_decimal,
    _logical.Date.LOGICAL_NAME: _check_date,
    _logical.Time.LOGICAL_NAME: _check_time,
    _logical.Timestamp.LOGICAL_NAME: _check_timestamp,
}


_schema_module.validate_value_hook = validate_value
