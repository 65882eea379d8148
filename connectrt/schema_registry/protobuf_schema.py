"""PROTOBUF schemas in the built-in registry: parsing (``.proto`` text or the base64
``FileDescriptorProto`` that Confluent's clients register, with the texts of its references
by import name; builtin imports need none) and the two forms the REST API answers with.

Thread-safety: parsed schemas are immutable.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

from connectrt.converters.protobuf.descriptors import build_pool
from connectrt.converters.protobuf.proto_render import render_proto
from connectrt.converters.protobuf.proto_text import schema_file
from connectrt.errors import DataError
from connectrt.schema_registry.compatibility import InvalidSchemaError
from connectrt.schema_registry.schema_records import Reference, SchemaVersion

__all__ = [
    "ParsedProtobufSchema",
    "parse_protobuf",
    "protobuf_text",
    "reference_texts",
    "version_answer",
]

_MAIN = "schema.proto"


@dataclass(frozen=True)
class ParsedProtobufSchema:
    """A Protobuf schema: its text, its file with type names resolved (``file``), the files
    it imports by name (``deps``) and a canonical ``.proto`` text."""

    text: str
    file: descriptor_pb2.FileDescriptorProto
    deps: Mapping[str, descriptor_pb2.FileDescriptorProto]
    canonical: str

    def serialized(self) -> str:
        """Base64 of the serialized FileDescriptorProto (``?format=serialized``)."""
        return base64.b64encode(self.file.SerializeToString()).decode("ascii")


def parse_protobuf(text: str, references: Mapping[str, str]) -> ParsedProtobufSchema:
    """Parse a PROTOBUF schema (``references``: import name -> text of that schema)."""
    try:
        deps = {name: schema_file(ref, name) for name, ref in references.items()}
        main = schema_file(text, _MAIN)
        _pool, file = build_pool(main, deps)
    except DataError as exc:
        raise InvalidSchemaError(f"Invalid schema {text}: {exc}") from None
    resolved = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(resolved)
    return ParsedProtobufSchema(text, resolved, deps, render_proto(resolved))


def protobuf_text(text: str, references: Mapping[str, str], fmt: str | None) -> str:
    """The stored ``text`` as the REST API answers it: base64 for ``format=serialized``,
    ``.proto`` text otherwise (a schema registered as base64 is rendered as text)."""
    stripped = text.strip()
    is_text = any(c in stripped for c in "{;")
    if (fmt or "").lower() == "serialized":
        parsed = parse_protobuf(text, references)
        return parsed.serialized()
    if is_text:
        return text
    return parse_protobuf(text, references).canonical


def reference_texts(
    references: Sequence[Reference], get_version: Callable[[str, int], SchemaVersion]
) -> dict[str, str]:
    """The texts of ``references`` and, transitively, of theirs, by import name."""
    texts: dict[str, str] = {}
    seen: set[tuple[str, int]] = set()
    pending = list(references)
    while pending:
        ref = pending.pop()
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        target = get_version(ref.subject, ref.version)
        texts[ref.name] = target.schema
        pending.extend(target.references)
    return texts


def version_answer(
    sv: SchemaVersion, fmt: str | None, get_version: Callable[[str, int], SchemaVersion]
) -> str:
    """The schema text of ``sv`` as the REST API answers it (see :func:`protobuf_text`);
    other schema types as stored."""
    if sv.schema_type != "PROTOBUF":
        return sv.schema
    return protobuf_text(sv.schema, reference_texts(sv.references, get_version), fmt)
