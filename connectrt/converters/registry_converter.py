"""The part the schema-registry converters (Avro, JSON Schema) share: registry settings, the
client, subject naming and Confluent's wire header (``0x00`` + 4-byte big-endian schema id).

Lifecycle: ``configure`` once (again replaces the client and empties the caches), then
``from_connect_data``/``to_connect_data`` from one task thread (nothing here is locked),
``close`` once.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Mapping
from typing import Any, ClassVar, Final

import httpx

from connectrt.api.converter import Converter
from connectrt.converters._lru import LRU
from connectrt.converters.registry_client import SchemaRegistryClient
from connectrt.converters.registry_config import (
    AUTO_REGISTER_CONFIG,
    USE_LATEST_CONFIG,
    config_basic_auth,
    config_bool,
    config_cache_size_and_timeout,
    config_registry_url,
    config_subject_strategy,
)
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["HEADER", "MAGIC_BYTE", "RegistryConverter"]

MAGIC_BYTE: Final = 0
HEADER: Final = _struct.Struct(">bI")
"""The wire header: the magic byte and the schema id."""


class RegistryConverter(Converter):
    """Base of the converters backed by a schema registry.

    Subclasses set ``FORMAT`` (the message kind named in errors, e.g. ``"Avro"``), call
    :meth:`configure_registry` from ``configure``, and read a message's schema id with
    :meth:`schema_id_of`. ``_ids`` maps (subject, Connect schema) to a schema id and
    ``_readers`` a schema id to what reads it; both are sized by the cache setting.
    """

    FORMAT: ClassVar[str] = "registry"

    def __init__(self) -> None:
        self._client: SchemaRegistryClient | None = None
        self._is_key = False
        self._auto_register = True
        self._use_latest = False
        self._strategy = "TopicNameStrategy"
        self._writers = LRU(1000)
        self._ids = LRU(1000)
        self._readers = LRU(1000)
        self._last_schema: Schema | None = None
        self._last_topic: str | None = None
        self._last_id = -1

    @property
    def client(self) -> SchemaRegistryClient:
        """The registry client (once configured)."""
        if self._client is None:
            raise DataError(f"{type(self).__name__} is not configured")
        return self._client

    def configure_registry(
        self, config: Mapping[str, Any], is_key: bool, transport: httpx.BaseTransport | None
    ) -> int:
        """Read the registry settings, empty the caches and replace the client (``transport``
        replaces its HTTP transport); the cache size."""
        url = config_registry_url(config)
        self._is_key = is_key
        self._auto_register = config_bool(config, AUTO_REGISTER_CONFIG, True)
        self._use_latest = config_bool(config, USE_LATEST_CONFIG, False)
        self._strategy = config_subject_strategy(config, is_key)
        auth = config_basic_auth(config)
        size, timeout = config_cache_size_and_timeout(config)
        self._writers, self._ids, self._readers = LRU(size), LRU(size), LRU(size)
        self._last_schema = self._last_topic = None
        self._last_id = -1
        if self._client is not None:
            self._client.close()
        self._client = SchemaRegistryClient(url, auth, timeout, transport)
        return size

    def subject(self, topic: str, record_name: str) -> str:
        """The registry subject for ``topic`` and the name of the value's schema."""
        if self._strategy == "TopicNameStrategy":
            return f"{topic}-{'key' if self._is_key else 'value'}"
        if self._strategy == "RecordNameStrategy":
            return record_name
        return f"{topic}-{record_name}"

    def schema_id_of(self, topic: str, data: bytes) -> int:
        """The schema id in ``data``'s wire header; DataError for a short or foreign message."""
        if len(data) < 5:
            raise DataError(
                f"{self.FORMAT} message for topic {topic} is too short ({len(data)} bytes)"
            )
        magic, schema_id = HEADER.unpack_from(data)
        if magic != MAGIC_BYTE:
            raise DataError(
                f"Unknown magic byte {magic} in {self.FORMAT} message for topic {topic}"
            )
        return int(schema_id)

    def close(self) -> None:
        """Close the registry client."""
        if self._client is not None:
            self._client.close()
            self._client = None
