"""JsonConverter: Kafka Connect's JSON wire format, byte-compatible with
``org.apache.kafka.connect.json.JsonConverter``.

With ``schemas.enable=true`` (the default) every non-tombstone message is an envelope
``{"schema":S,"payload":P}``; otherwise the bare payload. Schema JSON, type names (FLOAT32 is
``"float"``, FLOAT64 ``"double"``), key order, base64 bytes, map-as-array-of-pairs for
non-string keys and the logical types all follow Kafka's converter. Output is compact JSON.

Performance: for each schema the converter compiles (once, LRU-cached by
``schemas.cache.size``) a serializer closure tree, the schema's JSON bytes and a deserializer
closure tree; the envelope is built by byte concatenation. On read, a message whose schema
text equals the previous message's is recognised by a prefix compare and only its payload is
parsed.

Deliberate differences from Kafka, all on inputs Kafka handles poorly:

* Non-finite floats (NaN, +/-inf) raise DataError on write; Kafka writes them as the strings
  ``"NaN"``/``"Infinity"`` that it then reads back as 0.0.
* Reads are type-checked (Kafka's Jackson accessors coerce, e.g. a JSON string read as INT32
  gives 0); a mismatch raises DataError.
* FLOAT32 values stay Python floats (double precision) on read; ``repr`` is used on write,
  which matches Java's ``Float.toString`` for values that came from decimal literals.
  Large/small floats use Python's exponent syntax (``1e+16``) rather than Java's (``1.0E16``):
  the same JSON number, different bytes.
* Decimal values may have a different exponent than the schema's scale if they can be
  rescaled exactly (``Decimal("1.5")`` at scale 2 is written as 1.50); NUMERIC decimals read
  with more digits than the scale are returned as-is, as Kafka does.
* Messages carrying NUMERIC decimals are re-parsed with an exact (slower) parser so that no
  precision is lost; base64 decimals take the fast path.
* Schemaless integers beyond 64 bits are rejected on write.

Thread-safety: configure once, then use from a single task thread (the caches are not locked).
"""

from __future__ import annotations

import binascii
import decimal
import json as _stdjson
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from connectrt.api.converter import (
    ConfigKeys,
    Converter,
    HeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import ConfigError, DataError

__all__ = ["CONFIG_KEYS", "ENVELOPE_ERROR", "NULL_REQUIRED_ERROR", "JsonConverter"]

SCHEMAS_ENABLE_CONFIG: Final = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG: Final = "replace.null.with.default"
CONVERTER_TYPE_CONFIG: Final = "converter.type"

CONFIG_KEYS: ConfigKeys = {
    SCHEMAS_ENABLE_CONFIG: (
        "BOOLEAN",
        True,
        "Include schemas within each of the serialized values and keys.",
    ),
    SCHEMAS_CACHE_SIZE_CONFIG: (
        "INT",
        1000,
        "The maximum number of schemas that can be cached in this converter instance.",
    ),
    DECIMAL_FORMAT_CONFIG: (
        "STRING",
        "BASE64",
        "Controls which format this converter will serialize decimals in. This value is case "
        "insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
    ),
    REPLACE_NULL_WITH_DEFAULT_CONFIG: (
        "BOOLEAN",
        True,
        "Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    ),
    CONVERTER_TYPE_CONFIG: (
        "STRING",
        None,
        "How this converter will be used: 'key', 'value' or 'header' (set by the runtime).",
    ),
}

ENVELOPE_ERROR: Final = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
NULL_REQUIRED_ERROR: Final = (
    "Conversion error: null value for field that is required and has no default value"
)

_TYPE_NAMES: Final[dict[Type, str]] = {
    Type.INT8: "int8",
    Type.INT16: "int16",
    Type.INT32: "int32",
    Type.INT64: "int64",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
    Type.ARRAY: "array",
    Type.MAP: "map",
    Type.STRUCT: "struct",
}
_NAME_TYPES: Final[dict[str, Type]] = {v: k for k, v in _TYPE_NAMES.items()}

_RAISE: Final[Any] = object()  # null-handling marker: a null value is an error
_b2a = binascii.b2a_base64
_a2b = binascii.a2b_base64
_dumps = orjson.dumps
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_JSONEncodeError = orjson.JSONEncodeError
_Fragment = orjson.Fragment
_PyDecimal = decimal.Decimal
_new_sav = tuple.__new__  # SchemaAndValue without NamedTuple's Python-level __new__

Fn = Callable[[Any], Any]


class _NeedExact(Exception):
    """A NUMERIC decimal arrived as a float; the message must be re-parsed exactly."""


def _json_kind(value: Any) -> str:
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


def _b64(value: bytes | bytearray | memoryview) -> str:
    return _b2a(value, newline=False).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return _a2b(text, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"Invalid base64 bytes value: {exc}") from exc


class _LRU:
    """A small LRU map. ``maxsize`` 0 disables caching."""

    __slots__ = ("_data", "_maxsize")

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        data = self._data
        value = data.get(key)
        if value is not None:
            data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        if self._maxsize <= 0:
            return
        data = self._data
        data[key] = value
        data.move_to_end(key)
        if len(data) > self._maxsize:
            data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


# --------------------------------------------------------------------------------------------
# Compilation of per-schema serializers / deserializers
# --------------------------------------------------------------------------------------------


# Fast-path kinds for leaf (de)serializers; anything else goes through the slow closure.
_FAST_SER: Final[dict[Type, str]] = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "int",
    Type.FLOAT32: "finite_float",
    Type.FLOAT64: "finite_float",
    Type.BOOLEAN: "bool",
    Type.STRING: "str",
}
_FAST_DE: Final[dict[Type, str]] = {**_FAST_SER, Type.FLOAT32: "float", Type.FLOAT64: "float"}


def _fold(
    schema: Schema, kinds: dict[Type, str], slow: Fn, null_result: Any, null_error: str
) -> Fn:
    """One closure per value: an exact-type fast path, null handling, then ``slow``.

    Folding these into a single function saves a Python call per field on the hot path.
    """
    kind = None if logical.logical_name(schema) is not None else kinds.get(schema.type)
    if kind == "int":
        lo, hi = INT_RANGES[schema.type]

        def int_fn(v: Any) -> Any:
            if type(v) is int and lo <= v <= hi:
                return v
            if v is None:
                if null_result is _RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return int_fn
    if kind == "str":

        def str_fn(v: Any) -> Any:
            if type(v) is str:
                return v
            if v is None:
                if null_result is _RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return str_fn
    if kind == "finite_float":

        def finite_float_fn(v: Any) -> Any:
            if type(v) is float and v - v == 0.0:
                return v
            if v is None:
                if null_result is _RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return finite_float_fn
    if kind == "float":

        def float_fn(v: Any) -> Any:
            if type(v) is float:
                return v
            if v is None:
                if null_result is _RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return float_fn
    if kind == "bool":

        def bool_fn(v: Any) -> Any:
            if v is True or v is False:
                return v
            if v is None:
                if null_result is _RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return bool_fn

    def any_fn(v: Any) -> Any:
        if v is None:
            if null_result is _RAISE:
                raise DataError(null_error)
            return null_result
        return slow(v)

    return any_fn


class _Compiler:
    """Builds closure trees for one converter configuration."""

    def __init__(self, decimal_numeric: bool, replace_null: bool) -> None:
        self.decimal_numeric = decimal_numeric
        self.replace_null = replace_null

    # -- Connect value -> JSON-able Python ----------------------------------------------------

    def ser(self, schema: Schema) -> Fn:
        """Serializer for ``schema`` including null/default handling."""
        slow = self._ser_nonnull(schema)
        if schema.default is not None and self.replace_null:
            null_result = slow(schema.default)
        elif schema.optional:
            null_result = None
        else:
            null_result = _RAISE
        return _fold(schema, _FAST_SER, slow, null_result, NULL_REQUIRED_ERROR)

    def _ser_nonnull(self, schema: Schema) -> Fn:
        t = schema.type
        tname = t.name
        lname = logical.logical_name(schema)
        if lname is not None:
            return self._ser_logical(schema, lname)
        rng = INT_RANGES.get(t)
        if rng is not None:
            lo, hi = rng

            def ser_int(v: Any) -> Any:
                if isinstance(v, bool) or not isinstance(v, int):
                    raise DataError(f"Invalid type for {tname}: {type(v).__name__}")
                if not lo <= v <= hi:
                    raise DataError(f"Invalid value for {tname}: {v} is out of range")
                return int(v)

            return ser_int
        if t is Type.FLOAT32 or t is Type.FLOAT64:

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
        if t is Type.BOOLEAN:

            def ser_bool(v: Any) -> Any:
                if v is True or v is False:
                    return v
                raise DataError(f"Invalid type for BOOLEAN: {type(v).__name__}")

            return ser_bool
        if t is Type.STRING:

            def ser_str(v: Any) -> Any:
                if isinstance(v, str):
                    return str(v)
                raise DataError(f"Invalid type for STRING: {type(v).__name__}")

            return ser_str
        if t is Type.BYTES:

            def ser_bytes(v: Any) -> Any:
                if isinstance(v, bytes | bytearray | memoryview):
                    return _b2a(v, newline=False).decode("ascii")
                raise DataError(f"Invalid type for bytes type: {type(v).__name__}")

            return ser_bytes
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            item = self.ser(schema.value_schema)

            def ser_array(v: Any) -> Any:
                if type(v) is not list and not isinstance(v, list | tuple):
                    raise DataError(f"Invalid type for ARRAY: {type(v).__name__}")
                return [item(x) for x in v]

            return ser_array
        if t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            kf = self.ser(schema.key_schema)
            vf = self.ser(schema.value_schema)
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
        if t is Type.STRUCT:
            names = tuple(f.name for f in schema.fields)
            fns = tuple(self.ser(f.schema) for f in schema.fields)

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
                            raise _in_field(inner, n) from None
                    raise

            return ser_struct
        raise DataError(f"Unknown schema type: {t}")  # pragma: no cover

    def _ser_logical(self, schema: Schema, lname: str) -> Fn:
        if lname == logical.Decimal.LOGICAL_NAME:
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
        if lname == logical.Date.LOGICAL_NAME:
            date_from = logical.Date.from_logical

            def ser_date(v: Any) -> Any:
                return date_from(schema, v)

            return ser_date
        if lname == logical.Time.LOGICAL_NAME:
            time_from = logical.Time.from_logical

            def ser_time(v: Any) -> Any:
                return time_from(schema, v)

            return ser_time
        ts_from = logical.Timestamp.from_logical
        lo, hi = INT_RANGES[Type.INT64]

        def ser_timestamp(v: Any) -> Any:
            ms = ts_from(schema, v)
            if not lo <= ms <= hi:  # pragma: no cover - datetime's range is narrower
                raise DataError(f"Timestamp {v!r} is out of range")
            return ms

        return ser_timestamp

    # -- parsed JSON -> Connect value ---------------------------------------------------------

    def de(self, schema: Schema) -> Fn:
        """Deserializer for ``schema`` including null/default handling."""
        slow = self._de_nonnull(schema)
        if schema.default is not None and self.replace_null:
            null_result = schema.default
        elif schema.optional:
            null_result = None
        else:
            null_result = _RAISE
        null_error = f"Invalid null value for required {schema.type.name} field"
        return _fold(schema, _FAST_DE, slow, null_result, null_error)

    def _de_nonnull(self, schema: Schema) -> Fn:
        t = schema.type
        tname = t.name
        lname = logical.logical_name(schema)
        if lname is not None:
            return self._de_logical(schema, lname)
        rng = INT_RANGES.get(t)
        if rng is not None:
            lo, hi = rng

            def de_int(v: Any) -> Any:
                if type(v) is int and lo <= v <= hi:
                    return v
                if type(v) is int:
                    raise DataError(f"Invalid value for {tname}: {v} is out of range")
                raise DataError(f"Invalid type for {tname}: JSON {_json_kind(v)}")

            return de_int
        if t is Type.FLOAT32 or t is Type.FLOAT64:

            def de_float(v: Any) -> Any:
                tv = type(v)
                if tv is float:
                    return v
                if tv is int or tv is _PyDecimal:
                    return float(v)
                raise DataError(f"Invalid type for {tname}: JSON {_json_kind(v)}")

            return de_float
        if t is Type.BOOLEAN:

            def de_bool(v: Any) -> Any:
                if v is True or v is False:
                    return v
                raise DataError(f"Invalid type for BOOLEAN: JSON {_json_kind(v)}")

            return de_bool
        if t is Type.STRING:

            def de_str(v: Any) -> Any:
                if type(v) is str:
                    return v
                raise DataError(f"Invalid type for STRING: JSON {_json_kind(v)}")

            return de_str
        if t is Type.BYTES:

            def de_bytes(v: Any) -> Any:
                if type(v) is str:
                    return _unb64(v)
                raise DataError(f"Invalid type for BYTES: JSON {_json_kind(v)}")

            return de_bytes
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            item = self.de(schema.value_schema)

            def de_array(v: Any) -> Any:
                if type(v) is not list:
                    raise DataError(
                        f"Arrays should be encoded as JSON arrays, but found {_json_kind(v)}"
                    )
                return [item(x) for x in v]

            return de_array
        if t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            kf = self.de(schema.key_schema)
            vf = self.de(schema.value_schema)
            if schema.key_schema.type is Type.STRING:

                def de_map_obj(v: Any) -> Any:
                    if type(v) is not dict:
                        raise DataError(
                            "Maps with string fields should be encoded as JSON objects, but "
                            f"found {_json_kind(v)}"
                        )
                    return {kf(k): vf(x) for k, x in v.items()}

                return de_map_obj

            def de_map_pairs(v: Any) -> Any:
                if type(v) is not list:
                    raise DataError(
                        "Maps with non-string fields should be encoded as JSON array of tuples, "
                        f"but found {_json_kind(v)}"
                    )
                out: dict[Any, Any] = {}
                for entry in v:
                    if type(entry) is not list:
                        raise DataError(
                            "Found invalid map entry instead of array tuple: " + _json_kind(entry)
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
        if t is Type.STRUCT:
            plan = tuple((f.name, self.de(f.schema)) for f in schema.fields)
            from_values = Struct._from_values

            def de_struct(v: Any) -> Any:
                if type(v) is not dict:
                    raise DataError(
                        f"Structs should be encoded as JSON objects, but found {_json_kind(v)}"
                    )
                get = v.get
                return from_values(schema, [f(get(n)) for n, f in plan])

            return de_struct
        raise DataError(f"Unknown schema type: {t}")  # pragma: no cover

    def _de_logical(self, schema: Schema, lname: str) -> Fn:
        if lname == logical.Decimal.LOGICAL_NAME:
            scale = logical.Decimal.scale(schema)
            to_logical = logical.Decimal.to_logical
            rescale = logical.Decimal.rescale

            def de_decimal(v: Any) -> Any:
                tv = type(v)
                if tv is str:
                    try:
                        return to_logical(schema, _a2b(v, strict_mode=True))
                    except (binascii.Error, ValueError, DataError) as exc:
                        raise DataError("Invalid bytes for Decimal field") from exc
                if tv is int or tv is _PyDecimal:
                    d = _PyDecimal(v)
                    try:
                        return rescale(d, scale)
                    except DataError:
                        return d  # more digits than the scale: returned as-is, like Kafka
                if tv is float:
                    raise _NeedExact
                raise DataError(
                    "Invalid type for Decimal, underlying representation should be numeric or "
                    f"bytes but was {_json_kind(v)}"
                )

            return de_decimal
        if lname == logical.Date.LOGICAL_NAME:
            date_to = logical.Date.to_logical

            def de_date(v: Any) -> Any:
                if type(v) is not int:
                    raise DataError(
                        "Invalid type for Date, underlying representation should be integer but "
                        f"was {_json_kind(v)}"
                    )
                return date_to(schema, v)

            return de_date
        if lname == logical.Time.LOGICAL_NAME:
            time_to = logical.Time.to_logical

            def de_time(v: Any) -> Any:
                if type(v) is not int:
                    raise DataError(
                        "Invalid type for Time, underlying representation should be integer but "
                        f"was {_json_kind(v)}"
                    )
                return time_to(schema, v)

            return de_time
        ts_to = logical.Timestamp.to_logical

        def de_timestamp(v: Any) -> Any:
            if type(v) is not int:
                raise DataError(
                    "Invalid type for Timestamp, underlying representation should be integral "
                    f"but was {_json_kind(v)}"
                )
            return ts_to(schema, v)

        return de_timestamp

    # -- schemas ----------------------------------------------------------------------------

    def schema_to_json(self, schema: Schema) -> dict[str, Any]:
        """Kafka's ``asJsonSchema``: keys in Kafka's order."""
        t = schema.type
        out: dict[str, Any] = {"type": _TYPE_NAMES[t]}
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            out["items"] = self.schema_to_json(schema.value_schema)
        elif t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            out["keys"] = self.schema_to_json(schema.key_schema)
            out["values"] = self.schema_to_json(schema.value_schema)
        elif t is Type.STRUCT:
            fields = []
            for field in schema.fields:
                entry = self.schema_to_json(field.schema)
                entry["field"] = field.name
                fields.append(entry)
            out["fields"] = fields
        out["optional"] = schema.optional
        if schema.name is not None:
            out["name"] = schema.name
        if schema.version is not None:
            out["version"] = schema.version
        if schema.doc is not None:
            out["doc"] = schema.doc
        if schema.parameters is not None:
            out["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            out["default"] = self._ser_nonnull(schema)(schema.default)
        return out

    def schema_from_json(self, obj: Any) -> Schema | None:
        """Kafka's ``asConnectSchema``."""
        if obj is None:
            return None
        type_name = obj.get("type") if type(obj) is dict else None
        if type(type_name) is not str:
            raise DataError("Schema must contain 'type' field")
        t = _NAME_TYPES.get(type_name)
        if t is None:
            raise DataError("Unknown schema type: " + type_name)
        if t is Type.STRUCT:
            builder = SchemaBuilder.struct()
            fields = obj.get("fields")
            if type(fields) is not list:
                raise DataError('Struct schema\'s "fields" argument is not an array.')
            for field in fields:
                name = field.get("field") if type(field) is dict else None
                if type(name) is not str:
                    raise DataError("Struct schema's field name not specified properly")
                field_schema = self.schema_from_json(field)
                assert field_schema is not None
                builder.field(name, field_schema)
        elif t is Type.ARRAY:
            items = obj.get("items")
            if items is None:
                raise DataError("Array schema did not specify the element type")
            item_schema = self.schema_from_json(items)
            assert item_schema is not None
            builder = SchemaBuilder.array(item_schema)
        elif t is Type.MAP:
            keys = obj.get("keys")
            if keys is None:
                raise DataError("Map schema did not specify the key type")
            values = obj.get("values")
            if values is None:
                raise DataError("Map schema did not specify the value type")
            key_schema = self.schema_from_json(keys)
            value_schema = self.schema_from_json(values)
            assert key_schema is not None and value_schema is not None
            builder = SchemaBuilder.map(key_schema, value_schema)
        else:
            builder = SchemaBuilder(t)
        if obj.get("optional") is True:
            builder.optional()
        else:
            builder.required()
        name = obj.get("name")
        if type(name) is str:
            builder.name(name)
        version = obj.get("version")
        if type(version) is int:
            builder.version(version)
        doc = obj.get("doc")
        if type(doc) is str:
            builder.doc(doc)
        params = obj.get("parameters")
        if type(params) is dict:
            for key, value in params.items():
                if type(value) is not str:
                    raise DataError("Schema parameters must have string values.")
                builder.parameter(key, value)
        default = obj.get("default")
        if default is not None:
            builder.default_value(self._de_nonnull(builder.build())(default))
        return builder.build()


# --------------------------------------------------------------------------------------------
# Schemaless values and lenient parsing
# --------------------------------------------------------------------------------------------


def _schemaless(v: Any) -> Any:
    """Convert a value without a schema to JSON-able Python, inferring the type as Kafka does."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        if v - v != 0.0:
            raise DataError(f"Invalid value {v}: NaN and infinity cannot be written as JSON")
        return v
    if t is dict:
        if all(type(k) is str for k in v):
            return {k: _schemaless(x) for k, x in v.items()}
        return [[_schemaless(k), _schemaless(x)] for k, x in v.items()]
    if t is list or t is tuple:
        return [_schemaless(x) for x in v]
    if isinstance(v, bytes | bytearray | memoryview):
        return _b64(v)
    if isinstance(v, bool):  # pragma: no cover - bool cannot be subclassed
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _schemaless(float(v))
    if isinstance(v, dict):
        return _schemaless(dict(v))
    if isinstance(v, list | tuple):
        return [_schemaless(x) for x in v]
    if isinstance(v, Struct):
        raise DataError("Mismatching schema.")
    raise DataError(f"Python type {t.__name__} does not have corresponding schema type.")


# A JSON string, or leading zeros of a number (not after a digit, '.', exponent or sign).
_LEADING_ZEROS = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])(-?)0+(?=\d)')


def _strip_zeros(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else match.group(1)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard JSON token {name}")


def _decimal_fragment(value: Any) -> Any:
    if isinstance(value, _PyDecimal):
        return _Fragment(str(value))
    raise TypeError


def _lenient_loads(data: bytes, exact: bool) -> Any:
    """Parse JSON allowing leading zeros in numbers; ``exact`` keeps non-integers as Decimal."""
    try:
        text = data.decode("utf-8")
        text = _LEADING_ZEROS.sub(_strip_zeros, text)
        return _stdjson.loads(
            text,
            parse_float=_PyDecimal if exact else float,
            parse_constant=_reject_constant,
        )
    except (ValueError, RecursionError) as exc:
        raise DataError(
            f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
        ) from exc


def _parse(data: bytes) -> Any:
    try:
        return _loads(data)
    except _JSONDecodeError:
        return _lenient_loads(data, exact=False)


# --------------------------------------------------------------------------------------------
# Config helpers
# --------------------------------------------------------------------------------------------


def _config_bool(config: Mapping[str, Any], key: str) -> bool:
    value = config.get(key, CONFIG_KEYS[key][1])
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(
        f"Invalid value {value} for configuration {key}: Expected value to be either true or false",
        key,
        value,
    )


def _config_int(config: Mapping[str, Any], key: str) -> int:
    value = config.get(key, CONFIG_KEYS[key][1])
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"Invalid value {value} for configuration {key}: Not a number of type INT", key, value
        ) from None
    if number < 0:
        raise ConfigError(
            f"Invalid value {value} for configuration {key}: Value must be at least 0", key, value
        )
    return number


# --------------------------------------------------------------------------------------------
# The converter
# --------------------------------------------------------------------------------------------


def _in_field(error: DataError, name: str) -> DataError:
    """``error`` re-raised with the field path it happened in, e.g. ``(field 'user.age')``."""
    base = getattr(error, "base_message", str(error))
    path = getattr(error, "field_path", None)
    path = name if path is None else f"{name}.{path}"
    out = DataError(f"{base} (field '{path}')")
    out.base_message = base  # type: ignore[attr-defined]
    out.field_path = path  # type: ignore[attr-defined]
    return out


class JsonConverter(Converter, HeaderConverter):
    """Kafka Connect's JsonConverter (also usable as a HeaderConverter).

    Configure once with :meth:`configure`, then call the conversion methods from one thread.
    """

    CONFIG_KEYS = CONFIG_KEYS

    def __init__(self) -> None:
        self.configure({})

    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Apply ``config``. ``is_key`` (when given) overrides ``converter.type``."""
        self._schemas_enable = _config_bool(config, SCHEMAS_ENABLE_CONFIG)
        self._replace_null = _config_bool(config, REPLACE_NULL_WITH_DEFAULT_CONFIG)
        cache_size = _config_int(config, SCHEMAS_CACHE_SIZE_CONFIG)
        fmt = config.get(DECIMAL_FORMAT_CONFIG, "BASE64")
        fmt_upper = fmt.strip().upper() if isinstance(fmt, str) else fmt
        if fmt_upper not in ("BASE64", "NUMERIC"):
            raise ConfigError(
                f"Invalid value {fmt} for configuration {DECIMAL_FORMAT_CONFIG}: "
                "String must be one of (case insensitive): BASE64, NUMERIC",
                DECIMAL_FORMAT_CONFIG,
                fmt,
            )
        self._decimal_numeric = fmt_upper == "NUMERIC"
        if is_key is not None:
            self.converter_type: str | None = "key" if is_key else "value"
        else:
            ctype = config.get(CONVERTER_TYPE_CONFIG)
            if ctype is not None and str(ctype).lower() not in ("key", "value", "header"):
                raise ConfigError(
                    f"Invalid value {ctype} for configuration {CONVERTER_TYPE_CONFIG}: "
                    "String must be one of: key, value, header",
                    CONVERTER_TYPE_CONFIG,
                    ctype,
                )
            self.converter_type = None if ctype is None else str(ctype).lower()
        self._compiler = _Compiler(self._decimal_numeric, self._replace_null)
        # Schema -> (serializer, schema JSON bytes)
        self._to_json_cache = _LRU(cache_size)
        # canonical schema JSON bytes -> (Schema, deserializer)
        self._from_json_cache = _LRU(cache_size)
        self._last_ser: tuple[Schema, Fn, bytes] | None = None
        self._last_de: tuple[bytes, Schema, Fn, int] | None = None

    # -- Connect -> bytes -------------------------------------------------------------------

    def _ser_entry(self, schema: Schema) -> tuple[Schema, Fn, bytes]:
        entry: tuple[Schema, Fn, bytes] | None = self._to_json_cache.get(schema)
        if entry is None:
            compiler = self._compiler
            try:
                schema_bytes = _dumps(compiler.schema_to_json(schema))
            except _JSONEncodeError as exc:
                raise DataError(f"Cannot convert schema to JSON: {exc}") from exc
            entry = (schema, compiler.ser(schema), schema_bytes)
            self._to_json_cache.put(schema, entry)
        return entry

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: RawHeaders | None = None,
    ) -> bytes | None:
        """Serialize to JSON bytes; None for a tombstone (no schema and no value)."""
        if schema is None:
            if value is None:
                return None
            try:
                body = _dumps(_schemaless(value))
            except _JSONEncodeError as exc:
                raise DataError(f"Cannot convert value to JSON: {exc}") from exc
            if self._schemas_enable:
                return b'{"schema":null,"payload":' + body + b"}"
            return body
        last = self._last_ser
        if last is None or last[0] is not schema:
            last = self._last_ser = self._ser_entry(schema)
        try:
            body = _dumps(last[1](value))
        except _JSONEncodeError as exc:
            raise DataError(f"Cannot convert value to JSON: {exc}") from exc
        if self._schemas_enable:
            return b'{"schema":' + last[2] + b',"payload":' + body + b"}"
        return body

    # -- bytes -> Connect -------------------------------------------------------------------

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize JSON bytes; None gives ``SchemaAndValue(None, None)``."""
        if data is None:
            return SchemaAndValue(None, None)
        if type(data) is not bytes:
            data = bytes(data)
        if not self._schemas_enable:
            return _new_sav(SchemaAndValue, (None, _parse(data)))
        last = self._last_de
        if last is not None and data.startswith(last[0]) and data.endswith(b"}"):
            try:
                payload = _loads(data[last[3] : -1])
            except _JSONDecodeError:
                pass  # e.g. leading zeros, or not really an envelope: take the slow path
            else:
                try:
                    return _new_sav(SchemaAndValue, (last[1], last[2](payload)))
                except _NeedExact:
                    return self._read_envelope(data, exact=True)
        return self._read_envelope(data, exact=False)

    def _read_envelope(self, data: bytes, exact: bool) -> SchemaAndValue:
        obj = _lenient_loads(data, exact=True) if exact else _parse(data)
        if type(obj) is not dict or len(obj) != 2 or "schema" not in obj or "payload" not in obj:
            raise DataError(ENVELOPE_ERROR)
        schema_obj = obj["schema"]
        payload = obj["payload"]
        if schema_obj is None:
            return SchemaAndValue(None, payload)
        try:
            key = _dumps(schema_obj, default=_decimal_fragment)
        except _JSONEncodeError as exc:  # pragma: no cover - parsed JSON always re-encodes
            raise DataError(f"Invalid schema: {exc}") from exc
        entry: tuple[Schema, Fn] | None = self._from_json_cache.get(key)
        if entry is None:
            try:
                schema = self._compiler.schema_from_json(schema_obj)
            except _NeedExact:
                if exact:  # pragma: no cover - exact parsing yields no floats
                    raise DataError("Invalid Decimal default value") from None
                return self._read_envelope(data, exact=True)
            assert schema is not None
            entry = (schema, self._compiler.de(schema))
            self._from_json_cache.put(key, entry)
        if not exact:
            prefix = b'{"schema":' + key + b',"payload":'
            if data.startswith(prefix):
                self._last_de = (prefix, entry[0], entry[1], len(prefix))
        try:
            return SchemaAndValue(entry[0], entry[1](payload))
        except _NeedExact:
            if exact:  # pragma: no cover - exact parsing yields no floats
                raise DataError("Invalid Decimal value") from None
            return self._read_envelope(data, exact=True)

    # -- HeaderConverter --------------------------------------------------------------------

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, data)

    # -- introspection (tests, metrics) -----------------------------------------------------

    def schema_to_json(self, schema: Schema) -> bytes:
        """The schema JSON bytes this converter writes in envelopes."""
        return self._ser_entry(schema)[2]

    def schema_from_json(self, data: bytes) -> Schema | None:
        """Parse schema JSON bytes as found in an envelope's ``schema`` field."""
        return self._compiler.schema_from_json(_parse(data))
