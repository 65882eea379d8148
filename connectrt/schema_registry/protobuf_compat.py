"""Protobuf schema compatibility, by the differences Confluent's registry checks.

``incompatible(reader, writer)`` answers "can a consumer with ``reader`` read what a producer
with ``writer`` wrote": it compares the writer's file (the original) with the reader's (the
update) and reports the differences Confluent's ``SchemaDiff`` counts as incompatible:

* ``PACKAGE_CHANGED``; ``MESSAGE_REMOVED`` (a message type of the writer is gone);
* for each field number present in both: ``FIELD_KIND_CHANGED`` (scalar, message, enum or
  map), ``FIELD_SCALAR_KIND_CHANGED`` (outside the wire-compatible groups int32/uint32/int64/
  uint64/bool, sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, string/bytes),
  ``FIELD_NAMED_TYPE_CHANGED`` (another message or enum type), ``FIELD_NUMERIC_LABEL_CHANGED``
  (repeated <-> singular), ``FIELD_MOVED_TO_EXISTING_ONEOF`` and
  ``MULTIPLE_FIELDS_MOVED_TO_ONEOF``;
* ``ONEOF_FIELD_REMOVED``; ``REQUIRED_FIELD_ADDED`` / ``REQUIRED_FIELD_REMOVED`` (proto2).

Compatible (not reported): fields added or removed, renamed fields, enums and enum constants
added, removed or renumbered, oneofs added, messages added. The levels are built on this by
:func:`connectrt.schema_registry.schema_types.check_compatibility`.
"""

from __future__ import annotations

from typing import Final

from google.protobuf import descriptor_pb2

from connectrt.converters.protobuf.descriptors import FileProto

__all__ = ["incompatible"]

F = descriptor_pb2.FieldDescriptorProto
_GROUPS: Final = (
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
)


def _messages(file: FileProto) -> dict[str, descriptor_pb2.DescriptorProto]:
    out: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(msg: descriptor_pb2.DescriptorProto, prefix: str) -> None:
        name = f"{prefix}{msg.name}"
        out[name] = msg
        for nested in msg.nested_type:
            walk(nested, name + ".")

    for msg in file.message_type:
        walk(msg, "")
    return out


def _relative(type_name: str, package: str) -> str:
    name = type_name.lstrip(".")
    if package and name.startswith(package + "."):
        return name[len(package) + 1 :]
    return name


def _kind(
    field: descriptor_pb2.FieldDescriptorProto,
    msgs: dict[str, descriptor_pb2.DescriptorProto],
    package: str,
) -> str:
    if field.type == F.TYPE_ENUM:
        return "enum"
    if field.type == F.TYPE_MESSAGE or field.type == F.TYPE_GROUP:
        target = msgs.get(_relative(field.type_name, package))
        return "map" if target is not None and target.options.map_entry else "message"
    return "scalar"


def _scalars_compatible(a: int, b: int) -> bool:
    return a == b or any(a in group and b in group for group in _GROUPS)


def _real_oneof(
    msg: descriptor_pb2.DescriptorProto, field: descriptor_pb2.FieldDescriptorProto
) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return msg.oneof_decl[field.oneof_index].name


def incompatible(reader: FileProto, writer: FileProto) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` ([] if it can)."""
    out: list[str] = []
    if reader.package != writer.package:
        out.append(f"PACKAGE_CHANGED at #/: {writer.package!r} -> {reader.package!r}")
    rmsgs, wmsgs = _messages(reader), _messages(writer)
    for name, wmsg in wmsgs.items():
        rmsg = rmsgs.get(name)
        if rmsg is None:
            if not wmsg.options.map_entry:
                out.append(f"MESSAGE_REMOVED at #/{name}")
            continue
        out += _message(name, rmsg, wmsg, rmsgs, wmsgs, reader.package, writer.package)
    return out


def _message(
    name: str,
    rmsg: descriptor_pb2.DescriptorProto,
    wmsg: descriptor_pb2.DescriptorProto,
    rmsgs: dict[str, descriptor_pb2.DescriptorProto],
    wmsgs: dict[str, descriptor_pb2.DescriptorProto],
    rpackage: str,
    wpackage: str,
) -> list[str]:
    out: list[str] = []
    rfields = {f.number: f for f in rmsg.field}
    wfields = {f.number: f for f in wmsg.field}
    moved_into: dict[str, int] = {}
    for number, wf in wfields.items():
        where = f"#/{name}/{number}"
        rf = rfields.get(number)
        if rf is None:
            if _real_oneof(wmsg, wf) is not None:
                out.append(f"ONEOF_FIELD_REMOVED at {where}: field {wf.name}")
            if wf.label == F.LABEL_REQUIRED:
                out.append(f"REQUIRED_FIELD_REMOVED at {where}: field {wf.name}")
            continue
        wkind, rkind = _kind(wf, wmsgs, wpackage), _kind(rf, rmsgs, rpackage)
        if wkind != rkind:
            out.append(f"FIELD_KIND_CHANGED at {where}: {wkind} -> {rkind}")
        elif wkind == "scalar" and not _scalars_compatible(wf.type, rf.type):
            out.append(
                f"FIELD_SCALAR_KIND_CHANGED at {where}: "
                f"{F.Type.Name(wf.type)[5:].lower()} -> {F.Type.Name(rf.type)[5:].lower()}"
            )
        elif wkind in ("message", "enum") and _relative(wf.type_name, wpackage) != _relative(
            rf.type_name, rpackage
        ):
            out.append(
                f"FIELD_NAMED_TYPE_CHANGED at {where}: "
                f"{wf.type_name.lstrip('.')} -> {rf.type_name.lstrip('.')}"
            )
        if wkind != "map" and (wf.label == F.LABEL_REPEATED) != (rf.label == F.LABEL_REPEATED):
            out.append(f"FIELD_NUMERIC_LABEL_CHANGED at {where}: field {rf.name}")
        woneof, roneof = _real_oneof(wmsg, wf), _real_oneof(rmsg, rf)
        if woneof is None and roneof is not None:
            existed = any(_real_oneof(wmsg, f) == roneof for f in wmsg.field)
            if existed:
                out.append(f"FIELD_MOVED_TO_EXISTING_ONEOF at {where}: field {rf.name}")
            else:
                moved_into[roneof] = moved_into.get(roneof, 0) + 1
    for oneof, count in moved_into.items():
        if count > 1:
            out.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF at #/{name}: oneof {oneof}")
    for number, rf in rfields.items():
        if number not in wfields and rf.label == F.LABEL_REQUIRED:
            out.append(f"REQUIRED_FIELD_ADDED at #/{name}/{number}: field {rf.name}")
    return out
