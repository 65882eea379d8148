"""Connect schemas as Arrow types, and columns of Connect values as Arrow arrays.

The mapping (``unit`` is ``"ms"`` unless asked for ``"us"``, which Iceberg needs):

============================  =========================================================
Connect                       Arrow
============================  =========================================================
INT8 / 16 / 32 / 64           int8 / int16 / int32 / int64
FLOAT32 / FLOAT64             float32 / float64
BOOLEAN, STRING, BYTES        bool, string, binary
Decimal (scale s)             decimal128(p, s), p from ``connect.decimal.precision`` or
                              38 (decimal256 when p > 38)
Date                          date32
Time                          time32(ms) / time64(us)
Timestamp                     timestamp(unit, tz=UTC)
STRUCT                        struct (fields in order)
ARRAY                         list<element>
MAP                           map<key, value>
============================  =========================================================

An optional Connect schema is a nullable Arrow field; a required one is not nullable, and a
null in it (a value without the field, the field having no default) is a DataError rather than
a file whose required column holds nulls.

Each schema is compiled once into a function from a sequence of Connect values to an Arrow
array. Struct values are transposed field by field from their value lists (the way the JDBC
sink reads them), so no dict is built per record; lists and maps are flattened into one child
array each. Primitive columns go to ``pyarrow.array`` as they are. Hot path: one pass per
field per batch.

Thread-safety: a compiled :class:`ArrowBatchBuilder` holds no mutable state; share it freely.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import pyarrow as pa

from connectrt.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connectrt.data.empty import EMPTY_LOGICAL, EMPTY_PRIMITIVE
from connectrt.errors import DataError

__all__ = [
    "VALUE_COLUMN",
    "ArrowBatchBuilder",
    "SchemalessValueError",
    "TimeUnit",
    "arrow_field",
    "arrow_schema",
    "arrow_type",
]

TimeUnit = Literal["ms", "us"]
VALUE_COLUMN = "value"
"""The one column of a file whose records' value schema is not a STRUCT."""

DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"
_DEFAULT_DECIMAL_PRECISION = 38

_Convert = Callable[..., pa.Array]

_PRIMITIVES: dict[Type, pa.DataType] = {
    Type.INT8: pa.int8(),
    Type.INT16: pa.int16(),
    Type.INT32: pa.int32(),
    Type.INT64: pa.int64(),
    Type.FLOAT32: pa.float32(),
    Type.FLOAT64: pa.float64(),
    Type.BOOLEAN: pa.bool_(),
    Type.STRING: pa.string(),
    Type.BYTES: pa.binary(),
}


class SchemalessValueError(DataError):
    """A value without a Connect schema reached a writer that needs one (Parquet, Iceberg)."""


def _decimal_type(schema: Schema) -> pa.DataType:
    scale = Decimal.scale(schema)
    raw = (schema.parameters or {}).get(DECIMAL_PRECISION_PARAMETER)
    try:
        precision = _DEFAULT_DECIMAL_PRECISION if raw is None else int(raw)
    except ValueError as exc:
        raise DataError(f"Decimal precision {raw!r} is not an int") from exc
    precision = max(precision, scale, 1)
    if precision > 38:
        return pa.decimal256(precision, scale)
    return pa.decimal128(precision, scale)


def arrow_type(schema: Schema, *, unit: TimeUnit = "ms") -> pa.DataType:
    """The Arrow type of values of ``schema`` (see the module docstring for the mapping)."""
    return _compile(schema, unit)[0]


def arrow_field(name: str, schema: Schema, *, unit: TimeUnit = "ms") -> pa.Field:
    """An Arrow field called ``name`` for values of ``schema``, nullable when it is optional."""
    return pa.field(name, arrow_type(schema, unit=unit), nullable=schema.optional)


def arrow_schema(value_schema: Schema | None, *, unit: TimeUnit = "ms") -> pa.Schema:
    """The Arrow schema of a file of records with this value schema: a STRUCT's fields as
    columns, any other schema as one column called :data:`VALUE_COLUMN`. Raises
    :class:`SchemalessValueError` for None (schemaless values)."""
    if value_schema is None:
        raise SchemalessValueError(
            "the record has no value schema (schemaless JSON, a string without schema...): "
            "a columnar file needs one; use a converter that gives schemas "
            "(JsonConverter with schemas.enable=true, AvroConverter) or the JSON lines format"
        )
    if value_schema.type is Type.STRUCT:
        return pa.schema([arrow_field(f.name, f.schema, unit=unit) for f in value_schema.fields])
    return pa.schema([arrow_field(VALUE_COLUMN, value_schema, unit=unit)])


def _checked(name: str, schema: Schema, convert: _Convert) -> _Convert:
    """``convert`` substituting the field's default for nulls, and refusing nulls when the
    field is required."""
    default = schema.default
    optional = schema.optional

    def run(values: Sequence[Any]) -> pa.Array:
        if default is not None:
            values = [default if v is None else v for v in values]
        array = convert(values)
        if not optional and array.null_count:
            raise DataError(f"field {name!r} is required but the value has none")
        return array

    return run


def _compile(schema: Schema, unit: TimeUnit) -> tuple[pa.DataType, _Convert]:
    name = schema.name
    kind = schema.type
    typ: pa.DataType
    if name == Decimal.LOGICAL_NAME and kind is Type.BYTES:
        typ = _decimal_type(schema)
    elif name == Date.LOGICAL_NAME and kind is Type.INT32:
        typ = pa.date32()
    elif name == Time.LOGICAL_NAME and kind is Type.INT32:
        typ = pa.time32("ms") if unit == "ms" else pa.time64("us")
    elif name == Timestamp.LOGICAL_NAME and kind is Type.INT64:
        typ = pa.timestamp(unit, tz="UTC")
    elif kind is Type.STRUCT:
        return _compile_struct(schema, unit)
    elif kind is Type.ARRAY:
        return _compile_array(schema, unit)
    elif kind is Type.MAP:
        return _compile_map(schema, unit)
    else:
        typ = _PRIMITIVES[kind]
    return typ, _primitive(typ)


def _primitive(typ: pa.DataType) -> _Convert:
    def convert(values: Sequence[Any]) -> pa.Array:
        return pa.array(values, type=typ)

    return convert


def _has_null(values: Sequence[Any]) -> bool:
    """Whether a value is None, by identity: ``None in values`` would call ``__eq__`` of
    every value (a Struct's, for one), many times slower."""
    return True in [v is None for v in values]


def _mask(values: Sequence[Any]) -> pa.Array | None:
    nulls = [v is None for v in values]
    if True not in nulls:
        return None
    return pa.array(nulls, type=pa.bool_())


def _compile_struct(schema: Schema, unit: TimeUnit) -> tuple[pa.DataType, _Convert]:
    fields = schema.fields
    compiled = [_compile(f.schema, unit) for f in fields]
    arrow_fields = [
        pa.field(f.name, t, nullable=f.schema.optional)
        for f, (t, _) in zip(fields, compiled, strict=True)
    ]
    typ = pa.struct(arrow_fields)
    converts = [_checked(f.name, f.schema, c) for f, (_, c) in zip(fields, compiled, strict=True)]
    width = len(fields)
    # The field values standing in a null struct's row: Parquet refuses a null in a required
    # column even under a null parent, so required fields get a placeholder there.
    absent = _absent_fields(schema)

    def convert(values: Sequence[Any]) -> pa.Array:
        if not width:
            return pa.array([None if v is None else {} for v in values], type=typ)
        mask = _mask(values)
        rows = (
            [v._values for v in values]
            if mask is None
            else [absent if v is None else v._values for v in values]
        )
        columns = list(zip(*rows, strict=True)) if rows else [()] * width
        children = [c(column) for c, column in zip(converts, columns, strict=True)]
        return pa.StructArray.from_arrays(children, fields=arrow_fields, mask=mask)

    return typ, convert


_PLACEHOLDERS: dict[Type, Any] = {**EMPTY_PRIMITIVE, Type.ARRAY: (), Type.MAP: {}}


def _absent_fields(schema: Schema) -> list[Any]:
    """A struct's field values for a row where the struct itself is null: None for optional
    fields, a value of the right type (never read) for required ones."""
    return [None if f.schema.optional else _placeholder(f.schema) for f in schema.fields]


def _placeholder(schema: Schema) -> Any:
    if schema.default is not None:
        return schema.default
    if schema.name is not None and schema.name in EMPTY_LOGICAL:
        return EMPTY_LOGICAL[schema.name]
    if schema.type is Type.STRUCT:
        return Struct._from_values(schema, _absent_fields(schema))
    return _PLACEHOLDERS[schema.type]


def _converted_by_arrow(typ: pa.DataType, item_schema: Schema, what: str) -> _Convert:
    """The conversion of lists or maps whose items (keys too) are primitives without defaults:
    pyarrow converts them in one call; DataError ``<what> holds a null`` if the items are
    required and one is null (pyarrow does not check)."""
    required = not item_schema.optional
    is_map = pa.types.is_map(typ)

    def convert(values: Sequence[Any]) -> pa.Array:
        array = pa.array(values, type=typ)
        if required and (array.items if is_map else array.values).null_count:
            raise DataError(f"{what} holds a null")
        return array

    return convert


def _compile_array(schema: Schema, unit: TimeUnit) -> tuple[pa.DataType, _Convert]:
    item_schema = schema.value_schema
    assert item_schema is not None
    item_type, item_convert = _compile(item_schema, unit)
    typ = pa.list_(pa.field("element", item_type, nullable=item_schema.optional))
    if item_schema.type.is_primitive and item_schema.default is None:
        return typ, _converted_by_arrow(typ, item_schema, "an array of required items")
    checked = _checked("element", item_schema, item_convert)

    def convert(values: Sequence[Any]) -> pa.Array:
        offsets = [0]
        items: list[Any] = []
        for v in values:
            if v is not None:
                items.extend(v)
            offsets.append(len(items))
        return pa.ListArray.from_arrays(
            pa.array(offsets, type=pa.int32()), checked(items), type=typ, mask=_mask(values)
        )

    return typ, convert


def _compile_map(schema: Schema, unit: TimeUnit) -> tuple[pa.DataType, _Convert]:
    key_schema, item_schema = schema.key_schema, schema.value_schema
    assert key_schema is not None and item_schema is not None
    key_type, key_convert = _compile(key_schema, unit)
    item_type, item_convert = _compile(item_schema, unit)
    typ = pa.map_(key_type, pa.field("value", item_type, nullable=item_schema.optional))
    if (
        key_schema.type.is_primitive
        and item_schema.type.is_primitive
        and key_schema.default is None
        and item_schema.default is None
    ):
        return typ, _converted_by_arrow(typ, item_schema, "a map of required values")
    checked_items = _checked("value", item_schema, item_convert)

    def convert(values: Sequence[Any]) -> pa.Array:
        offsets = [0]
        keys: list[Any] = []
        items: list[Any] = []
        for v in values:
            if v is not None:
                keys.extend(v.keys())
                items.extend(v.values())
            offsets.append(len(keys))
        key_array = key_convert(keys)
        if key_array.null_count:
            raise DataError("a map key is null")
        return pa.MapArray.from_arrays(
            pa.array(offsets, type=pa.int32()),
            key_array,
            checked_items(items),
            type=typ,
            mask=_mask(values),
        )

    return typ, convert


class ArrowBatchBuilder:
    """Turns Connect values of one value schema into ``pyarrow.RecordBatch`` es.

    ``ArrowBatchBuilder(value_schema)`` compiles the schema once (raises
    :class:`SchemalessValueError` for None); :meth:`build` converts a sequence of values (a
    ``SinkRecordBatch.values`` column, or a slice of one) in one pass per field. Top-level
    null values (tombstones) are refused: a sink decides what a tombstone means before.
    Stateless after construction, so one builder can be shared between threads.
    """

    __slots__ = ("_convert", "_struct", "schema", "unit", "value_schema")

    def __init__(self, value_schema: Schema | None, *, unit: TimeUnit = "ms") -> None:
        self.schema: pa.Schema = arrow_schema(value_schema, unit=unit)
        assert value_schema is not None
        self.value_schema = value_schema
        self.unit = unit
        self._struct = value_schema.type is Type.STRUCT
        if self._struct:
            self._convert = [
                _checked(f.name, f.schema, _compile(f.schema, unit)[1]) for f in value_schema.fields
            ]
        else:
            self._convert = [_checked(VALUE_COLUMN, value_schema, _compile(value_schema, unit)[1])]

    def build(self, values: Sequence[Any]) -> pa.RecordBatch:
        """A RecordBatch of ``values`` (in order). Raises DataError, or the ``TypeError`` /
        ``pyarrow.ArrowException`` of a value that does not fit; :meth:`split_failing` tells
        which ones."""
        if _has_null(values):
            raise DataError("a null value (tombstone) cannot be written as a row")
        if self._struct:
            if not values:
                empty = [pa.array([], type=f.type) for f in self.schema]
                return pa.RecordBatch.from_arrays(empty, schema=self.schema)
            columns = list(zip(*[v._values for v in values], strict=True))
            if len(columns) != len(self._convert):
                raise DataError("a struct value does not match its schema's fields")
            arrays = [c(column) for c, column in zip(self._convert, columns, strict=True)]
        else:
            arrays = [self._convert[0](values)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def split_failing(self, values: Sequence[Any]) -> tuple[list[int], list[tuple[int, Exception]]]:
        """The indices of the values :meth:`build` converts, and ``(index, error)`` for each
        one it cannot. Converts value by value: call it after :meth:`build` failed."""
        good: list[int] = []
        bad: list[tuple[int, Exception]] = []
        for i, value in enumerate(values):
            try:
                if value is not None and self._struct and value.schema != self.value_schema:
                    raise DataError("the struct's schema is not the batch's value schema")
                self.build([value])
            except Exception as exc:  # any conversion error is the record's
                bad.append((i, exc))
            else:
                good.append(i)
        return good, bad
