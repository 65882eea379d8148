"""The JSON encoder compiler: Connect values of a schema -> JSON-able Python for orjson.

Types follow Kafka's JsonConverter: bytes and (by default) decimals as base64 text, maps with
non-string keys as arrays of ``[key, value]`` pairs, logical dates and times as integers,
floats as Java's text (:mod:`~connectrt.converters.json.java_text`), NaN and the infinities
as Jackson's strings. A value of the wrong type (an ``int`` for a float schema included) or an
out-of-range integer raises DataError; a Struct names the field at fault
(``(field 'user.age')``).
"""

from __future__ import annotations

import binascii
import decimal
from typing import Any, ClassVar, Final

import orjson

from connectrt.converters.json.compiler import (
    ClosureCompiler,
    FastPath,
    Fn,
    checked,
    int_fast_paths,
    is_bool,
    same,
)
from connectrt.converters.json.java_text import (
    JAVA_NON_FINITE,
    double_text,
    float_text,
    round_float32,
)
from connectrt.data import logical
from connectrt.data.logical import RawLogical
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
_NON_FINITE: Final = JAVA_NON_FINITE
_MS_PER_DAY: Final = 86_400_000


def _type_name(v: Any) -> str:
    return type(v).__name__


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_binary(v: Any) -> bool:
    return isinstance(v, bytes | bytearray | memoryview)


def _b64(v: bytes | bytearray | memoryview) -> str:
    return _b2a(v, newline=False).decode("ascii")


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
        # Positive doubles orjson writes as Java does (the rest take the closure).
        Type.FLOAT64: (float, 1e-3, 9999999.999999998),
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
        """Floats as Java writes them: FLOAT32 as ``Float.toString`` of the float32 value,
        FLOAT64 as ``Double.toString`` (orjson's own text where the two agree), NaN and the
        infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. An ``int``
        raises, as Kafka's ``(Float) value`` cast does."""
        tname = schema.type.name

        def as_float(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, float):
                raise DataError(f"Invalid type for {tname}: {type(v).__name__}")
            return float(v)

        if schema.type is Type.FLOAT32:

            def ser_float32(v: Any) -> Any:
                f = round_float32(v if type(v) is float else as_float(v))
                if f - f != 0.0:
                    return "NaN" if f != f else _NON_FINITE[f]
                return _Fragment(float_text(f))

            return ser_float32

        def ser_float64(v: Any) -> Any:
            if type(v) is not float:
                v = as_float(v)
            if 1e-3 <= v < 1e7 or -1e7 < v <= -1e-3 or v == 0.0:
                return v  # orjson writes these as Java does
            if v - v != 0.0:
                return "NaN" if v != v else _NON_FINITE[v]
            return _Fragment(double_text(v))

        return ser_float64

    def boolean(self, schema: Schema) -> Fn:
        return checked("BOOLEAN", is_bool, same, _type_name)

    def string(self, schema: Schema) -> Fn:
        return checked("STRING", _is_str, str, _type_name)  # str(): a subclass as a str

    def binary(self, schema: Schema) -> Fn:
        return checked("bytes type", _is_binary, _b64, _type_name)

    def array(self, schema: Schema) -> Fn:
        assert schema.value_schema is not None
        item = self.compile(schema.value_schema)

        def ser_array(v: Any) -> Any:
            if type(v) is not list and not isinstance(v, list | tuple):
                raise DataError(f"Invalid type for ARRAY: {type(v).__name__}")
            return [item(x) for x in v]

        return ser_array

    def mapping(self, schema: Schema) -> Fn:
        kf, vf = self.compile_entries(schema)
        if schema.key_schema is not None and schema.key_schema.type is Type.STRING:

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
                ms = int(v) if type(v) is RawLogical else ts_from(schema, v)
                if not lo <= ms <= hi:
                    raise DataError(f"Timestamp {v!r} is out of range")
                return ms

            return ser_timestamp
        # Date: days since the epoch; Time: milliseconds since midnight, 24:00 included.
        is_date = lname == logical.Date.LOGICAL_NAME
        from_logical = logical.Date.from_logical if is_date else logical.Time.from_logical
        lo, hi = INT_RANGES[Type.INT32] if is_date else (0, _MS_PER_DAY)

        def ser_date_or_time(v: Any) -> Any:
            if type(v) is not RawLogical:
                return from_logical(schema, v)
            if not lo <= v <= hi:
                raise DataError(f"{lname.rsplit('.', 1)[-1]} value {v!r} is out of range")
            return int(v)

        return ser_date_or_time

    def _decimal(self, schema: Schema) -> Fn:
        """A Decimal as a JSON number as it is (``decimal.format=NUMERIC``), or as base64
        bytes of its unscaled value, which needs the schema's scale exactly (as Kafka's
        ``Decimal.fromLogical``)."""
        scale = logical.Decimal.scale(schema)

        def check(v: Any) -> Any:
            if not isinstance(v, _PyDecimal):
                raise DataError(
                    f"Invalid type for Decimal, expected Decimal but was {type(v).__name__}"
                )
            if not v.is_finite():
                raise DataError(f"Invalid Decimal value: {v}")
            return v

        if self.decimal_numeric:

            def ser_decimal_numeric(v: Any) -> Any:
                v = check(v)
                return _Fragment(str(v.copy_abs() if v.is_zero() else v))  # BigDecimal has no -0

            return ser_decimal_numeric
        from_logical = logical.Decimal.from_logical

        def ser_decimal_b64(v: Any) -> Any:
            if check(v).as_tuple().exponent != -scale:
                raise DataError("BigDecimal has mismatching scale value for given Decimal schema")
            return _b64(from_logical(schema, v))

        return ser_decimal_b64
