"""Connect values <-> the JSON payload of Confluent's JSON Schema wire format.

The payload is Kafka Connect's JSON payload (base64 bytes, decimals as base64 or numbers,
dates, times and timestamps as integers; :mod:`connectrt.converters.json`'s compilers), with
Confluent ``JsonSchemaData``'s two differences: a MAP whose keys are not required STRINGs is
an array of ``{"key": k, "value": v}`` objects (Kafka's JsonConverter writes ``[k, v]``
pairs), and the struct named ``io.confluent.connect.json.OneOf`` is the value of its one
non-null field (read back into the first field whose type the JSON value has).

The compilers are stateless once built; their closures may be called from any thread.
"""

from __future__ import annotations

from typing import Any

from connectrt.converters.json.compiler import Fn
from connectrt.converters.json.decoder import DecoderCompiler, json_kind
from connectrt.converters.json.encoder import EncoderCompiler
from connectrt.converters.jsonschema.schema_mapping import ONE_OF
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["PayloadDecoder", "PayloadEncoder"]


def _object_keys(schema: Schema) -> bool:
    ks = schema.key_schema
    return ks is not None and ks.type is Type.STRING and not ks.optional


class PayloadEncoder(EncoderCompiler):
    """Connect value -> what orjson writes as the payload."""

    def mapping(self, schema: Schema) -> Fn:
        if _object_keys(schema):
            return super().mapping(schema)
        kf, vf = self.compile_entries(schema)

        def ser_map_entries(v: Any) -> Any:
            if not isinstance(v, dict):
                raise DataError(f"Invalid type for MAP: {type(v).__name__}")
            return [{"key": kf(k), "value": vf(x)} for k, x in v.items()]

        return ser_map_entries

    def struct(self, schema: Schema) -> Fn:
        if schema.name != ONE_OF:
            return super().struct(schema)
        branches = [self.compile(f.schema) for f in schema.fields]

        def ser_one_of(v: Any) -> Any:
            if not isinstance(v, Struct):
                raise DataError(f"Invalid type for STRUCT: {type(v).__name__}")
            for fn, x in zip(branches, v._values, strict=True):
                if x is not None:
                    return fn(x)
            return None

        return ser_one_of


_KIND_TYPES: dict[Type, tuple[type, ...]] = {
    Type.INT8: (int,),
    Type.INT16: (int,),
    Type.INT32: (int,),
    Type.INT64: (int,),
    Type.FLOAT32: (int, float),
    Type.FLOAT64: (int, float),
    Type.BOOLEAN: (bool,),
    Type.STRING: (str,),
    Type.BYTES: (str,),
    Type.ARRAY: (list,),
    Type.MAP: (dict, list),
    Type.STRUCT: (dict,),
}


def _fits(schema: Schema, value: Any) -> bool:
    """Whether the JSON ``value`` has the kind of ``schema`` (the OneOf branch test)."""
    kinds = _KIND_TYPES[schema.type]
    if type(value) is bool:
        return schema.type is Type.BOOLEAN
    if not isinstance(value, kinds):
        return False
    if isinstance(value, dict) and schema.type is Type.STRUCT:
        return set(value) <= {f.name for f in schema.fields}
    return True


class PayloadDecoder(DecoderCompiler):
    """Parsed payload JSON -> Connect value."""

    def mapping(self, schema: Schema) -> Fn:
        if _object_keys(schema):
            return super().mapping(schema)
        kf, vf = self.compile_entries(schema)

        def de_map_entries(v: Any) -> Any:
            if type(v) is not list:
                raise DataError(
                    "Maps with non-string fields should be encoded as JSON array of objects, "
                    f"but found {json_kind(v)}"
                )
            out: dict[Any, Any] = {}
            for entry in v:
                if type(entry) is not dict:
                    raise DataError(
                        f"Found invalid map entry instead of object: {json_kind(entry)}"
                    )
                key = kf(entry.get("key"))
                try:
                    out[key] = vf(entry.get("value"))
                except TypeError as exc:
                    raise DataError(f"Map key {key!r} is not hashable in Python") from exc
            return out

        return de_map_entries

    def struct(self, schema: Schema) -> Fn:
        if schema.name != ONE_OF:
            return super().struct(schema)
        branches = [(f.schema, self.compile(f.schema)) for f in schema.fields]
        count = len(branches)

        def de_one_of(v: Any) -> Any:
            for i, (branch, fn) in enumerate(branches):
                if _fits(branch, v):
                    values: list[Any] = [None] * count
                    values[i] = fn(v)
                    return Struct._from_values(schema, values)
            raise DataError(f"Did not find matching oneof field for data: {v!r}")

        return de_one_of
