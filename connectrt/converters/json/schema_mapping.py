"""Connect schemas <-> the ``schema`` of a JSON envelope (Kafka's ``asJsonSchema`` and
``asConnectSchema``).

Type names are Kafka's (FLOAT32 is ``"float"``, FLOAT64 ``"double"``) and keys come in Kafka's
order. A schema's default value is written and read with the converter's own encoder and
decoder, so that it follows the same configuration (e.g. ``decimal.format``).
"""

from __future__ import annotations

from typing import Any, Final

from connectrt.converters.json.decoder import DecoderCompiler
from connectrt.converters.json.encoder import EncoderCompiler
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.errors import DataError

__all__ = ["schema_from_json", "schema_to_json"]

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


def schema_to_json(schema: Schema, encoder: EncoderCompiler) -> dict[str, Any]:
    """Kafka's ``asJsonSchema``: keys in Kafka's order; the default written by ``encoder``."""
    t = schema.type
    out: dict[str, Any] = {"type": _TYPE_NAMES[t]}
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        out["items"] = schema_to_json(schema.value_schema, encoder)
    elif t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        out["keys"] = schema_to_json(schema.key_schema, encoder)
        out["values"] = schema_to_json(schema.value_schema, encoder)
    elif t is Type.STRUCT:
        fields = []
        for field in schema.fields:
            entry = schema_to_json(field.schema, encoder)
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
        out["default"] = encoder.nonnull(schema)(schema.default)
    return out


def schema_from_json(obj: Any, decoder: DecoderCompiler) -> Schema | None:
    """Kafka's ``asConnectSchema`` of a parsed ``schema``; the default read by ``decoder``.

    May raise :class:`~connectrt.converters.json.decoder.NeedExact` from a NUMERIC decimal
    default that was parsed as a float.
    """
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
            field_schema = schema_from_json(field, decoder)
            assert field_schema is not None
            builder.field(name, field_schema)
    elif t is Type.ARRAY:
        items = obj.get("items")
        if items is None:
            raise DataError("Array schema did not specify the element type")
        item_schema = schema_from_json(items, decoder)
        assert item_schema is not None
        builder = SchemaBuilder.array(item_schema)
    elif t is Type.MAP:
        keys = obj.get("keys")
        if keys is None:
            raise DataError("Map schema did not specify the key type")
        values = obj.get("values")
        if values is None:
            raise DataError("Map schema did not specify the value type")
        key_schema = schema_from_json(keys, decoder)
        value_schema = schema_from_json(values, decoder)
        assert key_schema is not None and value_schema is not None
        builder = SchemaBuilder.map(key_schema, value_schema)
    else:
        builder = SchemaBuilder(t)
    _apply_metadata(builder, obj, decoder)
    return builder.build()


def _apply_metadata(builder: SchemaBuilder, obj: dict[str, Any], decoder: DecoderCompiler) -> None:
    """Optionality, name, version, doc, parameters and default of ``obj`` onto ``builder``."""
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
        builder.default_value(decoder.nonnull(builder.build())(default))
