"""Connector, task and active-topic status: the :class:`StatusStore` protocol and its memory
store. The record format of the status topic (``status.storage.topic``) is in
:mod:`connectrt.storage.status_codec`.

Write rules: Kafka Connect's "safe writes" (UNASSIGNED/FAILED only over a value from the same
worker or an older generation) protect against stale workers of a group. connectrt runs one
worker per cluster (see :mod:`connectrt.storage.worker_lock`), so the rule here is simply
*last write wins*, in the order ``put`` was called.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from connectrt.storage.config_codec import Heartbeat
from connectrt.storage.in_memory import InMemoryStore
from connectrt.storage.states import State, Status
from connectrt.storage.status_codec import (
    ConnectorStatusRecord,
    StatusRecord,
    TaskStatusRecord,
    TopicStatus,
    TopicStatusRecord,
)
from connectrt.storage.tombstones import put_or_drop, put_or_drop_inner

__all__ = ["MemoryStatusStore", "StatusStore", "ViewedStatusStore"]


# -- protocol ---------------------------------------------------------------------------------


@runtime_checkable
class StatusStore(Protocol):
    """Where the worker records connector/task states and the connectors' active topics.

    Lifecycle: ``start()`` once (reads back everything stored, so statuses from before a
    restart are visible until overwritten), then any methods from any thread, then ``stop()``
    (flushes). ``put`` and ``put_topic`` may return before the record is durable; ``flush``
    waits. Reads serve from memory and include this store's own writes at once.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def flush(self, timeout: float | None = None) -> None: ...

    def put(self, status: Status) -> None: ...

    def connector(self, name: str) -> Status | None: ...

    def tasks(self, name: str) -> list[Status]: ...

    def connectors(self) -> list[str]: ...

    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None: ...

    def remove_topics(self, connector: str) -> None: ...

    def topics(self, connector: str) -> list[str]: ...


# -- the in-memory view shared by the stores --------------------------------------------------


class _StatusView:
    """Statuses and active topics; the caller holds the owning store's lock."""

    def __init__(self) -> None:
        self.connectors: dict[str, Status] = {}
        self.tasks: dict[str, dict[int, Status]] = {}
        self.topics: dict[str, dict[str, TopicStatus]] = {}

    def apply(self, record: StatusRecord | None) -> None:
        if isinstance(record, ConnectorStatusRecord):
            put_or_drop(self.connectors, record.name, record.status)
        elif isinstance(record, TaskStatusRecord):
            put_or_drop_inner(self.tasks, record.name, record.task, record.status)
        elif isinstance(record, TopicStatusRecord):
            put_or_drop_inner(self.topics, record.connector, record.topic, record.status)

    def connector(self, name: str) -> Status | None:
        return self.connectors.get(name)

    def task_list(self, name: str) -> list[Status]:
        tasks = self.tasks.get(name, {})
        return [tasks[t] for t in sorted(tasks)]

    def connector_names(self) -> list[str]:
        return sorted(self.connectors)

    def topic_names(self, connector: str) -> list[str]:
        return sorted(self.topics.get(connector, {}))

    def has_topic(self, connector: str, topic: str) -> bool:
        return topic in self.topics.get(connector, {})


def _to_record(status: Status) -> StatusRecord:
    value = None if status.state is State.DESTROYED else status
    if status.task is None:
        return ConnectorStatusRecord(status.connector, value)
    return TaskStatusRecord(status.connector, status.task, value)


# -- what both stores share -------------------------------------------------------------------


class ViewedStatusStore:
    """What the memory and Kafka status stores share: statuses and active topics in a view,
    heartbeats by group id, one lock over both, and the reads of :class:`StatusStore` served
    from them. Thread-safe (every read takes the lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view = _StatusView()
        self._heartbeats: dict[str, Heartbeat] = {}

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

    def heartbeats(self) -> dict[str, Heartbeat]:
        """The latest heartbeat per group id, as of the last read or write."""
        with self._lock:
            return dict(self._heartbeats)


# -- the memory store -------------------------------------------------------------------------


class MemoryStatusStore(InMemoryStore, ViewedStatusStore):
    """A :class:`StatusStore` in memory (nothing survives a restart). Thread-safe."""

    def put(self, status: Status) -> None:
        with self._lock:
            self._view.apply(_to_record(status))

    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None:
        """Track ``topic`` as active for ``connector``; a topic already tracked is kept as is."""
        with self._lock:
            if not self._view.has_topic(connector, topic):
                ts = TopicStatus(topic, connector, task, discovered_ms)
                self._view.apply(TopicStatusRecord(topic, connector, ts))

    def remove_topics(self, connector: str) -> None:
        with self._lock:
            for topic in self._view.topic_names(connector):
                self._view.apply(TopicStatusRecord(topic, connector, None))

    # -- heartbeats (the single-worker guard's HeartbeatLog) ---------------------------------

    def write_heartbeat(self, group_id: str, heartbeat: Heartbeat) -> None:
        with self._lock:
            self._heartbeats[group_id] = heartbeat
