"""Connector and task status in a Kafka topic, compatible with Kafka Connect's status topic.

The record format is in :mod:`connectrt.storage.status_codec`. Statuses are written without
waiting (a task thread reporting a state change must not block on the network); ``flush``
waits for them and ``stop`` flushes. The worker's heartbeat (its single-worker guard,
:mod:`connectrt.storage.worker_lock`) lives here too, in a record Kafka Connect reads silently.
"""

from __future__ import annotations

import logging
from typing import Unpack

from connectrt.errors import ConnectError
from connectrt.storage.config_codec import Heartbeat
from connectrt.storage.internal_topics import STATUS, InternalTopic
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
from connectrt.storage.status_store import ViewedStatusStore, _to_record
from connectrt.storage.topic_store import TopicClients, TopicStore

__all__ = ["KafkaStatusStore"]

log = logging.getLogger(__name__)


class KafkaStatusStore(ViewedStatusStore, TopicStore):
    """A :class:`~connectrt.storage.status_store.StatusStore` over a :class:`TopicLog` (the
    client settings are :class:`~connectrt.storage.topic_store.TopicClients`).

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
    only; statuses read back then are this worker's own and already applied. ``internal``:
    see :class:`TopicStore`.
    """

    def __init__(
        self,
        topic: str = "connect-status",
        *,
        partitions: int = 5,
        internal: InternalTopic | None = STATUS,
        **clients: Unpack[TopicClients],
    ) -> None:
        ViewedStatusStore.__init__(self)
        self._started = False
        #: A standby's copy: apply every status read, not only during ``start`` (the leader's
        #: own board is its truth; a standby's is the topic).
        self.follow = False
        TopicStore.__init__(self, topic, partitions=partitions, internal=internal, **clients)

    def start(self) -> None:
        """Replay the topic (statuses and heartbeats); later reads apply heartbeats only."""
        TopicStore.start(self)
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
            elif not self._started or self.follow:
                self._view.apply(record)

    # -- heartbeats (the single-worker guard's HeartbeatLog; ``refresh`` reads them) --------

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

    # -- reading: ViewedStatusStore's ---------------------------------------------------------
