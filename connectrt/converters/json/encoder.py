"""The JSON encoder compiler: Connect values of a schema -> JSON-able Python for orjson.

Types follow Kafka's JsonConverter: bytes and (by default) decimals as base64 text, maps with
non-string keys as arrays of ``[key, value]`` pairs, logical dates and times as integers. A
value of the wrong type, an out-of-range integer or a non-finite float raises DataError; a
Struct names the field at fault (``(field 'user.age')``).
"""

from __future__ import annotations

import binascii
import decimal
from typing import Any, ClassVar, Final

import orjson

from connectrt.converters.json.compiler import (
    FINITE_FLOAT,
    ClosureCompiler,
    FastPath,
    Fn,
    int_fast_paths,
)
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError

__all__ = ["NULL_REQUIRED_ERROR", "EncoderCompiler", "in_field"]

NULL_REQUIRED_ERROR: Final = (
    "Conversion error: null value for field that is required and has no default value"
)

_b2a = binascii.b2a_base64
_Fragment = orjson.Fragment
_PyDecimal = decimal.Decimal


def in_field(error: DataError, name: str) -> DataError:
    """``error`` re-raised with the field path it happened in, e.g. ``(field 'user.age')``."""
    base = getattr(error, "base_message", str(error))
    path = getattr(error, "field_path", None)
    path = name if path is None else f"{name}.{path}"
    out = DataError(f"{base} (field '{path}')")
    out.base_message = base  # type: ignore[attr-defined]
    out.field_path = path  # type: ignore[attr-defined]
    return out


class EncoderCompiler(ClosureCompiler):
    """Compiles the closures that turn Connect values into what orjson writes."""

    fast_paths: ClassVar[dict[Type, FastPath]] = {
        **int_fast_paths(),
        Type.FLOAT32: FINITE_FLOAT,
        Type.FLOAT64: FINITE_FLOAT,
        Type.BOOLEAN: (bool, None, None),
        Type.STRING: (str, None, None),
    }

    def __init__(self, decimal_numeric: bool, replace_null: bool) -> None:
        super().__init__(replace_null)
        self.decimal_numeric = decimal_numeric

    def default_result(self, schema: Schema, nonnull: Fn) -> Any:
        return nonnull(schema.default)

    def null_error(self, schema: Schema) -> str:
        return NULL_REQUIRED_ERROR

    def integer(self, schema: Schema) -> Fn:
        tname = schema.type.name
        lo, hi = INT_RANGES[schema.type]

        def ser_int(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, int):
                raise DataError(f"Invalid type for {tname}: {type(v).__name__}")
            if not lo <= v <= hi:
                raise DataError(f"Invalid value for {tname}: {v} is out of range")
            return int(v)

        return ser_int

    def floating(self, schema: Schema) -> Fn:
        tname = schema.type.name

        def ser_float(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, float | int):
                raise DataError(f"Invalid type for {tname}: {type(v).__name__}")
            try:
                f = float(v)
            except OverflowError as exc:
                raise DataError(f"Invalid value for {tname}: {v} is out of range") from exc
            if f - f != 0.0:
                raise DataError(
                    f"Invalid value for {tname}: {f} (NaN and infinity cannot be written "
                    "as JSON numbers)"
                )
            return f

        return ser_float

    def boolean(self, schema: Schema) -> Fn:
        def ser_bool(v: Any) -> Any:
            if v is True or v is False:
                return v
            raise DataError(f"Invalid type for BOOLEAN: {type(v).__name__}")

        return ser_bool

    def string(self, schema: Schema) -> Fn:
        def ser_str(v: Any) -> Any:
            if isinstance(v, str):
                return str(v)
            raise DataError(f"Invalid type for STRING: {type(v).__name__}")

        return ser_str

    def binary(self, schema: Schema) -> Fn:
        def ser_bytes(v: Any) -> Any:
            if isinstance(v, bytes | bytearray | memoryview):
                return _b2a(v, newline=False).decode("ascii")
            raise DataError(f"Invalid type for bytes type: {type(v).__name__}")

        return ser_bytes

    def array(self, schema: Schema) -> Fn:
        assert schema.value_schema is not None
        item = self.compile(schema.value_schema)

        def ser_array(v: Any) -> Any:
            if type(v) is not list and not isinstance(v, list | tuple):
                raise DataError(f"Invalid type for ARRAY: {type(v).__name__}")
            return [item(x) for x in v]

        return ser_array

    def mapping(self, schema: Schema) -> Fn:
        assert schema.key_schema is not None and schema.value_schema is not None
        kf = self.compile(schema.key_schema)
        vf = self.compile(schema.value_schema)
        if schema.key_schema.type is Type.STRING:

            def ser_map_obj(v: Any) -> Any:
                if not isinstance(v, dict):
                    raise DataError(f"Invalid type for MAP: {type(v).__name__}")
                return {kf(k): vf(x) for k, x in v.items()}

            return ser_map_obj

        def ser_map_pairs(v: Any) -> Any:
            if not isinstance(v, dict):
                raise DataError(f"Invalid type for MAP: {type(v).__name__}")
            return [[kf(k), vf(x)] for k, x in v.items()]

        return ser_map_pairs

    def struct(self, schema: Schema) -> Fn:
        names = tuple(f.name for f in schema.fields)
        fns = tuple(self.compile(f.schema) for f in schema.fields)

        def ser_struct(v: Any) -> Any:
            if type(v) is not Struct and not isinstance(v, Struct):
                raise DataError(f"Invalid type for STRUCT: {type(v).__name__}")
            s = v._schema
            if s is not schema and s != schema and not s.equals_ignoring_default(schema):
                raise DataError("Mismatching schema.")
            try:
                return {n: f(x) for n, f, x in zip(names, fns, v._values, strict=True)}
            except DataError:
                # Slow path, only on failure: find the field and name it in the error.
                for n, f, x in zip(names, fns, v._values, strict=True):
                    try:
                        f(x)
                    except DataError as inner:
                        raise in_field(inner, n) from None
                raise

        return ser_struct

    def logical_type(self, schema: Schema, lname: str) -> Fn:
        if lname == logical.Decimal.LOGICAL_NAME:
            return self._decimal(schema)
        if lname == logical.Timestamp.LOGICAL_NAME:
            ts_from = logical.Timestamp.from_logical
            lo, hi = INT_RANGES[Type.INT64]

            def ser_timestamp(v: Any) -> Any:
                ms = ts_from(schema, v)
                if not lo <= ms <= hi:  # pragma: no cover - datetime's range is narrower
                    raise DataError(f"Timestamp {v!r} is out of range")
                return ms

            return ser_timestamp
        # Date or Time: days since the epoch or milliseconds since midnight, both within INT32.
        date_or_time = logical.Date if lname == logical.Date.LOGICAL_NAME else logical.Time
        from_logical = date_or_time.from_logical

        def ser_date_or_time(v: Any) -> Any:
            return from_logical(schema, v)

        return ser_date_or_time

    def _decimal(self, schema: Schema) -> Fn:
        """A Decimal as a JSON number (``decimal.format=NUMERIC``) or as base64 bytes."""
        scale = logical.Decimal.scale(schema)
        rescale = logical.Decimal.rescale
        if self.decimal_numeric:

            def ser_decimal_numeric(v: Any) -> Any:
                if not isinstance(v, _PyDecimal):
                    raise DataError(
                        f"Invalid type for Decimal, expected Decimal but was {type(v).__name__}"
                    )
                return _Fragment(str(rescale(v, scale)))

            return ser_decimal_numeric
        from_logical = logical.Decimal.from_logical

        def ser_decimal_b64(v: Any) -> Any:
            if not isinstance(v, _PyDecimal):
                raise DataError(
                    f"Invalid type for Decimal, expected Decimal but was {type(v).__name__}"
                )
            return _b2a(from_logical(schema, v), newline=False).decode("ascii")

        return ser_decimal_b64
