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

__all__ = ["ConfigKeys", "Converter", "HeaderConverter", "RawHeaders", "SchemaAndValue"]

RawHeaders = list[tuple[str, bytes | None]]
"""Kafka record headers in confluent-kafka's form: ``[(key, value_bytes_or_None), ...]``."""

ConfigKeys = dict[str, tuple[str, Any, str]]
"""``{config key: (type name, default, documentation)}``."""


class SchemaAndValue(NamedTuple):
    """A Connect value with its schema (either may be None)."""

    schema: Schema | None
    value: Any


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
        None; JsonConverter with schemas enabled builds each envelope's schema part once per
        batch. (A list keeps every result alive until the batch is produced: return None
        rather than a list of buffers an encoder over-allocated, such as orjson's.)"""
        return None

    @abstractmethod
    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize ``data`` read from ``topic``. Raises DataError."""

    def close(self) -> None:
        """Release resources. The default does nothing."""

    def version(self) -> str:
        """The plugin's version (``/connector-plugins``, ``*.converter.plugin.version``)."""
        return "unknown"


class HeaderConverter(ABC):
    """Converts single header values between Connect data and bytes."""

    CONFIG_KEYS: ClassVar[ConfigKeys] = {}

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
