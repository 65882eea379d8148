"""JSON Schema documents as the compatibility check sees them: a tree of :class:`Node`.

A node is one of the kinds a JSON Schema validator distinguishes (Confluent's registry uses
everit's model, and so does this one): ``object``, ``array``, ``string``, ``number`` (with an
``integer`` flag: ``"type": "integer"`` is a number that requires integers), ``boolean``,
``null``, ``enum``, ``const``, ``not``, ``combined`` (``allOf``/``anyOf``/``oneOf``; a
``"type"`` list is an ``anyOf`` of one node per type), ``empty`` (``{}`` or ``true``) and
``false``. A schema holding keywords of several kinds (``"type": "string"`` with an
``enum``) is an ``allOf`` of them.

``$ref`` is resolved in the document itself (JSON pointers such as ``#/definitions/x`` or
``#/$defs/x``) and in the documents of the schema's references (``name`` or
``name#/pointer``). A reference that loops back yields the node under construction, so
recursive schemas load (and the diff cuts the cycle). Draft-07 and 2020-12 keywords are read
alike (``definitions``/``$defs``, array ``items`` lists and ``prefixItems``).

:func:`load` is pure; the nodes are read-only once built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["InvalidJsonSchemaError", "Node", "load"]

_OBJECT_KEYS = (
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "dependencies",
    "propertyNames",
)
_ARRAY_KEYS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems")
_STRING_KEYS = ("minLength", "maxLength", "pattern", "format")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")


class InvalidJsonSchemaError(ValueError):
    """The text is not a JSON Schema the registry can read."""


class Node:
    """One schema of the tree (see the module's docstring for the kinds)."""

    def __init__(self, kind: str, raw: Mapping[str, Any]) -> None:
        self.kind = kind
        self.raw = raw
        self.integer = False
        self.criterion = ""
        self.subs: list[Node] = []
        self.properties: dict[str, Node] = {}
        self.required: set[str] = set()
        #: True when additional properties are allowed (no schema), False when they are not.
        self.additional: bool = True
        self.additional_schema: Node | None = None
        self.pattern_properties: dict[str, Node] = {}
        self.items: Node | None = None
        self.item_list: list[Node] = []
        self.additional_items: bool = True
        self.additional_items_schema: Node | None = None
        self.not_schema: Node | None = None
        self.values: list[Any] = []

    @property
    def key(self) -> str:
        """Identity of the schema (two equal subschemas of a union count once)."""
        flag = "i" if self.integer else ""
        return f"{self.kind}{flag}:{json.dumps(self.raw, sort_keys=True, default=str)}"

    def get(self, keyword: str) -> Any:
        """A keyword of this node's schema (None when absent)."""
        return self.raw.get(keyword)

    def has_default(self) -> bool:
        return "default" in self.raw

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.key[:60]})"


class _Loader:
    def __init__(self, root: Any, references: Mapping[str, Any]) -> None:
        self.root = root
        self.references = references
        self.built: dict[tuple[int, str], Node] = {}

    def node(self, schema: Any, doc: Any) -> Node:
        if schema is True or schema == {}:
            return Node("empty", {})
        if schema is False:
            return Node("false", {})
        if not isinstance(schema, dict):
            raise InvalidJsonSchemaError(f"Invalid JSON Schema: {schema!r} is not a schema")
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.resolve(ref, doc)
        parts = self.parts(schema, doc)
        if not parts:
            node = Node("empty", schema)
        elif len(parts) == 1:
            node = parts[0]
        else:
            node = Node("combined", schema)
            node.criterion = "allOf"
            node.subs = parts
        return node

    def resolve(self, ref: str, doc: Any) -> Node:
        name, _, pointer = ref.partition("#")
        if name:
            target_doc = self.references.get(name)
            if target_doc is None:
                raise InvalidJsonSchemaError(f"Invalid JSON Schema: unresolved $ref {ref!r}")
        else:
            target_doc = doc
        key = (id(target_doc), pointer)
        built = self.built.get(key)
        if built is not None:
            return built
        target: Any = target_doc
        for token in [t for t in pointer.split("/") if t]:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                raise InvalidJsonSchemaError(f"Invalid JSON Schema: unresolved $ref {ref!r}")
        if target is True or target is False or not isinstance(target, dict):
            return self.node(target, target_doc)
        # A placeholder first, filled in place: a reference back to it finds it.
        placeholder = Node("empty", target)
        self.built[key] = placeholder
        node = self.node(target, target_doc)
        placeholder.__dict__.update(node.__dict__)
        return placeholder

    def parts(self, schema: dict[str, Any], doc: Any) -> list[Node]:
        parts: list[Node] = []
        declared = schema.get("type")
        if isinstance(declared, list):
            typed = [self.typed(schema, str(t), doc) for t in declared]
            if len(typed) == 1:
                parts.append(typed[0])
            elif typed:
                union = Node("combined", {"anyOf": declared})
                union.criterion = "anyOf"
                union.subs = typed
                parts.append(union)
        elif isinstance(declared, str):
            parts.append(self.typed(schema, declared, doc))
        else:
            for kind, keys in (
                ("object", _OBJECT_KEYS),
                ("array", _ARRAY_KEYS),
                ("string", _STRING_KEYS),
                ("number", _NUMBER_KEYS),
            ):
                if any(k in schema for k in keys):
                    parts.append(self.typed(schema, kind, doc))
                    break
        if "enum" in schema:
            node = Node("enum", {"enum": schema["enum"]})
            node.values = list(schema["enum"]) if isinstance(schema["enum"], list) else []
            parts.append(node)
        if "const" in schema:
            node = Node("const", {"const": schema["const"]})
            node.values = [schema["const"]]
            parts.append(node)
        if "not" in schema:
            node = Node("not", {"not": schema["not"]})
            node.not_schema = self.node(schema["not"], doc)
            parts.append(node)
        for criterion in ("allOf", "anyOf", "oneOf"):
            subs = schema.get(criterion)
            if isinstance(subs, list):
                node = Node("combined", schema if len(parts) == 0 else {criterion: subs})
                node.criterion = criterion
                node.subs = [self.node(s, doc) for s in subs]
                parts.append(node)
        if len(parts) == 1:
            parts[0].raw = schema  # the one part carries the annotations (title, connect.*)
        return parts

    def typed(self, schema: dict[str, Any], kind: str, doc: Any) -> Node:
        if kind not in _TYPES:
            raise InvalidJsonSchemaError(f"Invalid JSON Schema: unknown type {kind!r}")
        if kind == "integer":
            node = Node("number", schema)
            node.integer = True
            return node
        node = Node(kind, schema)
        if kind == "object":
            props = schema.get("properties") or {}
            if not isinstance(props, dict):
                raise InvalidJsonSchemaError("Invalid JSON Schema: properties must be an object")
            node.properties = {k: self.node(v, doc) for k, v in props.items()}
            node.required = set(schema.get("required") or [])
            additional = schema.get("additionalProperties", True)
            if isinstance(additional, bool):
                node.additional = additional
            else:
                node.additional_schema = self.node(additional, doc)
                if node.additional_schema.kind == "empty":
                    node.additional_schema = None
            patterns = schema.get("patternProperties") or {}
            node.pattern_properties = {k: self.node(v, doc) for k, v in patterns.items()}
        elif kind == "array":
            items = schema.get("items")
            prefix = schema.get("prefixItems")
            if isinstance(items, list):
                node.item_list = [self.node(i, doc) for i in items]
                extra = schema.get("additionalItems", True)
            elif isinstance(prefix, list):
                node.item_list = [self.node(i, doc) for i in prefix]
                extra = items if items is not None else True
            else:
                node.items = None if items is None else self.node(items, doc)
                extra = True
            if isinstance(extra, bool):
                node.additional_items = extra
            else:
                node.additional_items_schema = self.node(extra, doc)
        return node


def load(schema: Any, references: Mapping[str, Any] | None = None) -> Node:
    """The tree of the parsed JSON Schema ``schema``; ``references`` maps each reference
    name to its parsed document."""
    loader = _Loader(schema, references or {})
    return loader.node(schema, schema)
