"""``.proto`` source text of a ``FileDescriptorProto``: what the converter registers and what
the registry answers for a schema registered as a base64 descriptor.

Types are written fully qualified with a leading dot (unambiguous wherever the text is read);
map entry types are written back as ``map<K, V>``; proto3 ``optional`` fields are written
with the keyword and their synthetic oneofs left out; ``confluent.field_meta`` params are
written as Confluent writes them.

Thread-safety: pure functions.
"""

from __future__ import annotations

import json

from google.protobuf import descriptor_pb2

from connectrt.converters.protobuf.descriptors import field_meta
from connectrt.converters.protobuf.proto_text import SCALARS

__all__ = ["render_proto"]

F = descriptor_pb2.FieldDescriptorProto
_SCALAR_NAMES = {number: name for name, number in SCALARS.items()}
_INDENT = "  "


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type_name:
        return field.type_name
    return _SCALAR_NAMES.get(field.type, "bytes")


def _options(field: descriptor_pb2.FieldDescriptorProto, proto3: bool) -> str:
    parts = []
    if field.HasField("default_value") and not proto3:
        value = field.default_value
        quoted = field.type in (F.TYPE_STRING, F.TYPE_BYTES)
        parts.append(f"default = {_quote(value) if quoted else value}")
    if field.options.HasField("packed"):
        parts.append(f"packed = {str(field.options.packed).lower()}")
    if field.options.deprecated:
        parts.append("deprecated = true")
    if field.HasField("json_name") and field.json_name:
        parts.append(f"json_name = {_quote(field.json_name)}")
    meta = field_meta(field.options)
    if meta:
        entries = ", ".join(f"{{ key: {_quote(k)}, value: {_quote(v)} }}" for k, v in meta.items())
        parts.append(f"(confluent.field_meta) = {{ params: [{entries}] }}")
    return f" [{', '.join(parts)}]" if parts else ""


def _reserved(ranges: list[tuple[int, int]], names: list[str], indent: str) -> list[str]:
    lines = []
    if ranges:
        spans = [
            str(a) if a == b else f"{a} to {'max' if b >= 536870911 else b}" for a, b in ranges
        ]
        lines.append(f"{indent}reserved {', '.join(spans)};")
    if names:
        lines.append(f"{indent}reserved {', '.join(_quote(n) for n in names)};")
    return lines


def _enum(enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> list[str]:
    lines = [f"{indent}enum {enum.name} {{"]
    inner = indent + _INDENT
    if enum.options.allow_alias:
        lines.append(f"{inner}option allow_alias = true;")
    lines += _reserved(
        [(r.start, r.end) for r in enum.reserved_range], list(enum.reserved_name), inner
    )
    lines += [f"{inner}{v.name} = {v.number};" for v in enum.value]
    lines.append(f"{indent}}}")
    return lines


def _message(msg: descriptor_pb2.DescriptorProto, indent: str, proto3: bool) -> list[str]:
    lines = [f"{indent}message {msg.name} {{"]
    inner = indent + _INDENT
    entries = {n.name: n for n in msg.nested_type if n.options.map_entry}
    synthetic = {
        f.oneof_index for f in msg.field if f.HasField("oneof_index") and f.proto3_optional
    }
    lines += _reserved(
        [(r.start, r.end - 1) for r in msg.reserved_range], list(msg.reserved_name), inner
    )
    written_oneofs: set[int] = set()
    for field in msg.field:
        if field.HasField("oneof_index") and field.oneof_index not in synthetic:
            index = field.oneof_index
            if index in written_oneofs:
                continue
            written_oneofs.add(index)
            lines.append(f"{inner}oneof {msg.oneof_decl[index].name} {{")
            for member in msg.field:
                if member.HasField("oneof_index") and member.oneof_index == index:
                    lines.append(f"{inner}{_INDENT}{_field(member, entries, proto3)}")
            lines.append(f"{inner}}}")
        else:
            lines.append(f"{inner}{_field(field, entries, proto3)}")
    for nested in msg.nested_type:
        if not nested.options.map_entry:
            lines += _message(nested, inner, proto3)
    for enum in msg.enum_type:
        lines += _enum(enum, inner)
    lines.append(f"{indent}}}")
    return lines


def _field(
    field: descriptor_pb2.FieldDescriptorProto,
    entries: dict[str, descriptor_pb2.DescriptorProto],
    proto3: bool,
) -> str:
    entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.type_name else None
    if entry is not None and field.label == F.LABEL_REPEATED:
        key, value = entry.field[0], entry.field[1]
        kind = f"map<{_type(key)}, {_type(value)}>"
    else:
        label = ""
        if field.label == F.LABEL_REPEATED:
            label = "repeated "
        elif field.label == F.LABEL_REQUIRED:
            label = "required "
        elif field.proto3_optional or (not proto3 and not field.HasField("oneof_index")):
            label = "optional "
        kind = label + _type(field)
    return f"{kind} {field.name} = {field.number}{_options(field, proto3)};"


def render_proto(proto: descriptor_pb2.FileDescriptorProto) -> str:
    """``proto`` as ``.proto`` source text (parsing it again gives an equivalent file)."""
    proto3 = proto.syntax == "proto3"
    lines = [f'syntax = "{"proto3" if proto3 else "proto2"}";']
    if proto.package:
        lines.append(f"package {proto.package};")
    lines.append("")
    public, weak = set(proto.public_dependency), set(proto.weak_dependency)
    for index, dep in enumerate(proto.dependency):
        kind = "public " if index in public else "weak " if index in weak else ""
        lines.append(f"import {kind}{_quote(dep)};")
    for name in ("java_package", "java_outer_classname", "go_package", "csharp_namespace"):
        if proto.options.HasField(name):
            lines.append(f"option {name} = {_quote(getattr(proto.options, name))};")
    if proto.options.HasField("java_multiple_files"):
        lines.append(
            f"option java_multiple_files = {str(proto.options.java_multiple_files).lower()};"
        )
    if len(lines) > 3:
        lines.append("")
    for msg in proto.message_type:
        lines += _message(msg, "", proto3)
    for enum in proto.enum_type:
        lines += _enum(enum, "")
    return "\n".join(lines) + "\n"
