"""The schema types the registry serves (``AVRO``, ``JSON``, ``PROTOBUF``;
``GET /schemas/types``): for each, how a schema text is parsed (with the texts of its
references, by reference name) and how compatibility is decided between two parsed schemas.

A parsed schema has a ``canonical`` text (equal schemas written differently get one id) and
:func:`can_read` answers "can ``reader`` read what ``writer`` wrote", with the reasons it
cannot. The levels (BACKWARD, FORWARD, FULL, their TRANSITIVE variants, NONE) are built on
``can_read`` alike for every type by :func:`check_compatibility` (through
:func:`~connectrt.schema_registry.compatibility.check_levels`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectrt.schema_registry.compatibility import (
    InvalidSchemaError,
    ParsedSchema,
    check_levels,
    parse_avro,
)
from connectrt.schema_registry.compatibility import can_read as avro_can_read
from connectrt.schema_registry.json_schema_compat import incompatible
from connectrt.schema_registry.json_schema_model import InvalidJsonSchemaError, Node, load
from connectrt.schema_registry.protobuf_compat import incompatible as protobuf_incompatible
from connectrt.schema_registry.protobuf_schema import ParsedProtobufSchema, parse_protobuf

__all__ = [
    "SCHEMA_TYPES",
    "InvalidSchemaError",
    "ParsedJsonSchema",
    "check_compatibility",
    "parse",
]


@dataclass(frozen=True)
class ParsedJsonSchema:
    """A JSON Schema document: its text, canonical form and :class:`Node` tree."""

    text: str
    raw: Any
    canonical: str
    tree: Node


def parse_json_schema(text: str, references: Mapping[str, str]) -> ParsedJsonSchema:
    """Parse a JSON Schema (``references``: name -> text of each referenced schema)."""
    try:
        raw = json.loads(text)
        docs = {name: json.loads(ref) for name, ref in references.items()}
    except (TypeError, ValueError) as exc:
        raise InvalidSchemaError(f"Invalid schema: not JSON: {exc}") from None
    if not isinstance(raw, dict | bool):
        raise InvalidSchemaError(f"Invalid JSON Schema {text}: not an object or a boolean")
    try:
        tree = load(raw, docs)
    except InvalidJsonSchemaError as exc:
        raise InvalidSchemaError(str(exc)) from None
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    return ParsedJsonSchema(text, raw, canonical, tree)


def _json_can_read(reader: ParsedJsonSchema, writer: ParsedJsonSchema) -> list[str]:
    return incompatible(reader.tree, writer.tree)


def _parse_avro(text: str, references: Mapping[str, str]) -> ParsedSchema:
    return parse_avro(text)


def _protobuf_can_read(reader: ParsedProtobufSchema, writer: ParsedProtobufSchema) -> list[str]:
    return protobuf_incompatible(reader.file, writer.file)


@dataclass(frozen=True)
class SchemaType:
    """One schema type: its parser and its ``can_read``."""

    parse: Callable[[str, Mapping[str, str]], Any]
    can_read: Callable[[Any, Any], list[str]]


SCHEMA_TYPES: dict[str, SchemaType] = {
    "AVRO": SchemaType(_parse_avro, avro_can_read),
    "JSON": SchemaType(parse_json_schema, _json_can_read),
    "PROTOBUF": SchemaType(parse_protobuf, _protobuf_can_read),
}


def parse(schema_type: str, text: str, references: Mapping[str, str] | None = None) -> Any:
    """``text`` parsed as a ``schema_type`` schema (InvalidSchemaError when it is not)."""
    kind = SCHEMA_TYPES.get(schema_type)
    if kind is None:
        raise InvalidSchemaError(f"Invalid schema type {schema_type}")
    return kind.parse(text, references or {})


def check_compatibility(
    schema_type: str, level: str, new: Any, previous: Sequence[Any]
) -> list[str]:
    """Why ``new`` is incompatible with ``previous`` (oldest first) at ``level``, by the
    ``can_read`` of ``schema_type``; [] if not (see :func:`check_levels`)."""
    return check_levels(level, new, previous, SCHEMA_TYPES[schema_type].can_read)
