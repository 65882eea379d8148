"""The ProtobufConverter class: Confluent's Protobuf wire format through a schema registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the message-index array
(:mod:`~connectrt.converters.protobuf.wire`) + the Protobuf payload. Writing registers the
``.proto`` text of the Connect schema (``schemaType: PROTOBUF``; builtin imports such as
``google/protobuf/timestamp.proto`` need no reference, as with Confluent's serializers) under
the subject of the root message's full name. Reading fetches the writer's schema by id (text
or base64 ``FileDescriptorProto``, with its ``references`` resolved transitively), finds the
message type by its indexes and maps it to a Connect schema.

No registry call per record: per Connect schema the converter keeps a :class:`_Writer`, per
(subject, Connect schema) the schema id, per (schema id, indexes) a :class:`_Reader`.

Thread-safety: configure once, then use from a single task thread (caches are not locked).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass

from connectrt.api.converter import SchemaAndValue
from connectrt.converters.config_values import config_bool
from connectrt.converters.protobuf.config import (
    CONFIG_KEYS,
    ENHANCED_CONFIG,
    INDEX_FOR_UNIONS_CONFIG,
    OPTIONAL_FOR_NULLABLES_CONFIG,
    WRAPPER_FOR_NULLABLES_CONFIG,
)
from connectrt.converters.protobuf.descriptors import (
    FileProto,
    build_pool,
    indexes_of,
    is_builtin,
    message_at,
)
from connectrt.converters.protobuf.proto_render import render_proto
from connectrt.converters.protobuf.proto_text import schema_file
from connectrt.converters.protobuf.schema_mapping import (
    MappingConfig,
    connect_to_proto,
    proto_to_connect,
)
from connectrt.converters.protobuf.values import Reader, Writer, compile_reader, compile_writer
from connectrt.converters.protobuf.wire import decode_indexes, encode_indexes
from connectrt.converters.registry_converter import HEADER, MAGIC_BYTE, RegistryConverter
from connectrt.data.schema import Schema

__all__ = ["MAGIC_BYTE", "ProtobufConverter"]

SCHEMA_TYPE: Final = "PROTOBUF"
_new_sav = tuple.__new__


class _Writer:
    """What writing values of one Connect schema needs."""

    __slots__ = ("indexes", "message_class", "record_name", "text", "write")

    def __init__(self, schema: Schema, config: MappingConfig) -> None:
        proto, root = connect_to_proto(schema, config)
        pool, file = build_pool(proto, {})
        desc = pool.FindMessageTypeByName(root)
        resolved = FileProto()
        file.CopyToProto(resolved)
        self.text = render_proto(resolved)
        self.record_name = root
        self.indexes = encode_indexes(indexes_of(desc))
        self.message_class: Any = GetMessageClass(desc)
        self.write: Writer = compile_writer(schema, desc)


class _Reader:
    """What reading values of one message type of one registry schema needs."""

    __slots__ = ("message_class", "read", "schema")

    def __init__(self, schema: Schema, message_class: Any, read: Reader) -> None:
        self.schema = schema
        self.message_class = message_class
        self.read = read


class ProtobufConverter(RegistryConverter):
    """Confluent-compatible Protobuf converter backed by a schema registry (record-name
    subjects name the root message's full name)."""

    CONFIG_KEYS = CONFIG_KEYS
    FORMAT = "Protobuf"

    def __init__(self) -> None:
        super().__init__()
        self._mapping = MappingConfig()
        self._files: dict[int, Any] = {}

    def _configure_format(self, config: Mapping[str, Any]) -> None:
        self._mapping = MappingConfig(
            wrapper_for_nullables=config_bool(config, WRAPPER_FOR_NULLABLES_CONFIG, CONFIG_KEYS),
            optional_for_nullables=config_bool(config, OPTIONAL_FOR_NULLABLES_CONFIG, CONFIG_KEYS),
            enhanced_schema_support=config_bool(config, ENHANCED_CONFIG, CONFIG_KEYS),
            index_for_unions=config_bool(config, INDEX_FOR_UNIONS_CONFIG, CONFIG_KEYS),
        )

    def _reset_format_caches(self, size: int) -> None:
        self._files = {}

    # -------------------------------------------------------------------------------- writing

    def proto_text(self, schema: Schema) -> str:
        """The ``.proto`` text this converter registers for ``schema``."""
        return self.writer_for(schema).text

    def _new_writer(self, schema: Schema) -> _Writer:
        return _Writer(schema, self._mapping)

    def _serialize(self, topic: str, prepared: tuple[bytes, _Writer], value: Any) -> bytes:
        header, writer = prepared
        message = writer.message_class()
        try:
            writer.write(value, message)
            body = message.SerializeToString()
        except (TypeError, ValueError, AttributeError) as exc:
            raise self.serialize_failure(topic, exc) from exc
        return header + body

    def _prepare(self, topic: str, schema: Schema) -> tuple[bytes, _Writer]:
        writer: _Writer = self.writer_for(schema)
        subject = self.subject(topic, writer.record_name)
        schema_id = self.registered_id(subject, schema, writer.text, SCHEMA_TYPE)
        return HEADER.pack(MAGIC_BYTE, schema_id) + writer.indexes, writer

    # -------------------------------------------------------------------------------- reading

    def _deserialize(self, topic: str, schema_id: int, data: bytes) -> SchemaAndValue:
        indexes, pos = decode_indexes(data, 5)
        reader: _Reader = self.reader_for((schema_id, indexes))
        try:
            message = reader.message_class.FromString(data[pos:])
        except DecodeError as exc:
            raise self.deserialize_failure(topic, schema_id, exc) from exc
        return _new_sav(SchemaAndValue, (reader.schema, reader.read(message)))

    def _load_reader(self, key: tuple[int, tuple[int, ...]]) -> _Reader:
        """The reader of message type ``indexes`` of registry schema ``schema_id`` (``key``)."""
        schema_id, indexes = key
        file = self._files.get(schema_id)
        if file is None:
            info = self.client.get_schema_info(schema_id, SCHEMA_TYPE)
            deps: dict[str, FileProto] = {}
            self._references(info.get("references") or [], deps, set())
            main = schema_file(str(info["schema"]), f"schema-{schema_id}.proto")
            file = build_pool(main, deps)[1]
            self._files[schema_id] = file
        desc = message_at(file, indexes)
        schema = proto_to_connect(desc, self._mapping)
        return _Reader(schema, GetMessageClass(desc), compile_reader(schema, desc))

    def _references(
        self, refs: list[dict[str, Any]], out: dict[str, FileProto], seen: set[str]
    ) -> None:
        for ref in refs:
            name = str(ref["name"])
            if name in seen or is_builtin(name):
                continue
            seen.add(name)
            info = self.client.get_version(str(ref["subject"]), ref["version"])
            self._references(info.get("references") or [], out, seen)
            out[name] = schema_file(str(info["schema"]), name)
