"""SQL column types -> Connect schemas, and row values -> Connect values (source direction).

:func:`column_mapping` looks at one reflected column (its SQLAlchemy type, nullability and the
database backend) and returns its Connect :class:`~connectrt.data.Schema` plus a converter
for raw DBAPI values, or None when the raw value is already the Connect value (the common case:
ints, floats, strings, booleans on PostgreSQL). Converters are chosen once per column, so the
per-row work is one call per column that needs converting and nothing for the rest.

Mapping (``numeric.mapping`` changes only NUMERIC/DECIMAL):

=========================================  ===============================================
SQL type                                   Connect schema
=========================================  ===============================================
SMALLINT / INTEGER / BIGINT                INT16 / INT32 / INT64
REAL (PostgreSQL)                          FLOAT32
DOUBLE PRECISION, FLOAT, REAL (SQLite)     FLOAT64
NUMERIC(p, s) / DECIMAL(p, s)              Decimal(scale=s); with best_fit: INT8..INT64 or
                                           FLOAT64 by precision and scale
NUMERIC without a declared scale           FLOAT64 (a Connect Decimal needs a fixed scale)
DATE / TIME / TIMESTAMP [WITH TIME ZONE]   Date / Time / Timestamp logical types
BOOLEAN                                    BOOLEAN
CHAR, VARCHAR, TEXT, UUID, JSON, ENUM      STRING
BLOB, BYTEA, BINARY                        BYTES
=========================================  ===============================================

Nullable columns are optional. TIMESTAMP WITHOUT TIME ZONE values are read in ``db.timezone``.
SQLite stores dates and times as text (SQLAlchemy's ISO formats); they are parsed here.
Columns of other types are skipped (with a warning from the caller), as Confluent does.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.types import TypeEngine

from connectrt.api import DataError
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Time, Timestamp

__all__ = ["ColumnMapping", "Converter", "column_mapping"]

Converter = Callable[[Any], Any]

_EXACT = decimal.Context(prec=1000)  # quantize never rounds because of the context


@dataclass(frozen=True)
class ColumnMapping:
    """How one column becomes one Connect field. ``convert`` is None when no work is needed."""

    name: str
    schema: Schema
    convert: Converter | None


def _optional(builder: SchemaBuilder, nullable: bool) -> Schema:
    return (builder.optional() if nullable else builder).build()


def _primitive(schema_of: Callable[[], SchemaBuilder], nullable: bool) -> Schema:
    return _optional(schema_of(), nullable)


# -- converters ------------------------------------------------------------------------------


def _to_int(value: Any) -> Any:
    return value if value is None or type(value) is int else int(value)


def _to_float(value: Any) -> Any:
    return value if value is None or type(value) is float else float(value)


def _to_bool(value: Any) -> Any:
    return value if value is None or type(value) is bool else bool(value)


def _to_bytes(value: Any) -> Any:
    return value if value is None or type(value) is bytes else bytes(value)


def _to_str(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _decimal_converter(scale: int) -> Converter:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is not decimal.Decimal:
            value = decimal.Decimal(repr(value) if type(value) is float else value)
        rounded = value.quantize(quantum, context=_EXACT)
        if rounded != value:
            raise DataError(f"Value {value} has more than {scale} decimal places")
        return rounded

    return convert


def _date_converter(value: Any) -> Any:
    if value is None or type(value) is dt.date:
        return value
    if isinstance(value, str):
        return dt.date.fromisoformat(value[:10])
    if isinstance(value, dt.datetime):
        return value.date()
    raise DataError(f"Cannot read {value!r} as a DATE")


def _time_converter(value: Any) -> Any:
    if value is None or type(value) is dt.time:
        return value
    if isinstance(value, str):
        return dt.time.fromisoformat(value)
    if isinstance(value, dt.timedelta):  # some drivers return TIME as an interval
        return (dt.datetime.min + value).time()
    raise DataError(f"Cannot read {value!r} as a TIME")


def parse_timestamp_text(text: str) -> dt.datetime:
    """A SQLite timestamp text (``YYYY-MM-DD HH:MM:SS[.ffffff]``, also with ``T``)."""
    return dt.datetime.fromisoformat(text)


def timestamp_converter(zone: dt.tzinfo) -> Converter:
    """Raw timestamp -> datetime; naive values are taken in ``zone`` (db.timezone).

    With ``zone`` UTC naive values stay naive: Connect reads a naive Timestamp as UTC, and
    skipping ``replace(tzinfo=...)`` saves a large share of the per-row cost.
    """
    utc = zone is dt.UTC

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is str:
            value = parse_timestamp_text(value)
        elif not isinstance(value, dt.datetime):
            raise DataError(f"Cannot read {value!r} as a TIMESTAMP")
        if value.tzinfo is None and not utc:
            return value.replace(tzinfo=zone)
        return value

    return convert


# -- the mapping -----------------------------------------------------------------------------


def _numeric(
    type_: sa.Numeric[Any], nullable: bool, numeric_mapping: str
) -> tuple[Schema, Converter | None]:
    precision, scale = type_.precision, type_.scale
    if scale is None and precision is None:
        return _primitive(SchemaBuilder.float64, nullable), _to_float
    scale = scale or 0
    if numeric_mapping != "none" and precision is not None and precision < 19:
        if scale == 0:
            if precision > 9:
                builder = SchemaBuilder.int64
            elif precision > 4:
                builder = SchemaBuilder.int32
            elif precision > 2:
                builder = SchemaBuilder.int16
            else:
                builder = SchemaBuilder.int8
            return _primitive(builder, nullable), _to_int
        if numeric_mapping in ("best_fit", "best_fit_eager_double"):
            return _primitive(SchemaBuilder.float64, nullable), _to_float
    if scale > 0 and numeric_mapping == "best_fit_eager_double":
        return _primitive(SchemaBuilder.float64, nullable), _to_float
    return _optional(Decimal.builder(scale), nullable), _decimal_converter(scale)


def _mapping(
    type_: TypeEngine[Any],
    nullable: bool,
    backend: str,
    numeric_mapping: str,
    zone: dt.tzinfo,
) -> tuple[Schema, Converter | None] | None:
    sqlite = backend == "sqlite"
    # Order matters: BigInteger/SmallInteger subclass Integer; Float subclasses Numeric.
    if isinstance(type_, sa.Boolean):
        return _primitive(SchemaBuilder.boolean, nullable), _to_bool if sqlite else None
    if isinstance(type_, sa.BigInteger):
        return _primitive(SchemaBuilder.int64, nullable), _to_int if sqlite else None
    if isinstance(type_, sa.SmallInteger):
        return _primitive(SchemaBuilder.int16, nullable), _to_int if sqlite else None
    if isinstance(type_, sa.Integer):
        return _primitive(SchemaBuilder.int32, nullable), _to_int if sqlite else None
    if isinstance(type_, sa.Float):
        single = isinstance(type_, sa.REAL) and not sqlite
        single = single or (type_.precision is not None and type_.precision <= 24)
        builder = SchemaBuilder.float32 if single and not sqlite else SchemaBuilder.float64
        return _primitive(builder, nullable), _to_float
    if isinstance(type_, sa.Numeric):
        return _numeric(type_, nullable, numeric_mapping)
    if isinstance(type_, sa.DateTime):
        return _optional(Timestamp.builder(), nullable), timestamp_converter(zone)
    if isinstance(type_, sa.Date):
        return _optional(Date.builder(), nullable), _date_converter
    if isinstance(type_, sa.Time):
        return _optional(Time.builder(), nullable), _time_converter
    if isinstance(type_, sa.Enum | sa.String | sa.Uuid | sa.JSON):
        return _primitive(SchemaBuilder.string, nullable), _to_str
    if isinstance(type_, sa.LargeBinary | sa.types._Binary):
        return _primitive(SchemaBuilder.bytes, nullable), _to_bytes
    return None


def column_mapping(
    name: str,
    type_: TypeEngine[Any],
    nullable: bool,
    *,
    backend: str,
    numeric_mapping: str = "none",
    zone: dt.tzinfo = dt.UTC,
) -> ColumnMapping | None:
    """The Connect field for column ``name``, or None when its type is not supported."""
    found = _mapping(type_, nullable, backend, numeric_mapping, zone)
    if found is None:
        return None
    schema, convert = found
    return ColumnMapping(name, schema, convert)
