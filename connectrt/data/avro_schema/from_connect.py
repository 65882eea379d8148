"""Connect schema -> Avro schema (Confluent ``AvroData``-compatible), and Connect default
values -> Avro JSON defaults."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from connectrt.data import logical
from connectrt.data.avro_schema.names import (
    AVRO_NAMESPACE,
    CONNECT_DEFAULT,
    CONNECT_DEFAULT_NAME,
    CONNECT_DOC,
    CONNECT_NAME,
    CONNECT_PARAMETERS,
    CONNECT_TYPE,
    CONNECT_VERSION,
    DECIMAL_PRECISION,
    DEFAULT_DECIMAL_PRECISION,
    ENUM_PARAM,
    FIXED_SIZE,
    MAP_ENTRY_FULL_NAME,
)
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.errors import DataError

__all__ = ["AVRO_PRIMITIVE", "connect_to_avro", "default_to_avro"]

_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AVRO_PRIMITIVE: Final[Mapping[Type, str]] = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}
"""The Avro primitive type of each primitive Connect type (INT8 and INT16 are ``int``)."""
_LOGICAL_AVRO: Final[dict[str, str]] = {
    logical.Date.LOGICAL_NAME: "date",
    logical.Time.LOGICAL_NAME: "time-millis",
    logical.Timestamp.LOGICAL_NAME: "timestamp-millis",
}


def connect_to_avro(schema: Schema) -> Any:
    """The Avro schema (JSON-like: a dict, a list for unions, or a primitive name) of ``schema``.

    Raises DataError when the schema cannot be expressed in Avro (e.g. invalid field names or
    two different record schemas with the same name).
    """
    return _ToAvro().convert(schema, in_field=False)


class _ToAvro:
    def __init__(self) -> None:
        self.defined: dict[str, Schema] = {}
        self.unnamed = 0

    def convert(self, schema: Schema, in_field: bool) -> Any:
        base = self.non_optional(schema, in_field)
        if not schema.optional:
            return base
        if schema.default is not None:
            return [base, "null"]
        return ["null", base]

    def non_optional(self, schema: Schema, in_field: bool) -> Any:
        t = schema.type
        props: dict[str, Any] = {}
        result: Any
        lname = logical.logical_name(schema)
        if t is Type.STRUCT:
            result = self.record(schema)
            if isinstance(result, str):
                return result  # reference to an already defined record
        elif t is Type.ARRAY:
            assert schema.value_schema is not None
            result = {"type": "array", "items": self.convert(schema.value_schema, False)}
        elif t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
                result = {"type": "map", "values": self.convert(schema.value_schema, False)}
            else:
                entry = self.map_entry(schema.key_schema, schema.value_schema)
                result = {"type": "array", "items": entry}
        elif t is Type.STRING and schema.parameters and ENUM_PARAM in schema.parameters:
            result = self.enum(schema)
        elif t is Type.BYTES and schema.parameters and FIXED_SIZE in schema.parameters:
            result = self.fixed(schema)
        else:
            result = {"type": AVRO_PRIMITIVE[t]}
            if t is Type.INT8 or t is Type.INT16:
                props[CONNECT_TYPE] = t.value
            if lname == logical.Decimal.LOGICAL_NAME:
                scale = logical.Decimal.scale(schema)
                params = schema.parameters or {}
                try:
                    precision = int(params.get(DECIMAL_PRECISION, DEFAULT_DECIMAL_PRECISION))
                except ValueError as exc:
                    raise DataError(f"Invalid {DECIMAL_PRECISION} parameter") from exc
                result.update(logicalType="decimal", precision=precision, scale=scale)
            elif lname is not None:
                result["logicalType"] = _LOGICAL_AVRO[lname]
        if t is not Type.STRUCT:
            if schema.name is not None:
                props[CONNECT_NAME] = schema.name
            if schema.doc is not None:
                props[CONNECT_DOC] = schema.doc
        if schema.version is not None:
            props[CONNECT_VERSION] = schema.version
        if schema.parameters:
            props[CONNECT_PARAMETERS] = dict(schema.parameters)
        if schema.default is not None and not in_field:
            props[CONNECT_DEFAULT] = default_to_avro(schema, schema.default)
        if isinstance(result, dict):
            result.update(props)
            if len(result) == 1 and t.is_primitive:
                return result["type"]
        return result

    def full_name(self, schema: Schema) -> str:
        if schema.name:
            return schema.name
        self.unnamed += 1
        suffix = "" if self.unnamed == 1 else str(self.unnamed)
        return f"{AVRO_NAMESPACE}.{CONNECT_DEFAULT_NAME}{suffix}"

    def named(self, full: str, schema: Schema) -> dict[str, Any] | str:
        """The name/namespace part of a named type, or the name when already defined."""
        previous = self.defined.get(full)
        if previous is not None:
            if previous.equals_ignoring_default(schema):
                return full
            raise DataError(f"Two different schemas are named {full!r}; Avro names must be unique")
        self.defined[full] = schema
        namespace, _, name = full.rpartition(".")
        if not _NAME_RE.match(name):
            name = re.sub(r"[^A-Za-z0-9_]", "_", name)
            if not name or name[0].isdigit():
                name = "_" + name
        out: dict[str, Any] = {"name": name}
        if namespace:
            if not all(_NAME_RE.match(part) for part in namespace.split(".")):
                raise DataError(f"Schema name {full!r} is not a valid Avro full name")
            out["namespace"] = namespace
        return out

    def record(self, schema: Schema) -> dict[str, Any] | str:
        full = self.full_name(schema)
        head = self.named(full, schema)
        if isinstance(head, str):
            return head
        result: dict[str, Any] = {"type": "record", **head}
        if schema.doc is not None:
            result["doc"] = schema.doc
        fields = []
        for field in schema.fields:
            if not _NAME_RE.match(field.name):
                raise DataError(
                    f"Field name {field.name!r} of {full} is not a valid Avro name "
                    "([A-Za-z_][A-Za-z0-9_]*)"
                )
            entry: dict[str, Any] = {"name": field.name, "type": self.convert(field.schema, True)}
            fs = field.schema
            if fs.default is not None:
                entry["default"] = default_to_avro(fs, fs.default)
            elif fs.optional:
                entry["default"] = None
            fields.append(entry)
        result["fields"] = fields
        if schema.name is not None:
            result[CONNECT_NAME] = schema.name
        return result

    def map_entry(self, key: Schema, value: Schema) -> dict[str, Any] | str:
        entry_schema = (
            SchemaBuilder.struct()
            .name(MAP_ENTRY_FULL_NAME)
            .field("key", key)
            .field("value", value)
            .build()
        )
        previous = self.defined.get(MAP_ENTRY_FULL_NAME)
        if previous is not None and previous == entry_schema:
            return MAP_ENTRY_FULL_NAME
        if previous is not None:
            # Confluent numbers further entry records; keep names unique the same way.
            n = 2
            while f"{MAP_ENTRY_FULL_NAME}{n}" in self.defined:
                n += 1
            full = f"{MAP_ENTRY_FULL_NAME}{n}"
        else:
            full = MAP_ENTRY_FULL_NAME
        self.defined[full] = entry_schema
        return {
            "type": "record",
            "name": full.rpartition(".")[2],
            "namespace": AVRO_NAMESPACE,
            "fields": [
                {"name": "key", "type": self.convert(key, True)},
                {"name": "value", "type": self.convert(value, True)},
            ],
        }

    def enum(self, schema: Schema) -> dict[str, Any] | str:
        params = schema.parameters or {}
        full = params[ENUM_PARAM]
        head = self.named(full, schema)
        if isinstance(head, str):
            return head
        prefix = ENUM_PARAM + "."
        symbols = [k[len(prefix) :] for k in params if k.startswith(prefix)]
        return {"type": "enum", **head, "symbols": symbols}

    def fixed(self, schema: Schema) -> dict[str, Any] | str:
        params = schema.parameters or {}
        full = schema.name or f"{AVRO_NAMESPACE}.{CONNECT_DEFAULT_NAME}Fixed"
        head = self.named(full, schema)
        if isinstance(head, str):
            return head
        return {"type": "fixed", **head, "size": int(params[FIXED_SIZE])}


def default_to_avro(schema: Schema, value: Any) -> Any:
    """A Connect value as an Avro JSON default (bytes as ISO-8859-1 strings)."""
    if value is None:
        return None
    lname = logical.logical_name(schema)
    if lname == logical.Decimal.LOGICAL_NAME:
        return logical.Decimal.from_logical(schema, value).decode("latin-1")
    if lname == logical.Date.LOGICAL_NAME:
        return logical.Date.from_logical(schema, value)
    if lname == logical.Time.LOGICAL_NAME:
        return logical.Time.from_logical(schema, value)
    if lname == logical.Timestamp.LOGICAL_NAME:
        return logical.Timestamp.from_logical(schema, value)
    t = schema.type
    if t is Type.BYTES:
        return bytes(value).decode("latin-1")
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [default_to_avro(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        if ks.type is Type.STRING and not ks.optional:
            return {k: default_to_avro(vs, v) for k, v in value.items()}
        return [
            {"key": default_to_avro(ks, k), "value": default_to_avro(vs, v)}
            for k, v in value.items()
        ]
    if t is Type.STRUCT:
        return {f.name: default_to_avro(f.schema, value.get(f)) for f in schema.fields}
    return value
