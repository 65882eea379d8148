"""Connect schemas <-> Spark types, and Connect values <-> Arrow/Spark values.

Reading (Connect -> Spark):

=====================================  ===========================================
Connect                                Spark
=====================================  ===========================================
INT8 / INT16 / INT32 / INT64           ByteType / ShortType / IntegerType / LongType
FLOAT32 / FLOAT64                      FloatType / DoubleType
BOOLEAN / STRING / BYTES               BooleanType / StringType / BinaryType
Decimal (scale s)                      DecimalType(p, s): p from the schema parameter
                                       ``connect.decimal.precision`` (Avro), at most 38
Date / Timestamp                       DateType / TimestampType (UTC instants)
Time                                   StringType, ISO ``HH:MM:SS.ffffff``
ARRAY / MAP / STRUCT                   ArrayType / MapType / StructType
no schema (schemaless JSON, ...)       StringType holding the value as JSON
=====================================  ===========================================

Every column and field is nullable: a record whose schema evolved (a new optional field, a
field dropped) still fits. Reading compiles, once per Spark type (the planned schema, or one a
user gives with ``spark.read.schema(...)``), a function that turns a Connect value into what
``pyarrow.array(..., type=arrow_type(spark_type))`` accepts; a value that cannot fit raises
:class:`~connectrt.api.DataError`.

Writing (Spark -> Connect): :func:`connect_schema` maps a Spark type back (nullable ->
optional, DecimalType -> Decimal with its precision kept as ``connect.decimal.precision``,
TimestampType/TimestampNTZType -> Timestamp) and :func:`row_converter` turns Spark ``Row``
values into Connect values (Row -> Struct).

Everything here is pure and thread-safe; functions are cached per schema by the callers.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T

from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connectrt.data.logical import logical_name
from connectrt.errors import DataError

__all__ = [
    "DECIMAL_PRECISION",
    "arrow_type",
    "connect_schema",
    "json_text",
    "row_converter",
    "spark_type",
    "to_arrow_value",
]

DECIMAL_PRECISION = "connect.decimal.precision"
_MAX_PRECISION = 38
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Fn = Callable[[Any], Any]

_PRIMITIVE_SPARK: dict[Type, T.DataType] = {
    Type.INT8: T.ByteType(),
    Type.INT16: T.ShortType(),
    Type.INT32: T.IntegerType(),
    Type.INT64: T.LongType(),
    Type.FLOAT32: T.FloatType(),
    Type.FLOAT64: T.DoubleType(),
    Type.BOOLEAN: T.BooleanType(),
    Type.STRING: T.StringType(),
    Type.BYTES: T.BinaryType(),
}


def _precision(schema: Schema) -> int:
    """Spark's precision for a Decimal schema: ``connect.decimal.precision`` capped at 38
    (values that need more digits fail per record when read)."""
    params = schema.parameters or {}
    raw = params.get(DECIMAL_PRECISION)
    precision = min(int(raw), _MAX_PRECISION) if raw else _MAX_PRECISION
    scale = Decimal.scale(schema)
    if not 0 <= scale <= precision:
        raise DataError(
            f"Decimal(precision={precision}, scale={scale}) does not fit Spark's DecimalType "
            f"(precision <= {_MAX_PRECISION}, 0 <= scale <= precision)"
        )
    return precision


# -- Connect -> Spark / Arrow types --------------------------------------------------------------
def spark_type(schema: Schema | None) -> T.DataType:
    """The Spark type of values of ``schema`` (None: schemaless, a JSON string)."""
    if schema is None:
        return T.StringType()
    lname = logical_name(schema)
    if lname == Decimal.LOGICAL_NAME:
        return T.DecimalType(_precision(schema), Decimal.scale(schema))
    if lname == Date.LOGICAL_NAME:
        return T.DateType()
    if lname == Timestamp.LOGICAL_NAME:
        return T.TimestampType()
    if lname == Time.LOGICAL_NAME:
        return T.StringType()
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        return T.ArrayType(spark_type(schema.value_schema), True)
    if schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return T.MapType(spark_type(schema.key_schema), spark_type(schema.value_schema), True)
    if schema.type is Type.STRUCT:
        return T.StructType(
            [T.StructField(f.name, spark_type(f.schema), True) for f in schema.fields]
        )
    return _PRIMITIVE_SPARK[schema.type]


# -- Connect values -> Arrow-ready Python values --------------------------------------------------
def _json_default(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, decimal.Decimal | dt.date | dt.time):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def json_text(value: Any) -> str | None:
    """A value as JSON text (schemaless data, header values); strings are kept as they are."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()


def _identity(value: Any) -> Any:
    return value


_SIMPLE: list[tuple[type[T.DataType], pa.DataType, Callable[[], SchemaBuilder]]] = [
    (T.ByteType, pa.int8(), SchemaBuilder.int8),
    (T.ShortType, pa.int16(), SchemaBuilder.int16),
    (T.IntegerType, pa.int32(), SchemaBuilder.int32),
    (T.LongType, pa.int64(), SchemaBuilder.int64),
    (T.FloatType, pa.float32(), SchemaBuilder.float32),
    (T.DoubleType, pa.float64(), SchemaBuilder.float64),
    (T.BooleanType, pa.bool_(), SchemaBuilder.boolean),
    (T.StringType, pa.string(), SchemaBuilder.string),
    (T.BinaryType, pa.binary(), SchemaBuilder.bytes),
    (T.DateType, pa.date32(), Date.builder),
    (T.TimestampType, pa.timestamp("us", tz="UTC"), Timestamp.builder),
    (T.TimestampNTZType, pa.timestamp("us"), Timestamp.builder),
]
"""The Spark types without parameters: the Arrow type Spark reads each back as, and the
builder of its Connect schema."""


def arrow_type(data_type: T.DataType) -> pa.DataType:
    """The Arrow type Spark reads back as ``data_type`` (what ``read()`` yields)."""
    for cls, arrow, _ in _SIMPLE:
        if isinstance(data_type, cls):
            return arrow
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, T.ArrayType):
        return pa.list_(arrow_type(data_type.elementType))
    if isinstance(data_type, T.MapType):
        return pa.map_(arrow_type(data_type.keyType), arrow_type(data_type.valueType))
    if isinstance(data_type, T.StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType)) for f in data_type.fields])
    raise DataError(f"Spark type {data_type.simpleString()} cannot be read from Kafka records")


def _text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dt.time):
        return value.isoformat()
    return json_text(value)


def to_arrow_value(data_type: T.DataType) -> Fn:
    """A function turning a Connect value into an Arrow-ready value of ``data_type``.

    Structs become dicts by field name (a field the record lacks is null); strings take any
    value (non-strings as JSON text). Raises DataError for a value that cannot fit.
    """
    if isinstance(data_type, T.StringType):
        return _text
    if isinstance(data_type, T.ArrayType):
        item = to_arrow_value(data_type.elementType)
        if item is _identity:
            return _identity
        return lambda v: None if v is None else [item(x) for x in v]
    if isinstance(data_type, T.MapType):
        mk = to_arrow_value(data_type.keyType)
        mv = to_arrow_value(data_type.valueType)
        return lambda v: None if v is None else [(mk(k), mv(x)) for k, x in v.items()]
    if isinstance(data_type, T.StructType):
        plan = [(f.name, to_arrow_value(f.dataType)) for f in data_type.fields]

        seen: dict[int, tuple[Any, frozenset[str]]] = {}  # schema id -> (schema, field names)

        def struct(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, Struct):
                schema = v.schema
                known = seen.get(id(schema))
                if known is None or known[0] is not schema:
                    known = (schema, frozenset(f.name for f in schema.fields))
                    seen[id(schema)] = known
                fields = known[1]
                return {n: fn(v.get(n)) if n in fields else None for n, fn in plan}
            if isinstance(v, dict):
                return {n: fn(v.get(n)) for n, fn in plan}
            raise DataError(f"expected a struct, got {type(v).__name__} {v!r:.80}")

        return struct
    return _identity


# -- Spark -> Connect -------------------------------------------------------------------------
def connect_schema(data_type: T.DataType, optional: bool = True, name: str | None = None) -> Schema:
    """The Connect schema of a Spark type (a StructType becomes a STRUCT named ``name``)."""
    builder = _builder(data_type, name)
    if optional:
        builder = builder.optional()
    return builder.build()


def _builder(data_type: T.DataType, name: str | None) -> SchemaBuilder:
    for cls, _, make in _SIMPLE:
        if isinstance(data_type, cls):
            return make()
    if isinstance(data_type, T.DecimalType):
        return Decimal.builder(data_type.scale).parameter(
            DECIMAL_PRECISION, str(data_type.precision)
        )
    if isinstance(data_type, T.ArrayType):
        return SchemaBuilder.array(connect_schema(data_type.elementType, data_type.containsNull))
    if isinstance(data_type, T.MapType):
        return SchemaBuilder.map(
            connect_schema(data_type.keyType, False),
            connect_schema(data_type.valueType, data_type.valueContainsNull),
        )
    if isinstance(data_type, T.StructType):
        builder = SchemaBuilder.struct()
        if name:
            builder = builder.name(name)
        for f in data_type.fields:
            builder = builder.field(f.name, connect_schema(f.dataType, f.nullable))
        return builder
    raise DataError(f"Spark type {data_type.simpleString()} has no Connect equivalent")


def _utc(value: Any) -> Any:
    # PySpark hands TimestampType values over as naive local wall-clock datetimes.
    if value is None or value.tzinfo is not None:
        return value
    return value.astimezone(dt.UTC)


def _ntz(value: Any) -> Any:
    return value if value is None or value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def row_converter(data_type: T.DataType, schema: Schema) -> Fn:
    """A function turning a Spark value of ``data_type`` into a Connect value of ``schema``."""
    if isinstance(data_type, T.TimestampType):
        return _utc
    if isinstance(data_type, T.TimestampNTZType):
        return _ntz
    if isinstance(data_type, T.ArrayType):
        item = row_converter(data_type.elementType, schema.value_schema)  # type: ignore[arg-type]
        if item is _identity:
            return _identity
        return lambda v: None if v is None else [item(x) for x in v]
    if isinstance(data_type, T.MapType):
        mk = row_converter(data_type.keyType, schema.key_schema)  # type: ignore[arg-type]
        mv = row_converter(data_type.valueType, schema.value_schema)  # type: ignore[arg-type]
        if mk is _identity and mv is _identity:
            return lambda v: None if v is None else dict(v)
        return lambda v: None if v is None else {mk(k): mv(x) for k, x in v.items()}
    if isinstance(data_type, T.StructType):
        convs = [
            row_converter(f.dataType, schema.fields[i].schema)
            for i, f in enumerate(data_type.fields)
        ]
        plain = all(c is _identity for c in convs)
        make = Struct._from_values

        def to_struct(row: Any) -> Any:
            if row is None:
                return None
            if plain:
                return make(schema, list(row))
            return make(schema, [c(x) for c, x in zip(convs, row, strict=True)])

        return to_struct
    return _identity
