"""Connect schema <-> Avro schema mapping, compatible with Confluent's ``AvroData``.

* INT8 / INT16 are Avro ``int`` with ``"connect.type": "int8"`` / ``"int16"``; INT32 ``int``,
  INT64 ``long``, FLOAT32 ``float``, FLOAT64 ``double``, BOOLEAN, STRING, BYTES as named.
* ARRAY is ``array``; MAP with STRING keys is ``map``; other MAPs are an ``array`` of
  ``io.confluent.connect.avro.MapEntry`` records with ``key`` and ``value`` fields.
* STRUCT is ``record``: the record's full name is the schema name (namespace split at the last
  dot), or ``io.confluent.connect.avro.ConnectDefault`` (``ConnectDefault2``, ... for further
  unnamed records in the same schema) when it has none.
* Optional schemas are ``["null", T]`` (``[T, "null"]`` when the default is not null, as Avro
  requires the default to match the first branch); optional fields default to null.
* Logical types: Decimal is ``bytes`` ``decimal`` (``precision`` from the
  ``connect.decimal.precision`` parameter, else 64; ``scale``), Date ``int`` ``date``, Time
  ``int`` ``time-millis``, Timestamp ``long`` ``timestamp-millis``.
* Connect metadata is kept in ``connect.name``, ``connect.version``, ``connect.doc``,
  ``connect.parameters`` and ``connect.default`` so that a schema survives a round trip.
* Avro ``enum`` reads as STRING (parameter ``io.confluent.connect.avro.Enum`` holds the enum
  name, ``io.confluent.connect.avro.Enum.<symbol>`` each symbol) and ``fixed`` as BYTES
  (parameter ``connect.fixed.size``); both are written back as the original Avro type.
  Other logical types (``timestamp-micros``, ``uuid``, ...) read as their underlying type.

Unions other than ``null`` + one type are not supported (DataError).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = [
    "AVRO_NAMESPACE",
    "CONNECT_DEFAULT_NAME",
    "MAP_ENTRY_NAME",
    "avro_to_connect",
    "connect_to_avro",
    "strip_logical_types",
]

AVRO_NAMESPACE: Final = "io.confluent.connect.avro"
CONNECT_DEFAULT_NAME: Final = "ConnectDefault"
MAP_ENTRY_NAME: Final = "MapEntry"
MAP_ENTRY_FULL_NAME: Final = f"{AVRO_NAMESPACE}.{MAP_ENTRY_NAME}"

CONNECT_NAME: Final = "connect.name"
CONNECT_DOC: Final = "connect.doc"
CONNECT_VERSION: Final = "connect.version"
CONNECT_PARAMETERS: Final = "connect.parameters"
CONNECT_DEFAULT: Final = "connect.default"
CONNECT_TYPE: Final = "connect.type"
DECIMAL_PRECISION: Final = "connect.decimal.precision"
FIXED_SIZE: Final = "connect.fixed.size"
ENUM_PARAM: Final = "io.confluent.connect.avro.Enum"
DEFAULT_DECIMAL_PRECISION: Final = 64

_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRIMITIVE_AVRO: Final[dict[Type, str]] = {
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
_AVRO_PRIMITIVE: Final[dict[str, Type]] = {
    "int": Type.INT32,
    "long": Type.INT64,
    "float": Type.FLOAT32,
    "double": Type.FLOAT64,
    "boolean": Type.BOOLEAN,
    "string": Type.STRING,
    "bytes": Type.BYTES,
}
_LOGICAL_AVRO: Final[dict[str, str]] = {
    logical.Date.LOGICAL_NAME: "date",
    logical.Time.LOGICAL_NAME: "time-millis",
    logical.Timestamp.LOGICAL_NAME: "timestamp-millis",
}


# --------------------------------------------------------------------------------- Connect -> Avro


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
            result = {"type": _PRIMITIVE_AVRO[t]}
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


# --------------------------------------------------------------------------------- Avro -> Connect


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


# ---------------------------------------------------------------------------------- utilities


def strip_logical_types(avro: Any) -> Any:
    """A copy of ``avro`` without ``logicalType`` attributes (same binary encoding).

    The converter does logical conversions itself (Kafka-compatible), so fastavro is given the
    stripped schema and reads/writes plain ints, longs and bytes.
    """
    if isinstance(avro, list):
        return [strip_logical_types(b) for b in avro]
    if isinstance(avro, Mapping):
        out = {}
        for k, v in avro.items():
            if k == "logicalType":
                continue
            if k in ("type", "items", "values"):
                out[k] = strip_logical_types(v)
            elif k == "fields":
                out[k] = [
                    {fk: strip_logical_types(fv) if fk == "type" else fv for fk, fv in f.items()}
                    for f in v
                ]
            else:
                out[k] = v
        return out
    return avro
