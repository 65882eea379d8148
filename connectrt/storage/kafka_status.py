"""Connector and task status in a Kafka topic, compatible with Kafka Connect's status topic.

The record format is in :mod:`connectrt.storage.status_codec`. Statuses are written without
waiting (a task thread reporting a state change must not block on the network); ``flush``
waits for them and ``stop`` flushes. The worker's heartbeat (its single-worker guard,
:mod:`connectrt.storage.worker_lock`) lives here too, in a record Kafka Connect reads silently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from connectrt.errors import ConnectError
from connectrt.storage.config_codec import Heartbeat
from connectrt.storage.internal_topics import STATUS, InternalTopic
from connectrt.storage.kafka_log import TopicLog
from connectrt.storage.states import Status
from connectrt.storage.status_codec import (
    HeartbeatStatusRecord,
    TopicStatus,
    TopicStatusRecord,
    decode_status_record,
    heartbeat_status_record,
    status_record,
    topic_status_record,
)
from connectrt.storage.status_store import _StatusView, _to_record

__all__ = ["KafkaStatusStore"]

log = logging.getLogger(__name__)


class KafkaStatusStore:
    """A :class:`~connectrt.storage.status_store.StatusStore` over a :class:`TopicLog`.

    ``start()`` creates the topic if needed (``partitions``, default 5 like Kafka Connect's
    ``status.storage.partitions``) and replays it to partition EOF, so statuses written before
    a restart are served until this worker overwrites them. Afterwards the topic is not read
    again: this worker is the only writer (last write wins, see the module docs of
    :mod:`~connectrt.storage.status_store`). ``put``, ``put_topic`` and ``remove_topics``
    update memory at once and queue the record; records of one key reach the topic in the
    order of the calls (both happen under one lock, and the producer is idempotent). Delivery
    failures surface in :meth:`flush` as :class:`ConnectError`; ``stop`` logs them instead.
    Thread-safe.

    Heartbeats are the exception to "not read again": :meth:`refresh` reads what was written
    since (by this worker or another one on the same topic) and applies heartbeat records
    only; statuses read back then are this worker's own and already applied.

    ``internal`` names the worker settings of the topic in the refusals of ``start()``: an
    existing topic that is not compacted, or a replication factor above the cluster's
    brokers (:mod:`~connectrt.storage.internal_topics`); None checks neither.
    """

    def __init__(
        self,
        topic: str = "connect-status",
        *,
        bootstrap_servers: str | None = None,
        partitions: int = 5,
        replication_factor: int = -1,
        producer_config: Mapping[str, Any] | None = None,
        consumer_config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
        topic_configs: Mapping[str, str] | None = None,
        internal: InternalTopic | None = STATUS,
        timeout: float = 30.0,
    ) -> None:
        self._lock = threading.Lock()
        self._view = _StatusView()
        self._heartbeats: dict[str, Heartbeat] = {}
        self._started = False
        self._log = TopicLog.for_clients(
            topic,
            bootstrap_servers,
            producer_config,
            consumer_config,
            admin_config,
            self._on_record,
            partitions=partitions,
            replication_factor=replication_factor,
            topic_configs=topic_configs,
            timeout=timeout,
            internal=internal,
        )

    @property
    def topic(self) -> str:
        return self._log.topic

    @property
    def log(self) -> TopicLog:
        return self._log

    def start(self) -> None:
        self._log.start()
        self._started = True

    def stop(self, flush_timeout: float = 5.0) -> None:
        """Flush queued statuses (bounded; failures are logged) and close. Idempotent."""
        if self._started:
            self._started = False
            try:
                self.flush(flush_timeout)
            except ConnectError as exc:
                log.warning("Status records to %s may be lost: %s", self.topic, exc)
        self._log.stop(flush_timeout)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued status record is acknowledged (ConnectError otherwise)."""
        self._log.flush(timeout)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        # Statuses only during start(): records of one key share a partition, so replaying
        # each partition in order leaves the latest value of every key. Heartbeats always.
        record = decode_status_record(key, value)
        with self._lock:
            if isinstance(record, HeartbeatStatusRecord):
                if record.heartbeat is None:
                    self._heartbeats.pop(record.group_id, None)
                else:
                    self._heartbeats[record.group_id] = record.heartbeat
            elif not self._started:
                self._view.apply(record)

    # -- heartbeats (the single-worker guard's HeartbeatLog) ---------------------------------

    def refresh(self, timeout: float | None = None) -> None:
        """Read the topic to its end; only the heartbeats read are applied."""
        self._log.read_to_end(timeout)

    def heartbeats(self) -> dict[str, Heartbeat]:
        """The latest heartbeat per group id, as of the last read or write."""
        with self._lock:
            return dict(self._heartbeats)

    def write_heartbeat(
        self, group_id: str, heartbeat: Heartbeat, timeout: float | None = None
    ) -> None:
        """Write the heartbeat record of ``group_id`` and wait for it."""
        self._log.send_and_wait([heartbeat_status_record(group_id, heartbeat)], timeout)
        with self._lock:
            self._heartbeats[group_id] = heartbeat

    # -- writing ----------------------------------------------------------------------------

    def put(self, status: Status) -> None:
        """Record a connector or task status (DESTROYED deletes it); does not wait."""
        key, value = status_record(status)
        with self._lock:
            self._log.send(key, value)
            self._view.apply(_to_record(status))

    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None:
        """Track ``topic`` as active for ``connector``; a topic already tracked is kept as is
        (with its first discovery time, as Kafka Connect does). Does not wait."""
        ts = TopicStatus(topic, connector, task, discovered_ms)
        with self._lock:
            if self._view.has_topic(connector, topic):
                return
            self._log.send(*topic_status_record(ts))
            self._view.apply(TopicStatusRecord(topic, connector, ts))

    def remove_topics(self, connector: str) -> None:
        """Write a tombstone for every active topic of ``connector`` and wait for them."""
        with self._lock:
            for topic in self._view.topic_names(connector):
                self._log.send(*topic_status_record(None, topic, connector))
                self._view.apply(TopicStatusRecord(topic, connector, None))
        self.flush()

    # -- reading ----------------------------------------------------------------------------

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._view.connector(name)

    def tasks(self, name: str) -> list[Status]:
        with self._lock:
            return self._view.task_list(name)

    def connectors(self) -> list[str]:
        with self._lock:
            return self._view.connector_names()

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return self._view.topic_names(connector)
