"""The Avro decoder compiler: fastavro's datum of a Connect schema -> the Connect value.

fastavro already yields most Connect values (ints, floats, strings, bytes, lists, string-keyed
dicts); only logical types, records (to Struct), maps written as entry arrays and collections
holding those need a conversion, and only those get a closure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from connectrt.converters.avro.decimals import decimal_decoder
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct

__all__ = ["decoder"]

Fn = Callable[[Any], Any]

# Logical types held as an Avro int whose Connect value is built by ``to_logical``.
_INT_BACKED: Final[dict[str, Callable[[Schema, int], Any]]] = {
    logical.Date.LOGICAL_NAME: logical.Date.to_logical,
    logical.Time.LOGICAL_NAME: logical.Time.to_logical,
}


def decoder(schema: Schema) -> Fn:
    """Compile fastavro datum -> Connect value for ``schema`` (None passes through)."""
    inner = _decoder_nonnull(schema)
    if inner is None:
        return _identity
    if not schema.optional:
        # Only a ``["null", T]`` union maps to an optional schema: fastavro cannot yield None
        # for any other Avro type, so required values skip the None check.
        return inner

    def dec(v: Any) -> Any:
        return None if v is None else inner(v)

    return dec


def _identity(v: Any) -> Any:
    return v


def _decoder_nonnull(schema: Schema) -> Fn | None:
    """The decoder of a non-null datum, or None when fastavro's value is the Connect value."""
    t = schema.type
    lname = logical.logical_name(schema)
    if lname == logical.Decimal.LOGICAL_NAME:
        return decimal_decoder(logical.Decimal.scale(schema))
    if lname in _INT_BACKED:
        to_logical = _INT_BACKED[lname]
        return lambda v: to_logical(schema, v)
    if lname == logical.Timestamp.LOGICAL_NAME:
        return logical.millis_to_datetime
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        if _decoder_nonnull(schema.value_schema) is None:
            return None
        item_dec = decoder(schema.value_schema)
        return lambda v: [item_dec(x) for x in v]
    if t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        kdec, vdec = decoder(ks), decoder(vs)
        if ks.type is Type.STRING and not ks.optional:
            if _decoder_nonnull(vs) is None:
                return None
            return lambda v: {k: vdec(x) for k, x in v.items()}
        return lambda v: {kdec(e["key"]): vdec(e["value"]) for e in v}
    if t is Type.STRUCT:
        return _struct_decoder(schema)
    return None


def _struct_decoder(schema: Schema) -> Fn:
    """A record dict -> ``Struct``: its values in field order, converted only where needed.

    fastavro builds a record's dict by walking the writer schema's fields in order, and this
    Connect schema was derived from that same writer schema, so ``dict.values()`` is already
    in field order. Fields needing a conversion (logical types, nested records, collections
    of those) are converted in place; a None (an optional field's null) stays None.
    """
    from_values = Struct._from_values
    converted = [
        (f.index, dec) for f in schema.fields if (dec := _decoder_nonnull(f.schema)) is not None
    ]
    if not converted:
        return lambda v: from_values(schema, list(v.values()))
    if len(converted) == 1:
        ((i0, dec0),) = converted

        def dec_struct1(v: Any) -> Any:
            values = list(v.values())
            x = values[i0]
            if x is not None:
                values[i0] = dec0(x)
            return from_values(schema, values)

        return dec_struct1

    def dec_struct(v: Any) -> Any:
        values = list(v.values())
        for i, dec in converted:
            x = values[i]
            if x is not None:
                values[i] = dec(x)
        return from_values(schema, values)

    return dec_struct
