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
from collections.abc import Mapping
from typing import Any, Final

import fastavro
import httpx

from connectrt.api.converter import RawHeaders, SchemaAndValue
from connectrt.converters._lru import LRU
from connectrt.converters.avro.schema_codecs import Reader, Writer, parse_avro
from connectrt.converters.registry_config import CONFIG_KEYS
from connectrt.converters.registry_converter import HEADER, MAGIC_BYTE, RegistryConverter
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["MAGIC_BYTE", "AvroConverter"]

_HEADER: Final = HEADER
_NULL: Final = SchemaAndValue(None, None)
_new_sav = tuple.__new__  # SchemaAndValue without its Python-level __new__ (hot path)

_read: Final = fastavro.schemaless_reader
_write: Final = fastavro.schemaless_writer


class AvroConverter(RegistryConverter):
    """Confluent-compatible Avro converter backed by a schema registry (subjects name the
    Avro full name of the value's schema)."""

    CONFIG_KEYS = CONFIG_KEYS
    FORMAT = "Avro"

    def __init__(self) -> None:
        super().__init__()
        self._latest = LRU(1000)
        self._last_out: tuple[bytes, Writer, Any] | None = None
        self._last_reader: Any = None

    def configure(
        self,
        config: Mapping[str, Any],
        is_key: bool,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Apply ``config``; ``transport`` replaces the registry client's HTTP transport."""
        self._latest = LRU(self.configure_registry(config, is_key, transport))
        self._last_out = self._last_reader = None

    # -------------------------------------------------------------------------------- writing

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: RawHeaders | None = None,
    ) -> bytes | None:
        if value is None:
            return None  # tombstone
        if schema is None:
            raise DataError("AvroConverter needs a schema to serialize a value")
        last = self._last_out
        if last is not None and schema is self._last_schema and topic == self._last_topic:
            header, writer, parsed = last
        else:
            header, writer, parsed = self._prepare(topic, schema)
            self._last_schema, self._last_topic = schema, topic
            self._last_out = (header, writer, parsed)
        try:
            datum = writer.encode(value)
            out = io.BytesIO()
            out.write(header)
            _write(out, parsed, datum)
        except DataError:
            raise
        except Exception as exc:  # fastavro: ValueError, TypeError, AttributeError, ...
            writer.check(value)  # a DataError naming the field, where one does not fit
            raise DataError(f"Failed to serialize Avro data for topic {topic}: {exc}") from exc
        return out.getvalue()

    def _prepare(self, topic: str, schema: Schema) -> tuple[bytes, Writer, Any]:
        writer = self._writers.get(schema)
        if writer is None:
            writer = Writer(schema)
            self._writers.put(schema, writer)
        subject = self.subject(topic, writer.record_name)
        if self._use_latest and not self._auto_register:
            latest = self._latest.get(subject)
            if latest is None:
                schema_id, text = self.client.latest(subject)
                latest = (schema_id, parse_avro(json.loads(text)))
                self._latest.put(subject, latest)
            return _HEADER.pack(MAGIC_BYTE, latest[0]), writer, latest[1]
        key = (subject, schema)
        schema_id = self._ids.get(key)
        if schema_id is None:
            if self._auto_register:
                schema_id = self.client.register(subject, writer.text)
            else:
                schema_id = self.client.lookup(subject, writer.text)
            self._ids.put(key, schema_id)
        return _HEADER.pack(MAGIC_BYTE, schema_id), writer, writer.parsed

    # -------------------------------------------------------------------------------- reading

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if data is None:
            return _NULL
        schema_id = self.schema_id_of(topic, data)
        if schema_id == self._last_id:
            reader = self._last_reader
        else:
            reader = self._readers.get(schema_id)
            if reader is None:
                reader = Reader(self.client.get_schema(schema_id))
                self._readers.put(schema_id, reader)
            self._last_id, self._last_reader = schema_id, reader
        buf = io.BytesIO(data)
        buf.seek(5)
        try:
            value = reader.decode(_read(buf, reader.parsed, None))
        except DataError:
            raise
        except Exception as exc:
            raise DataError(
                f"Failed to deserialize Avro data for topic {topic} (schema id {schema_id}): {exc}"
            ) from exc
        return _new_sav(SchemaAndValue, (reader.schema, value))
