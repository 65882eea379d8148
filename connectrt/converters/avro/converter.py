"""The AvroConverter class: Confluent's wire format, the registry lookups and their caches.

Each message is ``0x00`` + the 4-byte big-endian schema id + the Avro binary encoding of the
value. No registry call per record: the converter keeps, per Connect schema, a
:class:`~connectrt.converters.avro.schema_codecs.Writer`; per (subject, Connect schema) the
schema id; per schema id a :class:`~connectrt.converters.avro.schema_codecs.Reader`. The
previous record's writer and reader are reused without a cache lookup.
"""

from __future__ import annotations

import io
import json
from typing import Any, Final

import fastavro

from connectrt.api.converter import SchemaAndValue
from connectrt.converters._lru import LRU
from connectrt.converters.avro.schema_codecs import Reader, Writer, parse_avro
from connectrt.converters.registry_config import CONFIG_KEYS
from connectrt.converters.registry_converter import HEADER, MAGIC_BYTE, RegistryConverter
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["MAGIC_BYTE", "AvroConverter"]

SCHEMA_TYPE: Final = "AVRO"
_HEADER: Final = HEADER
_new_sav = tuple.__new__  # SchemaAndValue without its Python-level __new__ (hot path)

_read: Final = fastavro.schemaless_reader
_write: Final = fastavro.schemaless_writer

_Prepared = tuple[bytes, Writer, Any]
"""What writing one Connect schema to one topic needs: the wire header, the writer and the
parsed Avro schema written with (the writer's own, or the subject's latest)."""


class AvroConverter(RegistryConverter):
    """Confluent-compatible Avro converter backed by a schema registry (subjects name the
    Avro full name of the value's schema)."""

    CONFIG_KEYS = CONFIG_KEYS
    FORMAT = "Avro"

    def __init__(self) -> None:
        super().__init__()
        self._latest = LRU(1000)

    def _reset_format_caches(self, size: int) -> None:
        self._latest = LRU(size)

    # -------------------------------------------------------------------------------- writing

    def _new_writer(self, schema: Schema) -> Writer:
        return Writer(schema)

    def _serialize(self, topic: str, prepared: _Prepared, value: Any) -> bytes:
        header, writer, parsed = prepared
        try:
            datum = writer.encode(value)
            out = io.BytesIO()
            out.write(header)
            _write(out, parsed, datum)
        except DataError:
            raise
        except Exception as exc:  # fastavro: ValueError, TypeError, AttributeError, ...
            writer.check(value)  # a DataError naming the field, where one does not fit
            raise self.serialize_failure(topic, exc) from exc
        return out.getvalue()

    def _prepare(self, topic: str, schema: Schema) -> _Prepared:
        writer: Writer = self.writer_for(schema)
        subject = self.subject(topic, writer.record_name)
        if self._use_latest and not self._auto_register:
            latest = self._latest.get(subject)
            if latest is None:
                schema_id, text = self.client.latest(subject)
                latest = (schema_id, parse_avro(json.loads(text)))
                self._latest.put(subject, latest)
            return _HEADER.pack(MAGIC_BYTE, latest[0]), writer, latest[1]
        schema_id = self.registered_id(subject, schema, writer.text, SCHEMA_TYPE)
        return _HEADER.pack(MAGIC_BYTE, schema_id), writer, writer.parsed

    # -------------------------------------------------------------------------------- reading

    def _deserialize(self, topic: str, schema_id: int, data: bytes) -> SchemaAndValue:
        reader: Reader = self.reader_for(schema_id)
        buf = io.BytesIO(data)
        buf.seek(5)
        try:
            value = reader.decode(_read(buf, reader.parsed, None))
        except DataError:
            raise
        except Exception as exc:
            raise self.deserialize_failure(topic, schema_id, exc) from exc
        return _new_sav(SchemaAndValue, (reader.schema, value))

    def _load_reader(self, key: int) -> Reader:
        return Reader(self.client.get_schema(key))
