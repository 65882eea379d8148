"""The part the schema-registry converters (Avro, JSON Schema, Protobuf) share: registry
settings, the client, subject naming, Confluent's wire header (``0x00`` + 4-byte big-endian
schema id), the schema-id and reader caches, and the outline of writing and reading a message.

Lifecycle: ``configure`` once (again replaces the client and empties the caches), then
``from_connect_data``/``to_connect_data`` from one task thread (nothing here is locked),
``close`` once.
"""

from __future__ import annotations

import struct as _struct
from abc import abstractmethod
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import httpx

from connectrt.api.converter import Converter, RawHeaders, SchemaAndValue
from connectrt.converters._lru import LRU
from connectrt.converters.config_values import config_bool
from connectrt.converters.registry_client import SchemaRegistryClient
from connectrt.converters.registry_config import (
    AUTO_REGISTER_CONFIG,
    USE_LATEST_CONFIG,
    config_basic_auth,
    config_cache_size_and_timeout,
    config_registry_url,
    config_subject_strategy,
)
from connectrt.converters.registry_config import CONFIG_KEYS as REGISTRY_KEYS
from connectrt.converters.schema_drift import DriftGuard
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["HEADER", "MAGIC_BYTE", "RegistryConverter"]

MAGIC_BYTE: Final = 0
HEADER: Final = _struct.Struct(">bI")
"""The wire header: the magic byte and the schema id."""

_NULL: Final = SchemaAndValue(None, None)


class RegistryConverter(Converter):
    """Base of the converters backed by a schema registry.

    Subclasses set ``FORMAT`` (the message kind named in errors, e.g. ``"Avro"``), read their
    own settings in ``_configure_format`` and empty their own caches in
    ``_reset_format_caches`` (both called by ``configure``), and fill in the two halves of a
    message:

    - writing: ``_prepare(topic, schema)`` returns what writing values of ``schema`` to
      ``topic`` needs (its header and writer, typically after :meth:`registered_id`), and
      ``_serialize(topic, prepared, value)`` the message bytes of one non-null value;
      ``_new_writer(schema)`` builds what :meth:`writer_for` caches per Connect schema;
    - reading: ``_deserialize(topic, schema_id, data)`` the Connect data of a message whose
      header :meth:`schema_id_of` has read, typically through :meth:`reader_for`.

    ``_ids`` maps (subject, Connect schema) to a schema id and ``_readers`` a reader key to
    what reads it; both are sized by the cache setting.
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
        self._last_out: Any = None
        self._last_id: Hashable = -1
        self._last_reader: Any = None
        self._drift = DriftGuard()

    @property
    def client(self) -> SchemaRegistryClient:
        """The registry client (once configured)."""
        if self._client is None:
            raise DataError(f"{type(self).__name__} is not configured")
        return self._client

    def configure(
        self,
        config: Mapping[str, Any],
        is_key: bool,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Apply ``config``: a missing registry URL is reported first, then the format's own
        settings are read (``_configure_format``), then the registry's (:meth:`configure_registry`,
        whose cache size ``_reset_format_caches`` receives); ``transport`` replaces the registry
        client's HTTP transport."""
        config_registry_url(config)
        self._configure_format(config)
        self._reset_format_caches(self.configure_registry(config, is_key, transport))

    def _configure_format(self, config: Mapping[str, Any]) -> None:
        """Read the format's own settings from ``config`` (ConfigError when one is invalid)."""

    def _reset_format_caches(self, size: int) -> None:
        """Empty the format's own caches (``size``: the configured cache size)."""

    def configure_registry(
        self, config: Mapping[str, Any], is_key: bool, transport: httpx.BaseTransport | None
    ) -> int:
        """Read the registry settings, empty the caches and replace the client (``transport``
        replaces its HTTP transport); the cache size."""
        url = config_registry_url(config)
        self._is_key = is_key
        self._auto_register = config_bool(config, AUTO_REGISTER_CONFIG, REGISTRY_KEYS)
        self._use_latest = config_bool(config, USE_LATEST_CONFIG, REGISTRY_KEYS)
        self._strategy = config_subject_strategy(config, is_key)
        auth = config_basic_auth(config)
        size, timeout = config_cache_size_and_timeout(config)
        self._writers, self._ids, self._readers = LRU(size), LRU(size), LRU(size)
        self._last_schema = self._last_topic = None
        self._last_out = self._last_reader = None
        self._last_id = -1
        if self._client is not None:
            self._client.close()
        self._client = SchemaRegistryClient(url, auth, timeout, transport)
        self._drift = DriftGuard.from_config(config, size)  # schema.drift
        return size

    def subject(self, topic: str, record_name: str) -> str:
        """The registry subject for ``topic`` and the name of the value's schema."""
        if self._strategy == "TopicNameStrategy":
            return f"{topic}-{'key' if self._is_key else 'value'}"
        if self._strategy == "RecordNameStrategy":
            return record_name
        return f"{topic}-{record_name}"

    def register_schema(
        self,
        subject: str,
        text: str,
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> int:
        """Register ``text`` under ``subject`` as the ``schema.drift`` policy says
        (:mod:`connectrt.converters.schema_drift`); its id."""
        return self._drift.register(self.client, subject, text, schema_type, references)

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

    def writer_for(self, schema: Schema) -> Any:
        """What writes values of ``schema``: from the ``_writers`` cache, else
        ``_new_writer(schema)``, which is then cached."""
        writer = self._writers.get(schema)
        if writer is None:
            writer = self._new_writer(schema)
            self._writers.put(schema, writer)
        return writer

    @abstractmethod
    def _new_writer(self, schema: Schema) -> Any:
        """What writes values of ``schema`` (its registry text, record name and encoder)."""

    def registered_id(self, subject: str, schema: Schema, text: str, schema_type: str) -> int:
        """The registry id of ``text``, the registered form of ``schema``, under ``subject``;
        cached per (subject, ``schema``). With ``use.latest.version`` and no auto-registration
        it is the id of the subject's latest version; else ``text`` is registered
        (``auto.register.schemas``) or looked up (DataError when it is not registered)."""
        key = (subject, schema)
        schema_id: int | None = self._ids.get(key)
        if schema_id is None:
            if self._use_latest and not self._auto_register:
                schema_id = self.client.latest(subject)[0]
            elif self._auto_register:
                schema_id = self.register_schema(subject, text, schema_type)
            else:
                schema_id = self.client.lookup(subject, text, schema_type)
            self._ids.put(key, schema_id)
        return schema_id

    def reader_for(self, key: Hashable) -> Any:
        """What reads messages of reader key ``key`` (a schema id, or what else identifies a
        writer's schema): the previous message's reader when the key is the same, else from
        the ``_readers`` cache, else ``_load_reader(key)``, which is then cached."""
        reader = self._last_reader
        if key != self._last_id or reader is None:
            reader = self._readers.get(key)
            if reader is None:
                reader = self._load_reader(key)
                self._readers.put(key, reader)
            self._last_id, self._last_reader = key, reader
        return reader

    def _load_reader(self, key: Any) -> Any:
        """What reads messages of reader key ``key``, built from the registry (subclasses that
        use :meth:`reader_for` override this)."""
        raise NotImplementedError(f"{type(self).__name__} does not load readers by key")

    # ------------------------------------------------------------------ the message outline

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        """None for a tombstone; else the message of ``value``. What the previous record's
        schema and topic needed (``_prepare``) is reused without a cache lookup."""
        if value is None:
            return None  # tombstone
        if schema is None:
            raise DataError(f"{type(self).__name__} needs a schema to serialize a value")
        prepared = self._last_out
        if prepared is None or schema is not self._last_schema or topic != self._last_topic:
            prepared = self._prepare(topic, schema)
            self._last_schema, self._last_topic = schema, topic
            self._last_out = prepared
        return self._serialize(topic, prepared, value)

    @abstractmethod
    def _prepare(self, topic: str, schema: Schema) -> Any:
        """What writing values of ``schema`` to ``topic`` needs (registering or looking up
        its schema id on the way)."""

    @abstractmethod
    def _serialize(self, topic: str, prepared: Any, value: Any) -> bytes:
        """The message of the non-null ``value``, with ``prepared`` from ``_prepare``."""

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Null data reads as a null value without schema; else ``_deserialize`` reads it."""
        if data is None:
            return _NULL
        return self._deserialize(topic, self.schema_id_of(topic, data), data)

    @abstractmethod
    def _deserialize(self, topic: str, schema_id: int, data: bytes) -> SchemaAndValue:
        """The Connect data of message ``data``, whose header names ``schema_id``."""

    def serialize_failure(self, topic: str, exc: Exception) -> DataError:
        """The error for a value of ``topic`` that could not be written (``exc``: why)."""
        return DataError(f"Failed to serialize {self.FORMAT} data for topic {topic}: {exc}")

    def deserialize_failure(self, topic: str, schema_id: int, exc: Exception) -> DataError:
        """The error for a message of ``topic`` written with ``schema_id`` that could not be
        read (``exc``: why)."""
        return DataError(
            f"Failed to deserialize {self.FORMAT} data for topic {topic} "
            f"(schema id {schema_id}): {exc}"
        )

    def close(self) -> None:
        """Close the registry client."""
        if self._client is not None:
            self._client.close()
            self._client = None
