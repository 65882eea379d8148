"""Connect schemas -> SQL column types, value adapters, and column compatibility checks.

One mapping for every dialect, expressed in SQLAlchemy's generic types, which each dialect
renders natively (PostgreSQL / SQLite):

=====================  ==============================  ============================
Connect                PostgreSQL                      SQLite
=====================  ==============================  ============================
INT8, INT16            SMALLINT                        SMALLINT (INTEGER affinity)
INT32                  INTEGER                         INTEGER
INT64                  BIGINT                          BIGINT (INTEGER affinity)
FLOAT32                REAL                            REAL
FLOAT64                DOUBLE PRECISION                DOUBLE (REAL affinity)
BOOLEAN                BOOLEAN                         BOOLEAN
STRING                 TEXT                            TEXT
BYTES                  BYTEA                           BLOB
Decimal(scale)         NUMERIC(precision, scale)       NUMERIC(precision, scale)
Date                   DATE                            DATE
Time                   TIME                            TIME
Timestamp              TIMESTAMP (no time zone)        DATETIME
=====================  ==============================  ============================

Decimal precision comes from the schema parameter ``connect.decimal.precision`` when present,
else 38. Struct, array and map fields have no column type (a clear DataError). Timestamps are
written as wall-clock time in ``db.timezone`` (UTC by default, as Confluent's JDBC sink does).
Pure functions, thread-safe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from connectrt.api import DataError
from connectrt.data import Date, Decimal, Schema, Time, Timestamp, Type

__all__ = [
    "DEFAULT_DECIMAL_PRECISION",
    "column_type",
    "compatible",
    "describe",
    "value_adapter",
]

DEFAULT_DECIMAL_PRECISION = 38
_PRECISION_PARAM = "connect.decimal.precision"

_PRIMITIVES: dict[Type, Callable[[], sa.types.TypeEngine[Any]]] = {
    Type.INT8: sa.SmallInteger,
    Type.INT16: sa.SmallInteger,
    Type.INT32: sa.Integer,
    Type.INT64: sa.BigInteger,
    Type.FLOAT32: sa.REAL,
    Type.FLOAT64: sa.Double,
    Type.BOOLEAN: sa.Boolean,
    Type.STRING: sa.Text,
    Type.BYTES: sa.LargeBinary,
}


def describe(schema: Schema) -> str:
    """A short human name of a Connect schema for error messages (``INT32``, ``Decimal``)."""
    if schema.name in (Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME):
        return str(schema.name).rsplit(".", 1)[-1]
    if schema.name == Timestamp.LOGICAL_NAME:
        return "Timestamp"
    return schema.type.name


def column_type(schema: Schema, column: str) -> sa.types.TypeEngine[Any]:
    """The SQL column type for a field schema; DataError names ``column`` if there is none."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        params = schema.parameters or {}
        precision = int(params.get(_PRECISION_PARAM, DEFAULT_DECIMAL_PRECISION))
        return sa.Numeric(max(precision, scale), scale)
    if name == Date.LOGICAL_NAME:
        return sa.Date()
    if name == Time.LOGICAL_NAME:
        return sa.Time()
    if name == Timestamp.LOGICAL_NAME:
        return sa.DateTime()
    factory = _PRIMITIVES.get(schema.type)
    if factory is None:
        raise DataError(
            f"Field '{column}' has type {schema.type.name}, which has no SQL column type "
            "(flatten structs, e.g. with the Flatten transform)"
        )
    return factory()


def _wall_clock_in(zone: dt.tzinfo) -> Callable[[Any], Any]:
    """Aware datetimes -> naive wall-clock time in ``zone`` (``db.timezone``)."""

    def naive(value: Any) -> Any:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            return value.astimezone(zone).replace(tzinfo=None)
        return value

    return naive


def value_adapter(schema: Schema | None, zone: dt.tzinfo = dt.UTC) -> Callable[[Any], Any] | None:
    """A function turning a Connect value into the bind value for its column, or None when the
    value is bound as is (the common case: no per-record work). Timestamps become naive
    wall-clock time in ``zone``."""
    if schema is not None and schema.name == Timestamp.LOGICAL_NAME:
        return _wall_clock_in(zone)
    return None


# Families of SQL types a Connect type may be written into (checked once per table and schema).
_FAMILY_ORDER: tuple[tuple[str, type[sa.types.TypeEngine[Any]]], ...] = (
    ("boolean", sa.Boolean),
    ("integer", sa.Integer),
    ("float", sa.Float),
    ("numeric", sa.Numeric),
    ("string", sa.String),
    ("binary", sa.LargeBinary),
    ("datetime", sa.DateTime),
    ("date", sa.Date),
    ("time", sa.Time),
)

_ACCEPTS: dict[str, frozenset[str]] = {
    "INT": frozenset({"integer", "numeric", "float", "boolean"}),
    "FLOAT": frozenset({"float", "numeric"}),
    "BOOLEAN": frozenset({"boolean", "integer"}),
    "STRING": frozenset({"string"}),
    "BYTES": frozenset({"binary"}),
    "Decimal": frozenset({"numeric", "float"}),
    "Date": frozenset({"date", "datetime"}),
    "Time": frozenset({"time"}),
    "Timestamp": frozenset({"datetime"}),
}


def _family(sql_type: sa.types.TypeEngine[Any]) -> str | None:
    for family, cls in _FAMILY_ORDER:
        if isinstance(sql_type, cls):
            return family
    return None


def _connect_kind(schema: Schema) -> str:
    kind = describe(schema)
    if kind in ("INT8", "INT16", "INT32", "INT64"):
        return "INT"
    if kind in ("FLOAT32", "FLOAT64"):
        return "FLOAT"
    return kind


def compatible(schema: Schema, sql_type: sa.types.TypeEngine[Any]) -> bool:
    """Whether values of ``schema`` can be written into a column of ``sql_type``.

    Unknown (dialect-specific, unreflectable) column types are accepted: the database decides.
    """
    family = _family(sql_type)
    if family is None:
        return True
    accepted = _ACCEPTS.get(_connect_kind(schema))
    return accepted is None or family in accepted
