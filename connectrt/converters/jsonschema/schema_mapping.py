"""Connect schema <-> JSON Schema, as Confluent's ``JsonSchemaData`` maps them.

Connect -> JSON Schema (what Confluent's ``JsonSchemaConverter`` writes, so that a Java
consumer reads our records the same):

* INT8..INT64 are ``{"type": "integer", "connect.type": "int8"}`` (``int16``, ``int32``,
  ``int64``); FLOAT32/FLOAT64 ``{"type": "number", "connect.type": "float32"}``
  (``float64``); BOOLEAN and STRING as named; BYTES ``{"type": "string", "connect.type":
  "bytes"}`` (base64 text; a Decimal with ``decimal.format=NUMERIC`` is a ``number``).
* A STRING with the ``io.confluent.connect.json.Enum`` parameter is ``{"enum": [...]}``.
* ARRAY is ``{"type": "array", "items": ...}``; a MAP with required STRING keys is
  ``{"type": "object", "additionalProperties": ..., "connect.type": "map"}``, any other MAP an
  array of ``{"key": ..., "value": ...}`` objects with ``"connect.type": "map"``.
* STRUCT is ``{"type": "object", "properties": {...}}``, each property carrying its field's
  position as ``connect.index``; with ``object.additional.properties=false`` the object is
  closed (``"additionalProperties": false``). The struct named
  ``io.confluent.connect.json.OneOf`` is a ``oneOf`` of its fields' schemas.
* An optional schema is ``{"oneOf": [{"type": "null"}, S]}`` (the ``connect.index`` on the
  ``oneOf``).
* The name is the ``title``, the doc the ``description``, the version ``connect.version``, the
  parameters ``connect.parameters`` (Confluent's own ``io.confluent.connect.json.*`` left
  out), the default ``default``.

JSON Schema -> Connect reads those back, and plain JSON Schemas (as the Python and Java
serializers register them): ``integer`` without ``connect.type`` is INT64, ``number``
FLOAT64; an object without ``connect.type: map`` is a STRUCT whose fields follow
``connect.index`` (else the properties' order); properties are required unless nullable
(``use.optional.for.nonrequired=true``: unless listed in ``required``); a ``oneOf``/``anyOf``
of ``null`` and one schema is that schema made optional, any other a ``OneOf`` struct;
``enum``/``const`` are STRING with the enum parameters; ``$ref`` is followed (in the document
and its references); ``allOf`` of a type and an ``enum``, ``const`` or ``format`` is read as
that type.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import unquote

from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.errors import DataError

__all__ = [
    "ENUM_PARAM",
    "NAMESPACE",
    "ONE_OF",
    "connect_to_json_schema",
    "json_schema_to_connect",
]

NAMESPACE: Final = "io.confluent.connect.json"
ENUM_PARAM: Final = NAMESPACE + ".Enum"
ONE_OF: Final = NAMESPACE + ".OneOf"

_CONNECT_TYPES: Final = {
    Type.INT8: ("integer", "int8"),
    Type.INT16: ("integer", "int16"),
    Type.INT32: ("integer", "int32"),
    Type.INT64: ("integer", "int64"),
    Type.FLOAT32: ("number", "float32"),
    Type.FLOAT64: ("number", "float64"),
}
_FROM_CONNECT_TYPE: Final = {
    "int8": SchemaBuilder.int8,
    "int16": SchemaBuilder.int16,
    "int32": SchemaBuilder.int32,
    "int64": SchemaBuilder.int64,
    "float32": SchemaBuilder.float32,
    "float64": SchemaBuilder.float64,
    "bytes": SchemaBuilder.bytes,
}

DefaultWriter = Callable[[Schema, Any], Any]


def connect_to_json_schema(
    schema: Schema,
    default_json: DefaultWriter,
    decimal_numeric: bool = False,
    additional_properties: bool = True,
) -> dict[str, Any]:
    """The JSON Schema of ``schema``; ``default_json(schema, value)`` writes a default value
    as the payload would hold it."""
    return _from_connect(schema, None, False, default_json, decimal_numeric, additional_properties)


def _from_connect(
    schema: Schema,
    index: int | None,
    ignore_optional: bool,
    default_json: DefaultWriter,
    numeric: bool,
    open_objects: bool,
) -> dict[str, Any]:
    def sub(s: Schema, i: int | None = None, ignore: bool = False) -> dict[str, Any]:
        return _from_connect(s, i, ignore, default_json, numeric, open_objects)

    out: dict[str, Any]
    props: dict[str, Any] = {}
    t = schema.type
    combined = False
    if t in _CONNECT_TYPES:
        json_type, connect_type = _CONNECT_TYPES[t]
        out = {"type": json_type}
        props["connect.type"] = connect_type
    elif t is Type.BOOLEAN:
        out = {"type": "boolean"}
    elif t is Type.STRING:
        params = schema.parameters or {}
        if ENUM_PARAM in params:
            prefix = ENUM_PARAM + "."
            out = {"enum": [v for k, v in params.items() if k.startswith(prefix)]}
        else:
            out = {"type": "string"}
    elif t is Type.BYTES:
        is_decimal = schema.name == logical.Decimal.LOGICAL_NAME
        out = {"type": "number" if is_decimal and numeric else "string"}
        props["connect.type"] = "bytes"
    elif t is Type.ARRAY:
        assert schema.value_schema is not None
        out = {"type": "array", "items": sub(schema.value_schema)}
    elif t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        if ks.type is Type.STRING and not ks.optional:
            out = {"type": "object", "additionalProperties": sub(vs)}
        else:
            entry = {"type": "object", "properties": {"key": sub(ks, 0), "value": sub(vs, 1)}}
            out = {"type": "array", "items": entry}
        props["connect.type"] = "map"
    elif t is Type.STRUCT:
        combined = True
        if schema.name == ONE_OF:
            branches = [sub(f.schema.replace(optional=False), f.index, True) for f in schema.fields]
            out = {"oneOf": ([{"type": "null"}] if schema.optional else []) + branches}
        elif schema.optional:
            out = {"oneOf": [{"type": "null"}, sub(schema.replace(optional=False))]}
        else:
            combined = False
            out = {
                "type": "object",
                "properties": {f.name: sub(f.schema, f.index) for f in schema.fields},
            }
            if not open_objects:
                out["additionalProperties"] = False
    else:  # pragma: no cover - every Connect type is handled above
        raise DataError(f"Unsupported type {t}")

    if not combined:
        if schema.name is not None:
            out["title"] = schema.name
        if schema.version is not None:
            props["connect.version"] = schema.version
        if schema.doc is not None:
            out["description"] = schema.doc
        params = {k: v for k, v in (schema.parameters or {}).items() if not k.startswith(NAMESPACE)}
        if params:
            props["connect.parameters"] = params
        if schema.default is not None:
            out["default"] = default_json(schema, schema.default)
        if not ignore_optional and schema.optional:
            out.update(props)
            out = {"oneOf": [{"type": "null"}, out]}
            props = {}
    if index is not None:
        props["connect.index"] = index
    out.update(props)
    return out


# ----------------------------------------------------------------------------- JSON -> Connect


class _Reader:
    def __init__(
        self,
        root: Any,
        references: Mapping[str, Any],
        optional_for_nonrequired: bool,
        read_default: Callable[[Schema, Any], Any],
    ) -> None:
        self.root = root
        self.references = references
        self.optional_for_nonrequired = optional_for_nonrequired
        self.read_default = read_default
        self.resolving: set[tuple[int, str]] = set()

    def deref(self, schema: Any, doc: Any) -> tuple[Any, Any]:
        """Follow ``$ref`` (to the target schema and the document it is in)."""
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            seen += 1
            if seen > 64:
                raise DataError("JSON Schema $ref chain too long (a cycle?)")
            ref = schema["$ref"]
            name, _, pointer = ref.partition("#")
            if name:
                if name not in self.references:
                    raise DataError(f"Unresolved JSON Schema $ref {ref!r}")
                doc = self.references[name]
            target = doc
            for token in [t for t in pointer.split("/") if t]:
                token = unquote(token).replace("~1", "/").replace("~0", "~")
                try:
                    target = target[int(token) if isinstance(target, list) else token]
                except (KeyError, IndexError, ValueError, TypeError):
                    raise DataError(f"Unresolved JSON Schema $ref {ref!r}") from None
            schema = target
        return schema, doc

    def read(self, schema: Any, doc: Any, force_optional: bool = False) -> Schema:
        schema, doc = self.deref(schema, doc)
        key = (id(schema), "")
        if key in self.resolving:
            raise DataError("Recursive JSON Schemas are not supported by Connect schemas")
        self.resolving.add(key)
        try:
            return self._read(schema, doc, force_optional)
        finally:
            self.resolving.discard(key)

    def _read(self, schema: Any, doc: Any, force_optional: bool) -> Schema:
        if schema is True or schema == {} or not isinstance(schema, dict):
            raise DataError(f"Unsupported JSON Schema {schema!r}: no type")
        builder = self._builder(schema, doc)
        if isinstance(builder, Schema):
            if force_optional and not builder.optional:
                return builder.replace(optional=True)
            return builder
        if "title" in schema and builder._name is None:
            builder.name(str(schema["title"]))
        if "connect.version" in schema:
            builder.version(int(schema["connect.version"]))
        if "description" in schema:
            builder.doc(str(schema["description"]))
        params = schema.get("connect.parameters")
        if isinstance(params, dict):
            builder.parameters({str(k): str(v) for k, v in params.items()})
        if force_optional:
            builder.optional()
        if "default" in schema and schema["default"] is not None:
            builder.default_value(self.read_default(builder.build(), schema["default"]))
        return builder.build()

    def _builder(self, schema: dict[str, Any], doc: Any) -> SchemaBuilder | Schema:
        declared = schema.get("type")
        if isinstance(declared, list):
            kinds = [str(k) for k in declared]
            if len(kinds) == 1:
                declared = kinds[0]
            else:
                branches = [{**schema, "type": k} for k in kinds]
                return self._union(branches, doc, "anyOf")
        for criterion in ("oneOf", "anyOf"):
            if isinstance(schema.get(criterion), list):
                return self._union(schema[criterion], doc, criterion)
        if isinstance(schema.get("allOf"), list):
            return self._all_of(schema, doc)
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            builder = SchemaBuilder.string()
            builder.parameter(ENUM_PARAM, "")
            for v in values:
                text = "null" if v is None else str(v)
                builder.parameter(f"{ENUM_PARAM}.{text}", text)
            return builder
        connect_type = schema.get("connect.type")
        if declared in ("integer", "number"):
            if connect_type in _FROM_CONNECT_TYPE:
                return _FROM_CONNECT_TYPE[connect_type]()
            if connect_type is not None:
                raise DataError(f"Unsupported connect.type {connect_type}")
            return SchemaBuilder.int64() if declared == "integer" else SchemaBuilder.float64()
        if declared == "string":
            return SchemaBuilder.bytes() if connect_type == "bytes" else SchemaBuilder.string()
        if declared == "boolean":
            return SchemaBuilder.boolean()
        if declared == "array" or (declared is None and "items" in schema):
            items = schema.get("items")
            if items is None:
                raise DataError("Array schema did not specify the items type")
            items, items_doc = self.deref(items, doc)
            if connect_type == "map" and isinstance(items, dict):
                entry = items.get("properties") or {}
                if "key" in entry and "value" in entry:
                    return SchemaBuilder.map(
                        self.read(entry["key"], items_doc), self.read(entry["value"], items_doc)
                    )
            return SchemaBuilder.array(self.read(items, items_doc))
        if declared == "object" or (declared is None and "properties" in schema):
            if connect_type == "map":
                values = schema.get("additionalProperties")
                if not isinstance(values, dict):
                    raise DataError("A connect.type map object needs additionalProperties")
                return SchemaBuilder.map(Schema.STRING_SCHEMA, self.read(values, doc))
            return self._struct(schema, doc)
        raise DataError(f"Unsupported JSON Schema {schema!r}")

    def _struct(self, schema: dict[str, Any], doc: Any) -> SchemaBuilder:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        order: list[tuple[int, int, str, Any]] = []
        for position, (name, sub) in enumerate(props.items()):
            target, _ = self.deref(sub, doc)
            index = target.get("connect.index") if isinstance(target, dict) else None
            if isinstance(sub, dict) and "connect.index" in sub:
                index = sub["connect.index"]
            order.append((int(index) if index is not None else position, position, name, sub))
        builder = SchemaBuilder.struct()
        for _, _, name, sub in sorted(order):
            optional = self.optional_for_nonrequired and name not in required
            builder.field(name, self.read(sub, doc, optional))
        return builder

    def _union(self, branches: list[Any], doc: Any, criterion: str) -> Schema | SchemaBuilder:
        resolved = [self.deref(b, doc) for b in branches]
        nulls = [b for b, _ in resolved if _is_null(b)]
        others = [(b, d) for b, d in resolved if not _is_null(b)]
        if len(resolved) == 1:
            return self.read(*resolved[0])
        if nulls and len(others) == 1:
            return self.read(others[0][0], others[0][1], True)
        builder = SchemaBuilder.struct().name(ONE_OF)
        for i, (branch, branch_doc) in enumerate(others):
            builder.field(f"{ONE_OF}.field.{i}", self.read(branch, branch_doc, True))
        if nulls:
            builder.optional()
        return builder

    def _all_of(self, schema: dict[str, Any], doc: Any) -> Schema | SchemaBuilder:
        parts = [self.deref(p, doc)[0] for p in schema["allOf"]]
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in parts:
            if isinstance(part, dict):
                for k, v in part.items():
                    if k == "properties" and isinstance(v, dict):
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required" and isinstance(v, list):
                        merged["required"] = list(merged.get("required", [])) + v
                    else:
                        merged.setdefault(k, v)
        if "enum" in merged and merged.get("type") in ("integer", "number"):
            merged.pop("enum")
        merged.pop("const", None) if merged.get("type") else None
        return self._builder(merged, doc)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def json_schema_to_connect(
    schema: Any,
    references: Mapping[str, Any] | None = None,
    *,
    optional_for_nonrequired: bool = False,
    read_default: Callable[[Schema, Any], Any] | None = None,
) -> Schema:
    """The Connect schema of the parsed JSON Schema ``schema`` (``references``: name ->
    parsed document of each reference); ``read_default(schema, json)`` reads a default."""
    reader = _Reader(
        schema, references or {}, optional_for_nonrequired, read_default or _plain_default
    )
    return reader.read(schema, schema)


def _plain_default(schema: Schema, value: Any) -> Any:
    if schema.type is Type.BYTES and isinstance(value, str):
        try:
            return binascii.a2b_base64(value)
        except binascii.Error as exc:
            raise DataError(f"Invalid bytes default {value!r}") from exc
    return value
