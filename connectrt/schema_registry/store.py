"""Schema storage for the registry: the registry's rules (:mod:`.registry_core`) over an
in-memory state, persisted by applying the same records Confluent Schema Registry writes to its
``_schemas`` topic (:mod:`.schema_records`).

:class:`SchemaStore` is what the REST API needs; :class:`MemorySchemaStore` keeps the state in
memory only, :class:`KafkaSchemaStore` in a compacted topic. Applying a record is idempotent,
so :class:`KafkaSchemaStore` can apply its own writes at once and again when read back.

The store serializes all registry operations with one lock; the Kafka store assumes it is
the only writer of its topic (Confluent elects a single leader for the same reason).
"""

from __future__ import annotations

import json
from typing import TypeAlias, Unpack

from connectrt.schema_registry.registry_core import DEFAULT_COMPATIBILITY, RegistryCore
from connectrt.schema_registry.registry_errors import RegistryError
from connectrt.schema_registry.schema_records import Key, SchemaVersion, Value, encode_record
from connectrt.storage.topic_store import TopicClients, TopicStore

__all__ = [
    "DEFAULT_COMPATIBILITY",
    "KafkaSchemaStore",
    "MemorySchemaStore",
    "RegistryError",
    "SchemaStore",
    "SchemaVersion",
]


SchemaStore: TypeAlias = RegistryCore
"""What the registry REST API needs: the registry's operations, which both stores inherit from
:class:`RegistryCore` (errors are :class:`RegistryError`)."""


class MemorySchemaStore(RegistryCore):
    """A registry whose state lives in memory only (tests, throwaway setups)."""

    def _write(self, records: list[tuple[Key, Value]]) -> None:
        for key, value in records:
            self._apply(key, value)


class KafkaSchemaStore(TopicStore, RegistryCore):
    """A registry persisted in a compacted, one-partition Kafka topic (default ``_schemas``;
    the client settings are :class:`~connectrt.storage.topic_store.TopicClients`).

    ``start()`` creates the topic if needed and replays it, so ids and versions survive a
    restart (the lifecycle is :class:`TopicStore`'s, ahead of :class:`RegistryCore`'s). Writes
    wait for ``acks=all`` and are then applied; a failed write raises
    :class:`~connectrt.errors.ConnectError` and changes nothing.
    """

    def __init__(
        self,
        topic: str = "_schemas",
        *,
        default_compatibility: str = DEFAULT_COMPATIBILITY,
        **clients: Unpack[TopicClients],
    ) -> None:
        RegistryCore.__init__(self, default_compatibility)
        TopicStore.__init__(self, topic, partitions=1, internal=None, **clients)

    def refresh(self, timeout: float | None = None) -> None:
        """Read records written to the topic by others since the last read."""
        with self._lock:
            self._log.read_to_end(timeout)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        if key is None:
            return
        try:
            decoded_key = json.loads(key)
            decoded_value = None if value is None else json.loads(value)
        except ValueError:
            return
        if not isinstance(decoded_key, dict):
            return
        if decoded_value is not None and not isinstance(decoded_value, dict):
            return
        with self._lock:
            try:
                self._apply(decoded_key, decoded_value)
            except (KeyError, TypeError, ValueError):
                pass  # a record this registry does not understand

    def _write(self, records: list[tuple[Key, Value]]) -> None:
        self._log.send_and_wait([(encode_record(k), encode_record(v)) for k, v in records])
        for key, value in records:
            self._apply(key, value)
