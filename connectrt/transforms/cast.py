"""Cast: change the type of fields, or of the whole key or value (Kafka's ``Cast$Key/$Value``).

``spec`` is either one type (cast the whole key/value) or ``field:type`` pairs (cast top-level
fields of a Struct or map). Target types: ``int8, int16, int32, int64, float32, float64,
boolean, string``. Inputs may be any of those, bytes (to string only, base64), Decimal, and the
Date/Time/Timestamp logical types (to their integer encoding, or to an ISO-8601 string).

Numeric narrowing follows Java: floats are truncated toward zero and integers wrap to the
target width (``300`` cast to ``int8`` is ``44``); strings are parsed strictly.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
import struct as _struct
from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.logical import Date, Time, Timestamp, logical_name
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    copy_schema_basics,
    field_value,
    infer_type,
    require_map,
    require_struct,
    require_struct_schema,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["Cast", "CastKey", "CastValue"]

SPEC = "spec"
_PURPOSE = "cast types"

_OUTPUT_TYPES = {
    "int8": Type.INT8,
    "int16": Type.INT16,
    "int32": Type.INT32,
    "int64": Type.INT64,
    "float32": Type.FLOAT32,
    "float64": Type.FLOAT64,
    "boolean": Type.BOOLEAN,
    "string": Type.STRING,
}
_INPUT_TYPES = frozenset(_OUTPUT_TYPES.values()) | {Type.BYTES}
_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_FLOAT32_MAX = 3.4028234663852886e38
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def parse_spec(spec: list[str]) -> dict[str | None, Type]:
    """``["f:int8", ...]`` or ``["int8"]`` -> field (None = whole value) -> target type."""
    casts: dict[str | None, Type] = {}
    for mapping in spec:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigError(
                f"Invalid value {','.join(spec)} for configuration {SPEC}: "
                f"Invalid cast mapping: {mapping}",
                SPEC,
                spec,
            )
        if len(parts) == 1:
            field: str | None = None
            type_name = parts[0].strip()
            if len(spec) > 1:
                raise ConfigError(
                    f"Invalid value {','.join(spec)} for configuration {SPEC}: Cast "
                    "transformations that specify a type to cast to for the entire value must "
                    "have only one type",
                    SPEC,
                    spec,
                )
        else:
            field, type_name = parts[0].strip(), parts[1].strip()
        target = _OUTPUT_TYPES.get(type_name.lower())
        if target is None:
            raise ConfigError(
                f"Invalid value {','.join(spec)} for configuration {SPEC}: Cast transformation "
                f"does not support casting to {type_name}; supported types are "
                f"{', '.join(_OUTPUT_TYPES)}",
                SPEC,
                spec,
            )
        casts[field] = target
    return casts


def _validate_spec(name: str, value: Any) -> None:
    if not value or not [v for v in value if v]:
        raise ConfigError("Must specify at least one field to cast.", name, value)
    parse_spec(value)


def _wrap(n: int, bits: int) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


def _saturate(f: float, bits: int) -> int:
    if math.isnan(f):
        return 0
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if f >= hi:
        return hi
    if f <= lo:
        return lo
    return int(f)


def _to_float32(f: float) -> float:
    if math.isnan(f) or math.isinf(f):
        return f
    if abs(f) > _FLOAT32_MAX:
        return math.copysign(math.inf, f)
    return float(_struct.unpack("f", _struct.pack("f", f))[0])


def java_double_str(f: float, float32: bool = False) -> str:
    """Java's ``Double.toString`` / ``Float.toString`` for a float."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if float32:
        text = repr(f)
        for precision in range(1, 10):
            candidate = f"{f:.{precision}g}"
            if _to_float32(float(candidate)) == f:
                text = candidate
                break
    else:
        text = repr(f)
    d = decimal.Decimal(text)
    if d == 0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    if 1e-3 <= abs(f) < 1e7:
        plain = format(d, "f")
        if "." not in plain:
            plain += ".0"
        plain = plain.rstrip("0")
        return plain + "0" if plain.endswith(".") else plain
    sign, digits, exponent = d.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    exp10 = exponent + len(digits) - 1
    frac = mantissa[1:] or "0"
    return f"{'-' if sign else ''}{mantissa[0]}.{frac}E{exp10}"


def _format_temporal(value: dt.date | dt.time) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, dt.date):
        return value.strftime("%Y-%m-%d")
    return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _encode_temporal(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return Timestamp.from_logical(None, value)
    if isinstance(value, dt.date):
        return Date.from_logical(None, value)
    if isinstance(value, dt.time):
        return Time.from_logical(None, value)
    return value


def cast_value(schema: Schema | None, value: Any, target: Type, where: str) -> Any:
    """Cast one value (described by ``schema``, or inferred from Python when None)."""
    if value is None:
        return None
    source = infer_type(value) if schema is None else schema.type
    if source is None or source not in _INPUT_TYPES:
        found = type(value).__name__ if source is None else source.name
        raise DataError(
            f"{where}: Cast transformation does not support casting from {found}; supported "
            f"input types are {', '.join(t.value for t in sorted(_INPUT_TYPES, key=str))}"
        )
    if target is Type.STRING:
        return _cast_to_string(schema, value)
    value = _encode_temporal(value)
    try:
        if target in _BITS:
            return _cast_to_int(value, target, where)
        if target in (Type.FLOAT32, Type.FLOAT64):
            if isinstance(value, bool):
                f = 1.0 if value else 0.0
            elif isinstance(value, int | float | decimal.Decimal):
                f = float(value)
            elif isinstance(value, str):
                f = float(value.strip().rstrip("fFdD"))
            else:
                raise DataError(
                    f"{where}: Unexpected type in Cast transformation: {type(value).__name__}"
                )
            return _to_float32(f) if target is Type.FLOAT32 else f
        # BOOLEAN
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float | decimal.Decimal):
            return _integral(value, 64) != 0
        if isinstance(value, str):
            return value.strip().lower() == "true"
        raise DataError(f"{where}: Unexpected type in Cast transformation: {type(value).__name__}")
    except (ValueError, decimal.InvalidOperation) as exc:
        raise DataError(
            f"{where}: Value ({value}) was out of range for requested data type {target.value}"
        ) from exc


def _integral(value: int | float | decimal.Decimal, bits: int) -> int:
    if isinstance(value, float):
        return _wrap(_saturate(value, 64 if bits == 64 else 32), bits)
    return _wrap(int(value), bits)


def _cast_to_int(value: Any, target: Type, where: str) -> int:
    bits = _BITS[target]
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int | float | decimal.Decimal):
        return _integral(value, bits)
    if isinstance(value, str):
        if _INT_TEXT.fullmatch(value) is None:
            raise ValueError(value)
        n = int(value)
        if not -(2 ** (bits - 1)) <= n < 2 ** (bits - 1):
            raise ValueError(value)
        return n
    raise DataError(f"{where}: Unexpected type in Cast transformation: {type(value).__name__}")


def _cast_to_string(schema: Schema | None, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.date | dt.time):
        return _format_temporal(value)
    if isinstance(value, float):
        return java_double_str(value, float32=schema is not None and schema.type is Type.FLOAT32)
    if isinstance(value, decimal.Decimal):
        return str(value)
    return str(value)


_BUILDERS = {
    Type.INT8: SchemaBuilder.int8,
    Type.INT16: SchemaBuilder.int16,
    Type.INT32: SchemaBuilder.int32,
    Type.INT64: SchemaBuilder.int64,
    Type.FLOAT32: SchemaBuilder.float32,
    Type.FLOAT64: SchemaBuilder.float64,
    Type.BOOLEAN: SchemaBuilder.boolean,
    Type.STRING: SchemaBuilder.string,
}


class Cast(PartRewrite[R]):
    """Cast fields or the whole key/value to another primitive type. Use CastKey/CastValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            SPEC,
            ConfigType.LIST,
            validator=_validate_spec,
            importance=Importance.HIGH,
            documentation="List of fields and the type to cast them to of the form "
            "field1:type,field2:type to cast fields of Maps or Structs. A single type to cast "
            "the entire value. Valid types are int8, int16, int32, int64, float32, float64, "
            "boolean, and string. Note that binary fields can only be cast to string.",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._casts = parse_spec(parsed[SPEC])
        self._whole = self._casts.get(None)
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if value is None:
            return None
        name = self.smt_name()
        if schema is None:
            if self._whole is not None:
                return None, cast_value(None, value, self._whole, name)
            data = require_map(value, _PURPOSE, name)
            updated = dict(data)
            for field, target in self._casts.items():
                assert field is not None
                updated[field] = cast_value(None, data.get(field), target, f"{name} field {field}")
            return None, updated
        updated_schema = self._updated_schema(schema)
        if self._whole is not None:
            return updated_schema, cast_value(schema, value, self._whole, name)
        struct = require_struct(value, _PURPOSE, name)
        out = Struct(updated_schema)
        for f in struct.schema.fields:
            v = field_value(struct, f, self._replace_null)
            field_target = self._casts.get(f.name)
            if field_target is not None:
                v = cast_value(f.schema, v, field_target, f"{name} field {f.name}")
            out.put(f.name, v)
        return updated_schema, out

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        name = self.smt_name()
        if self._whole is not None:
            builder = _BUILDERS[self._whole]()
            if logical_name(schema) is None:
                copy_schema_basics(schema, builder)
        else:
            require_struct_schema(schema, _PURPOSE, name)
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for f in schema.fields:
                target = self._casts.get(f.name)
                if target is None:
                    builder.field(f.name, f.schema)
                    continue
                fb = _BUILDERS[target]()
                if f.schema.optional:
                    fb.optional()
                if f.schema.default is not None:
                    fb.default_value(
                        cast_value(f.schema, f.schema.default, target, f"{name} field {f.name}")
                    )
                builder.field(f.name, fb)
        if schema.optional:
            builder.optional()
        if schema.default is not None:
            builder.default_value(cast_value(schema, schema.default, builder.type, name))
        return self._cache.put(schema, builder.build())


class CastKey(Cast[R], key=True):
    """``org.apache.kafka.connect.transforms.Cast$Key``."""


class CastValue(Cast[R], key=False):
    """``org.apache.kafka.connect.transforms.Cast$Value``."""
