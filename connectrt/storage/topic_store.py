"""The base of the stores kept in one Kafka topic through a :class:`TopicLog`: the offsets,
config and status stores of the worker and the schema registry's store.

Each such store takes the same client settings (:class:`TopicClients`), builds its log with
itself as the reader of every record (``_on_record``) and answers ``topic`` and ``log``; the
lifecycle is the log's (``start`` replays the topic, ``stop`` closes it, ``refresh`` reads
what was written since), which a store extends where it keeps more than the log.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from connectrt.storage.internal_topics import InternalTopic
from connectrt.storage.kafka_log import TopicLog

__all__ = ["TopicClients", "TopicStore"]


class TopicClients(TypedDict, total=False):
    """How a topic store reaches Kafka and its topic: the keyword settings every store takes.

    ``bootstrap_servers`` (when given) joins each client's settings; ``producer_config``,
    ``consumer_config`` and ``admin_config`` are the three clients' own. A missing topic is
    created with ``replication_factor`` (-1, the default: the broker's
    ``default.replication.factor``) and ``topic_configs``. ``timeout`` (seconds, default 30)
    bounds the log's waits on the broker."""

    bootstrap_servers: str | None
    replication_factor: int
    producer_config: Mapping[str, Any] | None
    consumer_config: Mapping[str, Any] | None
    admin_config: Mapping[str, Any] | None
    topic_configs: Mapping[str, str] | None
    timeout: float


class TopicStore(ABC):
    """A store whose records live in one Kafka topic, read and written through ``log``.

    The constructor builds the log but starts nothing; ``start()`` replays the topic (every
    record goes to ``_on_record``, on the calling thread), ``refresh()`` reads what was written
    since, ``stop()`` closes the clients. ``internal`` names the worker settings of the topic
    in the refusals of ``start()`` (:mod:`~connectrt.storage.internal_topics`); None checks
    neither compaction nor the replication factor.
    """

    def __init__(
        self,
        topic: str,
        *,
        partitions: int,
        internal: InternalTopic | None,
        start_at_snapshot: bool = False,
        **clients: Unpack[TopicClients],
    ) -> None:
        self._log = TopicLog.for_clients(
            topic,
            clients.get("bootstrap_servers"),
            clients.get("producer_config"),
            clients.get("consumer_config"),
            clients.get("admin_config"),
            self._on_record,
            partitions=partitions,
            replication_factor=clients.get("replication_factor", -1),
            topic_configs=clients.get("topic_configs"),
            timeout=clients.get("timeout", 30.0),
            start_at_snapshot=start_at_snapshot,
            internal=internal,
        )

    @property
    def topic(self) -> str:
        """The topic's name."""
        return self._log.topic

    @property
    def log(self) -> TopicLog:
        """The log the store reads and writes its topic through."""
        return self._log

    def start(self) -> None:
        """Create the topic if needed and replay it into the store."""
        self._log.start()

    def stop(self) -> None:
        """Close the log's clients."""
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Read records written to the topic since the last read (``TopicLog.read_to_end``)."""
        self._log.read_to_end(timeout)

    @abstractmethod
    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        """Apply one record read from the topic (called by the log's reader)."""
