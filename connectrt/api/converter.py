"""Converter and HeaderConverter contracts, and :class:`SchemaAndValue`.

A converter translates between Connect data (a :class:`~connectrt.data.Schema` plus a Python
value) and the bytes stored in Kafka. The runtime creates one converter per role (key, value,
headers) per task, calls ``configure`` once, then calls the conversion methods from that task's
thread only; implementations need not be thread-safe but must not share mutable state between
instances. ``close`` is called once when the task stops.

Each concrete converter exposes its options as ``CONFIG_KEYS``
(``{key: (TYPE, default, doc)}``) and through the ``config_def()`` classmethod.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from connectrt.data.schema import Schema

__all__ = [
    "ConfigKeys",
    "ConnectColumns",
    "Converter",
    "DataAndHeaderConverter",
    "HeaderConverter",
    "RawHeaders",
    "SchemaAndValue",
]

RawHeaders = list[tuple[str, bytes | None]]
"""Kafka record headers in confluent-kafka's form: ``[(key, value_bytes_or_None), ...]``."""

ConfigKeys = dict[str, tuple[str, Any, str]]
"""``{config key: (type name, default, documentation)}``."""


class SchemaAndValue(NamedTuple):
    """A Connect value with its schema (either may be None)."""

    schema: Schema | None
    value: Any


class ConnectColumns(NamedTuple):
    """Many converted values at once: their schemas and values, one item per message."""

    schemas: Sequence[Schema | None]
    values: Sequence[Any]


class Converter(ABC):
    """Converts record keys or values between Connect data and bytes."""

    CONFIG_KEYS: ClassVar[ConfigKeys] = {}
    BYTES_PASSTHROUGH: ClassVar[bool] = False
    """True when ``to_connect_data`` returns ``(OPTIONAL_BYTES_SCHEMA, data)`` and
    ``from_connect_data`` returns ``bytes`` values unchanged: the runtime then skips the call
    on its hot path (as for ByteArrayConverter)."""

    @classmethod
    def config_def(cls) -> ConfigKeys:
        """This converter's configuration keys (a copy of ``CONFIG_KEYS``)."""
        return dict(cls.CONFIG_KEYS)

    @abstractmethod
    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called once, before any conversion. ``is_key`` says whether this converts keys."""

    @abstractmethod
    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: RawHeaders | None = None,
    ) -> bytes | None:
        """Serialize ``value`` (described by ``schema``) for ``topic``. Raises DataError."""

    def from_connect_values(
        self, topic: str, schema: Schema | None, values: Sequence[Any]
    ) -> list[bytes | None] | None:
        """Serialize ``values`` that share ``topic`` and ``schema`` at once, or return None when
        this converter has no faster way for them than one ``from_connect_data`` call each.

        A list holds, in order, what ``from_connect_data`` would return for each value. Raises
        DataError if any value fails; the runtime then converts the batch value by value, to
        apply its error policy to the one at fault. A source task's runner calls this for a
        polled batch whose records all have one topic and one value schema; after a None it
        stops asking and converts each value just before producing it. The default returns
        None; JsonConverter writes a batch in one orjson call per column. (A list keeps every
        result alive until the batch is produced: return None rather than a list of buffers an
        encoder over-allocated, such as orjson's own; JsonConverter's are cut from one.)"""
        return None

    @abstractmethod
    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize ``data`` read from ``topic``. Raises DataError."""

    def to_connect_columns(self, topic: str, data: Sequence[bytes | None]) -> ConnectColumns:
        """Deserialize many messages read from ``topic`` at once (the sink runtime's batch
        path): ``schemas[i], values[i]`` is what ``to_connect_data(topic, data[i])`` returns.

        Raises (DataError or anything ``to_connect_data`` raises) when any message fails; the
        runtime then converts that batch message by message, so that only the failing ones are
        retried, tolerated or sent to the dead letter queue. The default calls
        ``to_connect_data`` per message; a converter overrides it when it can decode a whole
        batch in fewer steps (the JSON converter parses with one ``map`` over orjson).
        """
        schemas: list[Schema | None] = []
        values: list[Any] = []
        to_connect = self.to_connect_data
        for item in data:
            schema, value = to_connect(topic, item)
            schemas.append(schema)
            values.append(value)
        return ConnectColumns(schemas, values)

    def close(self) -> None:
        """Release resources. The default does nothing."""

    def version(self) -> str:
        """The plugin's version (``/connector-plugins``, ``*.converter.plugin.version``)."""
        return "unknown"


class HeaderConverter(ABC):
    """Converts single header values between Connect data and bytes."""

    CONFIG_KEYS: ClassVar[ConfigKeys] = {}
    READ_NEVER_FAILS: ClassVar[bool] = False
    """True when ``to_connect_header`` never raises (it falls back to the raw bytes, or cannot
    fail at all): the sink runtime then converts a batch's headers only when the task reads
    them, instead of before ``put()`` so that a failure goes through ``errors.*``."""

    @classmethod
    def config_def(cls) -> ConfigKeys:
        return dict(cls.CONFIG_KEYS)

    @abstractmethod
    def configure(self, config: Mapping[str, Any]) -> None:
        """Called once, before any conversion."""

    @abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialize one header value. Raises DataError."""

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Deserialize one header value. Raises DataError."""

    def close(self) -> None:
        """Release resources. The default does nothing."""

    def version(self) -> str:
        """The plugin's version (``/connector-plugins``, ``header.converter.plugin.version``)."""
        return "unknown"


class DataAndHeaderConverter(Converter, HeaderConverter):
    """A converter that serves as a header converter too, writing and reading each header
    value exactly as it does a record key or value (Kafka's ``StringConverter``,
    ``ByteArrayConverter`` and ``JsonConverter`` are both kinds of plugin).

    ``configure`` is called with ``is_key`` as a key or value converter and without it as a
    header converter; the contracts of both base classes hold."""

    @abstractmethod
    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Called once, before any conversion; ``is_key`` is None for a header converter."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """The header value written as ``from_connect_data`` writes a record's data."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """The header value read as ``to_connect_data`` reads a record's data."""
        return self.to_connect_data(topic, data)
