"""The Avro encoder compiler: Connect values of a schema -> the datum fastavro writes.

Two encoders per schema: the checked one (:func:`encoder`), which converts and checks every
value and names the field at fault, and for the write hot path :func:`fast_encoder_nonnull`,
which hands a Struct's already-checked primitive fields to fastavro as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from connectrt.converters.avro.decimals import decimal_encoder
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError

__all__ = ["encoder", "encoder_nonnull", "fast_encoder_nonnull"]

Fn = Callable[[Any], Any]

# Primitive types whose Struct field values Struct.put() already checked and fastavro writes
# as they are (it raises for a None in a required field, as for any value it cannot write).
_PASSED_THROUGH: Final = frozenset(
    {
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
    }
)

# Logical types held as an Avro int or long: an int passes, else ``from_logical`` converts.
_INT_BACKED: Final[dict[str, Callable[[Schema, Any], int]]] = {
    logical.Date.LOGICAL_NAME: logical.Date.from_logical,
    logical.Time.LOGICAL_NAME: logical.Time.from_logical,
    logical.Timestamp.LOGICAL_NAME: logical.Timestamp.from_logical,
}

# Types whose values must be instances of one Python type and pass as they are.
_INSTANCE_OF: Final = {Type.BOOLEAN: bool, Type.STRING: str}


def encoder(schema: Schema) -> Fn:
    """Compile Connect value -> fastavro datum for ``schema`` (defaults and nulls included)."""
    inner = encoder_nonnull(schema)
    default = schema.default
    optional = schema.optional

    if default is None and optional:

        def enc_optional(v: Any) -> Any:
            return None if v is None else inner(v)

        return enc_optional
    if default is not None:

        def enc_default(v: Any) -> Any:
            return inner(default if v is None else v)

        return enc_default

    def enc_required(v: Any) -> Any:
        if v is None:
            raise DataError("Conversion error: null value for field that is required")
        return inner(v)

    return enc_required


def fast_encoder_nonnull(schema: Schema) -> Fn:
    """:func:`encoder_nonnull` for the write hot path: a Struct's plain primitive fields (no
    logical type, no default) go to fastavro as they are, without a call per field.

    Only Struct fields are passed through: ``Struct.put`` checked their values against the
    field schema. A value fastavro cannot write still fails; the converter then runs the
    checked encoder to report the field. Anything else than a Struct of this schema takes the
    checked encoder directly.
    """
    if schema.type is not Type.STRUCT:
        return encoder_nonnull(schema)
    checked = encoder_nonnull(schema)
    passed: list[tuple[str, int]] = []
    converted: list[tuple[str, int, Fn, Callable[[], Any]]] = []
    for f in schema.fields:
        fs = f.schema
        if fs.type in _PASSED_THROUGH and fs.default is None and not logical.logical_name(fs):
            passed.append((f.name, f.index))
        else:
            converted.append((f.name, f.index, fast_encoder_nonnull(fs), _on_null(fs)))

    def enc_struct_fast(v: Any) -> Any:
        if type(v) is not Struct or (
            v._schema is not schema and not v._schema.equals_ignoring_default(schema)
        ):
            return checked(v)
        vals = v._values
        datum = {name: vals[index] for name, index in passed}
        try:
            for name, index, enc, on_null in converted:
                x = vals[index]
                datum[name] = enc(x) if x is not None else on_null()
        except DataError:
            return checked(v)  # raises the error again, naming the field
        return datum

    return enc_struct_fast


def _on_null(schema: Schema) -> Callable[[], Any]:
    """What a None field value encodes to (as :func:`encoder`): null, the default, or an error."""
    if schema.default is not None:
        inner = encoder_nonnull(schema)
        default = schema.default
        return lambda: inner(default)
    if schema.optional:
        return _null
    return _null_for_required


def _null() -> None:
    return None


def _null_for_required() -> Any:
    raise DataError("Conversion error: null value for field that is required")


def encoder_nonnull(schema: Schema) -> Fn:
    """Compile the checked Connect value -> fastavro datum of ``schema``'s non-null values."""
    t = schema.type
    lname = logical.logical_name(schema)
    if lname == logical.Decimal.LOGICAL_NAME:
        return decimal_encoder(logical.Decimal.scale(schema))
    if lname in _INT_BACKED:
        from_logical = _INT_BACKED[lname]
        return lambda v: v if type(v) is int else from_logical(schema, v)
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]

        def enc_int(v: Any) -> Any:
            if type(v) is not int or not lo <= v <= hi:
                if isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi:
                    return int(v)
                raise DataError(f"Invalid value {v!r} for schema type {t.name}")
            return v

        return enc_int
    if t in _INSTANCE_OF:
        cls = _INSTANCE_OF[t]

        def enc_instance(v: Any) -> Any:
            if not isinstance(v, cls):
                raise DataError(f"Invalid value {v!r} for schema type {t.name}")
            return v

        return enc_instance
    if t is Type.BYTES:

        def enc_bytes(v: Any) -> Any:
            if isinstance(v, bytes):
                return v
            if isinstance(v, bytearray | memoryview):
                return bytes(v)
            raise DataError(f"Invalid value {type(v).__name__} for schema type BYTES")

        return enc_bytes
    if t is Type.FLOAT32 or t is Type.FLOAT64:

        def enc_float(v: Any) -> Any:
            if isinstance(v, float):
                return v
            if isinstance(v, int) and not isinstance(v, bool):
                return float(v)
            raise DataError(f"Invalid value {v!r} for schema type {t.name}")

        return enc_float
    if t is Type.ARRAY:
        return _array_encoder(schema)
    if t is Type.MAP:
        return _map_encoder(schema)
    return _struct_encoder(schema)


def _array_encoder(schema: Schema) -> Fn:
    assert schema.value_schema is not None
    item = encoder(schema.value_schema)

    def enc_array(v: Any) -> Any:
        if not isinstance(v, list | tuple):
            raise DataError(f"Invalid value {type(v).__name__} for schema type ARRAY")
        return [item(x) for x in v]

    return enc_array


def _map_encoder(schema: Schema) -> Fn:
    """An Avro ``map`` for required STRING keys, else an array of key/value entry records."""
    ks, vs = schema.key_schema, schema.value_schema
    assert ks is not None and vs is not None
    kenc, venc = encoder(ks), encoder(vs)
    if ks.type is Type.STRING and not ks.optional:

        def enc_map(v: Any) -> Any:
            if not isinstance(v, Mapping):
                raise DataError(f"Invalid value {type(v).__name__} for schema type MAP")
            return {kenc(k): venc(x) for k, x in v.items()}

        return enc_map

    def enc_map_entries(v: Any) -> Any:
        if not isinstance(v, Mapping):
            raise DataError(f"Invalid value {type(v).__name__} for schema type MAP")
        return [{"key": kenc(k), "value": venc(x)} for k, x in v.items()]

    return enc_map_entries


def _struct_encoder(schema: Schema) -> Fn:
    """A Struct -> a record dict; on a failing value, the field is named in the error."""
    fields = [(f.name, f.index, encoder(f.schema)) for f in schema.fields]
    # The hot path: each field's non-null encoder called directly, nulls handled inline.
    plan = [(f.name, f.index, encoder_nonnull(f.schema), _on_null(f.schema)) for f in schema.fields]

    def enc_struct(v: Any) -> Any:
        if not isinstance(v, Struct) or not v.schema.equals_ignoring_default(schema):
            if isinstance(v, Struct):
                raise DataError(
                    f"Struct schema mismatch: value has {v.schema!r}, expected {schema!r}"
                )
            raise DataError(f"Invalid value {type(v).__name__} for schema type STRUCT")
        vals = v._values
        try:
            return {
                name: enc(x) if (x := vals[index]) is not None else on_null()
                for name, index, enc, on_null in plan
            }
        except DataError:
            pass
        # Slow path, only to name the field at fault.
        for name, index, enc in fields:
            try:
                enc(vals[index])
            except DataError as exc:
                raise DataError(f"Field {name}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    return enc_struct
