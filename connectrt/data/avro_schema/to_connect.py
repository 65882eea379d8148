"""Avro schema -> Connect schema (Confluent ``AvroData``-compatible), and Avro JSON defaults
-> Connect default values.

Avro ``enum`` reads as STRING and ``fixed`` as BYTES, with parameters that let
:mod:`connectrt.data.avro_schema.from_connect` write them back; unions other than ``null`` plus
one type and recursive records have no Connect schema (DataError).
"""

from __future__ import annotations

import json
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
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["avro_to_connect", "default_from_avro"]

_AVRO_PRIMITIVE: Final[dict[str, Type]] = {
    "int": Type.INT32,
    "long": Type.INT64,
    "float": Type.FLOAT32,
    "double": Type.FLOAT64,
    "boolean": Type.BOOLEAN,
    "string": Type.STRING,
    "bytes": Type.BYTES,
}


def avro_to_connect(avro: Mapping[str, Any] | str | list[Any]) -> Schema:
    """The Connect schema of an Avro schema (a dict, a union list, a type name or JSON text)."""
    if isinstance(avro, str) and avro.lstrip()[:1] in ("{", "[", '"'):
        try:
            avro = json.loads(avro)
        except ValueError as exc:
            raise DataError(f"Invalid Avro schema JSON: {exc}") from exc
    return _ToConnect().convert(avro, None, in_field=False)


class _ToConnect:
    def __init__(self) -> None:
        self.named: dict[str, Schema] = {}
        self.in_progress: set[str] = set()

    def convert(self, avro: Any, namespace: str | None, in_field: bool) -> Schema:
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null" and b != {"type": "null"}]
            if len(branches) != 1 or len(avro) != 2:
                raise DataError(
                    f"Avro unions other than null plus one type are not supported: {avro!r}"
                )
            inner = self.convert(branches[0], namespace, in_field)
            return _rebuild(inner, optional=True)
        if isinstance(avro, str):
            if avro in _AVRO_PRIMITIVE:
                return Schema(_AVRO_PRIMITIVE[avro])
            full = avro if "." in avro or not namespace else f"{namespace}.{avro}"
            if full in self.in_progress or avro in self.in_progress:
                raise DataError(f"Recursive Avro schema {avro!r} cannot be a Connect schema")
            found = self.named.get(full) or self.named.get(avro)
            if found is None:
                raise DataError(f"Unknown Avro type {avro!r}")
            return found
        if not isinstance(avro, Mapping):
            raise DataError(f"Invalid Avro schema: {avro!r}")
        avro_type = avro.get("type")
        if isinstance(avro_type, list | Mapping):
            return self.convert(avro_type, namespace, in_field)
        builder: SchemaBuilder
        lt = avro.get("logicalType")
        if avro_type == "record":
            return self.record(avro, namespace, in_field)
        if avro_type == "enum":
            full = _full_name(avro, namespace)
            builder = SchemaBuilder.string().parameter(ENUM_PARAM, full)
            for sym in avro.get("symbols", []):
                builder.parameter(f"{ENUM_PARAM}.{sym}", sym)
            schema = self.finish(builder, avro, in_field, skip_params=True)
            self.named[full] = schema
            return schema
        if avro_type == "fixed":
            full = _full_name(avro, namespace)
            builder = SchemaBuilder.bytes().name(full).parameter(FIXED_SIZE, str(avro["size"]))
            schema = self.finish(builder, avro, in_field, skip_params=True, skip_name=True)
            self.named[full] = schema
            return schema
        if avro_type == "array":
            items = avro.get("items")
            if isinstance(items, list | str | Mapping):
                entry = self.map_entry_fields(items, namespace)
                if entry is not None:
                    builder = SchemaBuilder.map(*entry)
                    return self.finish(builder, avro, in_field)
            builder = SchemaBuilder.array(self.convert(items, namespace, False))
            return self.finish(builder, avro, in_field)
        if avro_type == "map":
            builder = SchemaBuilder.map(
                Schema.STRING_SCHEMA, self.convert(avro.get("values"), namespace, False)
            )
            return self.finish(builder, avro, in_field)
        if avro_type == "bytes" and lt == "decimal":
            scale = int(avro.get("scale", 0))
            builder = logical.Decimal.builder(scale)
            if CONNECT_PARAMETERS not in avro:
                precision = avro.get("precision", DEFAULT_DECIMAL_PRECISION)
                builder.parameter(DECIMAL_PRECISION, str(precision))
            return self.finish(builder, avro, in_field, logical_type=True)
        if avro_type == "int" and lt == "date":
            return self.finish(logical.Date.builder(), avro, in_field, logical_type=True)
        if avro_type == "int" and lt == "time-millis":
            return self.finish(logical.Time.builder(), avro, in_field, logical_type=True)
        if avro_type == "long" and lt == "timestamp-millis":
            return self.finish(logical.Timestamp.builder(), avro, in_field, logical_type=True)
        if isinstance(avro_type, str) and avro_type in _AVRO_PRIMITIVE:
            t = _AVRO_PRIMITIVE[avro_type]
            ctype = avro.get(CONNECT_TYPE)
            if avro_type == "int" and ctype in ("int8", "int16"):
                t = Type(ctype)
            return self.finish(SchemaBuilder(t), avro, in_field)
        if isinstance(avro_type, str) and avro_type not in ("null",):
            return self.convert(avro_type, namespace, in_field)
        raise DataError(f"Unsupported Avro schema: {avro!r}")

    def finish(
        self,
        builder: SchemaBuilder,
        avro: Mapping[str, Any],
        in_field: bool,
        *,
        logical_type: bool = False,
        skip_params: bool = False,
        skip_name: bool = False,
    ) -> Schema:
        """Apply connect.* metadata to ``builder``."""
        name = avro.get(CONNECT_NAME)
        if name is not None and not logical_type and not skip_name:
            builder.name(name)
        version = avro.get(CONNECT_VERSION)
        if version is not None and not logical_type:
            builder.version(int(version))
        doc = avro.get(CONNECT_DOC)
        if doc is not None:
            builder.doc(doc)
        params = avro.get(CONNECT_PARAMETERS)
        if isinstance(params, Mapping) and not skip_params:
            for k, v in params.items():
                if logical_type and k == logical.Decimal.SCALE_FIELD:
                    continue
                builder.parameter(str(k), str(v))
        schema = builder.build()
        if CONNECT_DEFAULT in avro and not in_field:
            schema = _rebuild(schema, default=default_from_avro(schema, avro[CONNECT_DEFAULT]))
        return schema

    def map_entry_fields(self, items: Any, namespace: str | None) -> tuple[Schema, Schema] | None:
        if isinstance(items, str):
            full = items if "." in items or not namespace else f"{namespace}.{items}"
            entry = self.named.get(full) or self.named.get(items)
            if entry is None or not (entry.name or "").startswith(MAP_ENTRY_FULL_NAME):
                return None
            return entry.fields[0].schema, entry.fields[1].schema
        if not isinstance(items, Mapping) or items.get("type") != "record":
            return None
        full = _full_name(items, namespace)
        if not full.startswith(MAP_ENTRY_FULL_NAME):
            return None
        fields = items.get("fields") or []
        if [f.get("name") for f in fields] != ["key", "value"]:
            return None
        ns = full.rpartition(".")[0]
        key = self.convert(fields[0]["type"], ns, True)
        value = self.convert(fields[1]["type"], ns, True)
        self.named[full] = (
            SchemaBuilder.struct().name(full).field("key", key).field("value", value).build()
        )
        return key, value

    def record(self, avro: Mapping[str, Any], namespace: str | None, in_field: bool) -> Schema:
        full = _full_name(avro, namespace)
        ns = full.rpartition(".")[0] or None
        self.in_progress.add(full)
        builder = SchemaBuilder.struct()
        cname = avro.get(CONNECT_NAME, full)
        if not _is_connect_default(cname):
            builder.name(cname)
        version = avro.get(CONNECT_VERSION)
        if version is not None:
            builder.version(int(version))
        doc = avro.get(CONNECT_DOC, avro.get("doc"))
        if doc is not None:
            builder.doc(doc)
        params = avro.get(CONNECT_PARAMETERS)
        if isinstance(params, Mapping):
            for k, v in params.items():
                builder.parameter(str(k), str(v))
        for field in avro.get("fields") or []:
            fs = self.convert(field["type"], ns, True)
            if "default" in field and field["default"] is not None:
                default = default_from_avro(fs, field["default"])
                fs = _rebuild(fs, default=default)
            builder.field(field["name"], fs)
        self.in_progress.discard(full)
        schema = builder.build()
        if CONNECT_DEFAULT in avro and not in_field:
            schema = _rebuild(schema, default=default_from_avro(schema, avro[CONNECT_DEFAULT]))
        self.named[full] = schema
        return schema


def _is_connect_default(name: str) -> bool:
    prefix = f"{AVRO_NAMESPACE}.{CONNECT_DEFAULT_NAME}"
    return (name.startswith(prefix) and name[len(prefix) :].isdigit()) or name == prefix


def _full_name(avro: Mapping[str, Any], namespace: str | None) -> str:
    name = avro.get("name")
    if not isinstance(name, str) or not name:
        raise DataError(f"Avro named type without a name: {avro!r}")
    if "." in name:
        return name
    ns = avro.get("namespace", namespace)
    return f"{ns}.{name}" if ns else name


def _rebuild(schema: Schema, **changes: Any) -> Schema:
    attrs: dict[str, Any] = {
        "optional": schema.optional,
        "default": schema.default,
        "name": schema.name,
        "version": schema.version,
        "doc": schema.doc,
        "parameters": schema.parameters,
        "fields": schema.fields,
        "key_schema": schema.key_schema,
        "value_schema": schema.value_schema,
    }
    attrs.update(changes)
    return Schema(schema.type, **attrs)


def default_from_avro(schema: Schema, value: Any) -> Any:
    """An Avro JSON default as a Connect value of ``schema``."""
    if value is None:
        return None
    try:
        lname = logical.logical_name(schema)
        if lname == logical.Decimal.LOGICAL_NAME:
            return logical.Decimal.to_logical(schema, str(value).encode("latin-1"))
        if lname == logical.Date.LOGICAL_NAME:
            return logical.Date.to_logical(schema, int(value))
        if lname == logical.Time.LOGICAL_NAME:
            return logical.Time.to_logical(schema, int(value))
        if lname == logical.Timestamp.LOGICAL_NAME:
            return logical.Timestamp.to_logical(schema, int(value))
        t = schema.type
        if t is Type.BYTES:
            return str(value).encode("latin-1")
        if t in (Type.FLOAT32, Type.FLOAT64):
            return float(value)
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            return [default_from_avro(schema.value_schema, v) for v in value]
        if t is Type.MAP:
            ks, vs = schema.key_schema, schema.value_schema
            assert ks is not None and vs is not None
            if isinstance(value, Mapping):
                return {k: default_from_avro(vs, v) for k, v in value.items()}
            return {
                default_from_avro(ks, e["key"]): default_from_avro(vs, e["value"]) for e in value
            }
        if t is Type.STRUCT:
            struct = Struct(_rebuild(schema, default=None))
            for f in schema.fields:
                if f.name in value:
                    struct.put(f, default_from_avro(f.schema, value[f.name]))
            return struct
        return value
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise DataError(f"Invalid Avro default {value!r} for {schema!r}: {exc}") from exc
