"""The files every Protobuf schema may import without a registry reference, pools built from
a file and its dependencies, and the locating of message types by message index.

Built in (as Confluent's registry and serializers treat them): ``google/protobuf/*.proto``
(from the ``protobuf`` package), ``google/type/date.proto`` and ``timeofday.proto``,
``confluent/meta.proto`` (the ``confluent.field_meta`` option that carries ``connect.*``
parameters) and ``confluent/type/decimal.proto`` (also under the Python client's spelling
``confluent/types/decimal.proto``).

Thread-safety: the builtin table is built once at import and only read; pools are built per
schema and owned by their caller.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Final, TypeAlias

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.descriptor_pool import DescriptorPool

from connectrt.errors import DataError

__all__ = [
    "META_EXTENSION",
    "FileProto",
    "build_pool",
    "builtin_file",
    "field_meta",
    "indexes_of",
    "is_builtin",
    "message_at",
    "set_field_meta",
]

FileProto: TypeAlias = descriptor_pb2.FileDescriptorProto
FieldProto: TypeAlias = descriptor_pb2.FieldDescriptorProto
META_EXTENSION: Final = 1088
"""The field number of ``confluent.field_meta`` in ``google.protobuf.FieldOptions``."""

_T = FieldProto

_WELL_KNOWN: Final = (
    "any",
    "api",
    "descriptor",
    "duration",
    "empty",
    "field_mask",
    "source_context",
    "struct",
    "timestamp",
    "type",
    "wrappers",
)
"""The ``google/protobuf/<name>.proto`` files the ``protobuf`` package ships (as ``<name>_pb2``)."""


def _copy(module_descriptor: FileDescriptor) -> FileProto:
    proto = FileProto()
    module_descriptor.CopyToProto(proto)
    return proto


def _message(name: str, fields: list[tuple[str, int, int]]) -> descriptor_pb2.DescriptorProto:
    msg = descriptor_pb2.DescriptorProto(name=name)
    for fname, number, ftype in fields:
        msg.field.add(name=fname, number=number, type=ftype, label=_T.LABEL_OPTIONAL)
    return msg


def _file(name: str, package: str, *messages: descriptor_pb2.DescriptorProto) -> FileProto:
    proto = FileProto(name=name, package=package, syntax="proto3")
    proto.message_type.extend(messages)
    return proto


def _meta_file() -> FileProto:
    meta = _message("Meta", [("doc", 1, _T.TYPE_STRING)])
    meta.field.add(
        name="params",
        number=2,
        type=_T.TYPE_MESSAGE,
        label=_T.LABEL_REPEATED,
        type_name=".confluent.Meta.ParamsEntry",
    )
    meta.field.add(name="tags", number=3, type=_T.TYPE_STRING, label=_T.LABEL_REPEATED)
    entry = _message("ParamsEntry", [("key", 1, _T.TYPE_STRING), ("value", 2, _T.TYPE_STRING)])
    entry.options.map_entry = True
    meta.nested_type.append(entry)
    proto = _file("confluent/meta.proto", "confluent", meta)
    proto.dependency.append("google/protobuf/descriptor.proto")
    for ext_name, extendee in (
        ("file_meta", "FileOptions"),
        ("message_meta", "MessageOptions"),
        ("field_meta", "FieldOptions"),
        ("enum_meta", "EnumOptions"),
        ("enum_value_meta", "EnumValueOptions"),
    ):
        proto.extension.add(
            name=ext_name,
            extendee=f".google.protobuf.{extendee}",
            number=META_EXTENSION,
            label=_T.LABEL_OPTIONAL,
            type=_T.TYPE_MESSAGE,
            type_name=".confluent.Meta",
        )
    return proto


def _decimal_file(name: str) -> FileProto:
    return _file(
        name,
        "confluent.type",
        _message(
            "Decimal",
            [
                ("value", 1, _T.TYPE_BYTES),
                ("precision", 2, _T.TYPE_UINT32),
                ("scale", 3, _T.TYPE_INT32),
            ],
        ),
    )


def _builtins() -> dict[str, FileProto]:
    files = {
        f.name: f
        for f in (
            _copy(importlib.import_module(f"google.protobuf.{name}_pb2").DESCRIPTOR)
            for name in _WELL_KNOWN
        )
    }
    int32 = _T.TYPE_INT32
    files["google/type/date.proto"] = _file(
        "google/type/date.proto",
        "google.type",
        _message("Date", [("year", 1, int32), ("month", 2, int32), ("day", 3, int32)]),
    )
    files["google/type/timeofday.proto"] = _file(
        "google/type/timeofday.proto",
        "google.type",
        _message(
            "TimeOfDay",
            [
                ("hours", 1, int32),
                ("minutes", 2, int32),
                ("seconds", 3, int32),
                ("nanos", 4, int32),
            ],
        ),
    )
    files["confluent/meta.proto"] = _meta_file()
    for name in ("confluent/type/decimal.proto", "confluent/types/decimal.proto"):
        files[name] = _decimal_file(name)
    return files


_BUILTINS: Final = _builtins()


def is_builtin(name: str) -> bool:
    """Whether an import of ``name`` needs no registry reference (Confluent's rule)."""
    return name.startswith(("google/protobuf/", "google/type/", "confluent/"))


def builtin_file(name: str) -> FileProto | None:
    """The builtin file ``name`` (a copy), None when it is not one this module knows."""
    found = _BUILTINS.get(name)
    if found is None:
        return None
    copy = FileProto()
    copy.CopyFrom(found)
    return copy


def build_pool(
    main: FileProto, lookup: Callable[[str], FileProto | None] | Mapping[str, FileProto]
) -> tuple[DescriptorPool, FileDescriptor]:
    """A pool holding ``main`` and, transitively, its dependencies: builtin files, else what
    ``lookup`` (a mapping or a function of the import name) gives. DataError when an import
    cannot be found or the files do not build."""
    find = lookup.get if isinstance(lookup, Mapping) else lookup
    pool = DescriptorPool()
    added: set[str] = set()

    def add(proto: FileProto, chain: tuple[str, ...]) -> None:
        for dep in proto.dependency:
            if dep in added:
                continue
            if dep in chain:
                raise DataError(f"Circular import of {dep} in Protobuf schema")
            found = find(dep) or _BUILTINS.get(dep)
            if found is None:
                raise DataError(f"Protobuf schema imports {dep}, which is not a known reference")
            if found.name != dep:
                renamed = FileProto()
                renamed.CopyFrom(found)
                renamed.name = dep
                found = renamed
            add(found, (*chain, dep))
        if proto.name not in added:
            added.add(proto.name)
            try:
                pool.Add(proto)
            except (TypeError, ValueError, KeyError) as exc:
                raise DataError(f"Invalid Protobuf schema {proto.name}: {exc}") from exc

    add(main, (main.name,))
    try:
        return pool, pool.FindFileByName(main.name)
    except (TypeError, ValueError, KeyError) as exc:
        raise DataError(f"Invalid Protobuf schema {main.name}: {exc}") from exc


def message_at(file: FileDescriptor, indexes: tuple[int, ...] | list[int]) -> Descriptor:
    """The message type at ``indexes`` in ``file`` (DataError when there is none)."""
    try:
        desc = file.message_types_by_name[_top_names(file)[indexes[0]]]
        for index in indexes[1:]:
            desc = desc.nested_types[index]
    except (IndexError, KeyError):
        raise DataError(f"No message at index {list(indexes)} in Protobuf schema") from None
    return desc


def _top_names(file: FileDescriptor) -> list[str]:
    proto = FileProto()
    file.CopyToProto(proto)
    return [m.name for m in proto.message_type]


def indexes_of(desc: Descriptor) -> tuple[int, ...]:
    """The message-index array of ``desc`` within its file."""
    path: list[int] = []
    current = desc
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    path.append(_top_names(current.file).index(current.name))
    return tuple(reversed(path))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def set_field_meta(options: descriptor_pb2.FieldOptions, params: Mapping[str, str]) -> None:
    """Add ``confluent.field_meta`` with ``params`` to ``options`` (as an unknown field, so
    that no extension registration is needed)."""
    meta = b"".join(
        _length_delimited(
            2, _length_delimited(1, key.encode()) + _length_delimited(2, value.encode())
        )
        for key, value in params.items()
    )
    options.MergeFromString(_length_delimited(META_EXTENSION, meta))


def _fields(data: bytes) -> list[tuple[int, int, bytes | int]]:
    """(number, wire type, value) of each field of a serialized message (groups unsupported)."""
    out: list[tuple[int, int, bytes | int]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read(data, pos)
            out.append((number, wire, value))
        elif wire == 2:
            size, pos = _read(data, pos)
            out.append((number, wire, data[pos : pos + size]))
            pos += size
        elif wire == 1:
            out.append((number, wire, data[pos : pos + 8]))
            pos += 8
        elif wire == 5:
            out.append((number, wire, data[pos : pos + 4]))
            pos += 4
        else:
            break
    return out


def _read(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise DataError("Truncated option in Protobuf schema")


def field_meta(options: descriptor_pb2.FieldOptions) -> dict[str, str]:
    """The ``params`` of a field's ``confluent.field_meta`` option ({} when it has none)."""
    params: dict[str, str] = {}
    if not options.ByteSize():
        return params
    for number, wire, value in _fields(options.SerializeToString()):
        if number != META_EXTENSION or wire != 2 or not isinstance(value, bytes):
            continue
        for mnum, mwire, entry in _fields(value):
            if mnum == 2 and mwire == 2 and isinstance(entry, bytes):
                kv = {n: v for n, w, v in _fields(entry) if w == 2 and isinstance(v, bytes)}
                params[bytes(kv.get(1, b"")).decode()] = bytes(kv.get(2, b"")).decode()
    return params
