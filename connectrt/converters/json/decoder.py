"""The JSON decoder compiler: parsed JSON of a schema -> Connect values.

Reads are type-checked (Kafka's Jackson accessors coerce; here a mismatch raises DataError
naming the JSON kind found), with Kafka's results where its reader gives a value: integers
outside their type's range wrap as Java's casts do, FLOAT32 values are rounded to float32
(``1e39`` is +inf), -0.0 reads as 0.0 (Kafka parses floats as ``BigDecimal``), the strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` Kafka writes for non-finite floats read as 0.0
(as Kafka reads them), NUMERIC decimals keep the scale they were written with, and Date, Time
and Timestamp values Python's ``datetime`` cannot hold read as
:class:`~connectrt.data.logical.RawLogical`. A number the fast parser could not read exactly
(a NUMERIC decimal as a float, an integer beyond 64 bits) raises :class:`NeedExact`: the
converter then parses the message again with an exact parser.
"""

from __future__ import annotations

import binascii
import decimal
import math
from typing import Any, ClassVar, Final

from connectrt.converters.json.compiler import (
    ClosureCompiler,
    FastPath,
    Fn,
    checked,
    int_fast_paths,
    is_bool,
    same,
)
from connectrt.converters.json.java_text import round_float32
from connectrt.data import logical
from connectrt.data.logical import RawLogical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError

__all__ = ["DecoderCompiler", "NeedExact", "json_kind", "wrap_int"]

_a2b = binascii.a2b_base64
_PyDecimal = decimal.Decimal
_TWO_63: Final = 2.0**63
_MS_PER_DAY: Final = 86_400_000
#: What Kafka writes for non-finite floats; its reader gives 0.0 for them (a text node's
#: ``doubleValue()``).
_NON_FINITE_TEXT: Final = frozenset({"NaN", "Infinity", "-Infinity"})

_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}

# Logical types held in a JSON integer: (to_logical, the error's "Invalid type for ..." part).
_INT_BACKED: Final[dict[str, tuple[Any, str]]] = {
    logical.Date.LOGICAL_NAME: (
        logical.Date.to_logical,
        "Date, underlying representation should be integer",
    ),
    logical.Time.LOGICAL_NAME: (
        logical.Time.to_logical,
        "Time, underlying representation should be integer",
    ),
    logical.Timestamp.LOGICAL_NAME: (
        logical.Timestamp.to_logical,
        "Timestamp, underlying representation should be integral",
    ),
}


class NeedExact(Exception):
    """A NUMERIC decimal, or an integer beyond 64 bits, arrived as a float: the message must be
    re-parsed exactly."""


def wrap_int(v: int, bits: int) -> int:
    """``v`` cut to its low ``bits`` bits, two's complement (Java's narrowing casts)."""
    half = 1 << (bits - 1)
    return ((v + half) & ((half << 1) - 1)) - half


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value (``NUMBER``, ``STRING``, ...) for error messages."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int | float | _PyDecimal):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "OBJECT"
    return type(value).__name__


def _json_kind_of(v: Any) -> str:
    return f"JSON {json_kind(v)}"


def _is_str(v: Any) -> bool:
    return type(v) is str


def _unb64(text: str) -> bytes:
    try:
        return _a2b(text, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"Invalid base64 bytes value: {exc}") from exc


class DecoderCompiler(ClosureCompiler):
    """Compiles the closures that turn parsed JSON into Connect values."""

    fast_paths: ClassVar[dict[Type, FastPath]] = {
        **int_fast_paths(),
        Type.BOOLEAN: (bool, None, None),
        Type.STRING: (str, None, None),
    }

    def default_result(self, schema: Schema, nonnull: Fn) -> Any:
        return schema.default

    def null_error(self, schema: Schema) -> str:
        return f"Invalid null value for required {schema.type.name} field"

    def integer(self, schema: Schema) -> Fn:
        tname = schema.type.name
        lo, hi = INT_RANGES[schema.type]
        bits = _BITS[schema.type]

        def de_int(v: Any) -> Any:
            if type(v) is int:
                return v if lo <= v <= hi else wrap_int(v, bits)
            if type(v) is float and not -_TWO_63 <= v < _TWO_63:
                raise NeedExact  # an integer beyond 64 bits: orjson gave a float
            raise DataError(f"Invalid type for {tname}: JSON {json_kind(v)}")

        return de_int

    def floating(self, schema: Schema) -> Fn:
        tname = schema.type.name
        float32 = schema.type is Type.FLOAT32

        def de_float(v: Any) -> Any:
            tv = type(v)
            if tv is float:
                f = v + 0.0  # -0.0 -> 0.0
            elif tv is int or tv is _PyDecimal:
                try:
                    f = float(v) + 0.0
                except OverflowError:
                    f = math.inf if v > 0 else -math.inf
            elif tv is str and v in _NON_FINITE_TEXT:
                return 0.0
            else:
                raise DataError(f"Invalid type for {tname}: JSON {json_kind(v)}")
            return round_float32(f) if float32 else f

        return de_float

    def boolean(self, schema: Schema) -> Fn:
        return checked("BOOLEAN", is_bool, same, _json_kind_of)

    def string(self, schema: Schema) -> Fn:
        return checked("STRING", _is_str, same, _json_kind_of)

    def binary(self, schema: Schema) -> Fn:
        return checked("BYTES", _is_str, _unb64, _json_kind_of)

    def array(self, schema: Schema) -> Fn:
        assert schema.value_schema is not None
        item = self.compile(schema.value_schema)

        def de_array(v: Any) -> Any:
            if type(v) is not list:
                raise DataError(
                    f"Arrays should be encoded as JSON arrays, but found {json_kind(v)}"
                )
            return [item(x) for x in v]

        return de_array

    def mapping(self, schema: Schema) -> Fn:
        kf, vf = self.compile_entries(schema)
        if schema.key_schema is not None and schema.key_schema.type is Type.STRING:

            def de_map_obj(v: Any) -> Any:
                if type(v) is not dict:
                    raise DataError(
                        "Maps with string fields should be encoded as JSON objects, but "
                        f"found {json_kind(v)}"
                    )
                return {kf(k): vf(x) for k, x in v.items()}

            return de_map_obj

        def de_map_pairs(v: Any) -> Any:
            if type(v) is not list:
                raise DataError(
                    "Maps with non-string fields should be encoded as JSON array of tuples, "
                    f"but found {json_kind(v)}"
                )
            out: dict[Any, Any] = {}
            for entry in v:
                if type(entry) is not list:
                    raise DataError(
                        "Found invalid map entry instead of array tuple: " + json_kind(entry)
                    )
                if len(entry) != 2:
                    raise DataError(
                        f"Found invalid map entry, expected length 2 but found :{len(entry)}"
                    )
                key = kf(entry[0])
                value = vf(entry[1])
                try:
                    out[key] = value
                except TypeError as exc:
                    raise DataError(f"Map key {key!r} is not hashable in Python") from exc
            return out

        return de_map_pairs

    def struct(self, schema: Schema) -> Fn:
        plan = tuple((f.name, self.compile(f.schema)) for f in schema.fields)
        from_values = Struct._from_values

        def de_struct(v: Any) -> Any:
            if type(v) is not dict:
                raise DataError(
                    f"Structs should be encoded as JSON objects, but found {json_kind(v)}"
                )
            get = v.get
            return from_values(schema, [f(get(n)) for n, f in plan])

        return de_struct

    def logical_type(self, schema: Schema, lname: str) -> Fn:
        if lname == logical.Decimal.LOGICAL_NAME:
            return self._decimal(schema)
        to_logical, expected = _INT_BACKED[lname]
        if lname == logical.Timestamp.LOGICAL_NAME:
            lo, hi = INT_RANGES[Type.INT64]
        elif lname == logical.Time.LOGICAL_NAME:
            lo, hi = 0, _MS_PER_DAY
        else:
            lo, hi = INT_RANGES[Type.INT32]
        is_timestamp = lname == logical.Timestamp.LOGICAL_NAME

        def de_int_backed(v: Any) -> Any:
            if type(v) is not int:
                if is_timestamp and type(v) is float and not -_TWO_63 <= v < _TWO_63:
                    raise NeedExact
                raise DataError(f"Invalid type for {expected} but was {json_kind(v)}")
            if is_timestamp and not lo <= v <= hi:
                v = wrap_int(v, 64)  # Kafka reads a wider integer's low 64 bits
            elif not lo <= v <= hi:
                lo32, hi32 = INT_RANGES[Type.INT32]
                if lname == logical.Time.LOGICAL_NAME and lo32 <= v <= hi32:
                    raise DataError(
                        "Time values must use number of milliseconds greater than 0 and less "
                        "than 86400000"
                    )
                raise DataError(f"Invalid type for {expected} but was {json_kind(v)}")
            try:
                return to_logical(schema, v)
            except DataError:
                return RawLogical(v)  # beyond datetime's range, or the Time 24:00

        return de_int_backed

    def _decimal(self, schema: Schema) -> Fn:
        """A Decimal from base64 bytes, or from a JSON number exactly as written (floats:
        NeedExact), as Kafka's ``decimalValue()``."""
        to_logical = logical.Decimal.to_logical

        def de_decimal(v: Any) -> Any:
            tv = type(v)
            if tv is str:
                try:
                    return to_logical(schema, _a2b(v, strict_mode=True))
                except (binascii.Error, ValueError, DataError) as exc:
                    raise DataError("Invalid bytes for Decimal field") from exc
            if tv is int or tv is _PyDecimal:
                d = _PyDecimal(v)
                return d.copy_abs() if d.is_zero() else d  # BigDecimal has no -0
            if tv is float:
                raise NeedExact
            raise DataError(
                "Invalid type for Decimal, underlying representation should be numeric or "
                f"bytes but was {json_kind(v)}"
            )

        return de_decimal
