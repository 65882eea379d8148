"""Connector, task and active-topic status: the :class:`StatusStore` protocol, its memory store
and the codec of Kafka Connect's status topic (``status.storage.topic``).

Record format (byte-compatible with Kafka Connect; compact JSON, fields in this order):

======================================= ====================================================
key                                     value
======================================= ====================================================
``status-connector-<name>``             ``{"state":"RUNNING","trace":null,"worker_id":"h:8083",
                                        "generation":0}``
``status-task-<name>-<n>``              same shape; ``trace`` is the stack trace when FAILED
``status-topic-<topic>:connector-<c>``  ``{"topic":{"name":"orders","connector":"c","task":0,
                                        "discoverTimestamp":1700000000000}}``
======================================= ====================================================

A tombstone deletes (a destroyed connector or task, a reset topic). Unknown keys and malformed
values are logged and ignored.

Write rules: Kafka Connect's "safe writes" (UNASSIGNED/FAILED only over a value from the same
worker or an older generation) protect against stale workers of a group. connectrt runs one
worker per config topic (see :mod:`connectrt.storage.worker_lock`), so the rule here is simply
*last write wins*, in the order ``put`` was called.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import orjson

from connectrt.storage.states import State, Status

__all__ = [
    "ConnectorStatusRecord",
    "MemoryStatusStore",
    "StatusRecord",
    "StatusStore",
    "TaskStatusRecord",
    "TopicStatus",
    "TopicStatusRecord",
    "connector_status_key",
    "decode_status_record",
    "encode_status",
    "encode_topic_status",
    "status_record",
    "task_status_key",
    "topic_status_key",
    "topic_status_record",
]

log = logging.getLogger(__name__)

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class TopicStatus:
    """A topic a connector has used (KIP-558 active topics)."""

    topic: str
    connector: str
    task: int
    discover_timestamp_ms: int


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


# -- codec ------------------------------------------------------------------------------------


def connector_status_key(name: str) -> bytes:
    return (CONNECTOR_STATUS_PREFIX + name).encode()


def task_status_key(name: str, task: int) -> bytes:
    return f"{TASK_STATUS_PREFIX}{name}-{task}".encode()


def topic_status_key(topic: str, connector: str) -> bytes:
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}".encode()


def encode_status(status: Status) -> bytes:
    """``{"state":..,"trace":..,"worker_id":..,"generation":..}`` (trace null when absent)."""
    return orjson.dumps(
        {
            "state": State(status.state).value,
            "trace": status.trace,
            "worker_id": status.worker_id,
            "generation": int(status.generation),
        }
    )


def status_record(status: Status) -> Record:
    """The record for a connector (``task is None``) or task status; DESTROYED: tombstone."""
    if status.task is None:
        key = connector_status_key(status.connector)
    else:
        key = task_status_key(status.connector, status.task)
    value = None if status.state is State.DESTROYED else encode_status(status)
    return key, value


def encode_topic_status(ts: TopicStatus) -> bytes:
    return orjson.dumps(
        {
            "topic": {
                "name": ts.topic,
                "connector": ts.connector,
                "task": int(ts.task),
                "discoverTimestamp": int(ts.discover_timestamp_ms),
            }
        }
    )


def topic_status_record(ts: TopicStatus | None, topic: str = "", connector: str = "") -> Record:
    """The record for an active topic; ``ts=None`` gives the tombstone for topic/connector."""
    if ts is None:
        return topic_status_key(topic, connector), None
    return topic_status_key(ts.topic, ts.connector), encode_topic_status(ts)


@dataclass(frozen=True)
class ConnectorStatusRecord:
    name: str
    status: Status | None  # None: tombstone


@dataclass(frozen=True)
class TaskStatusRecord:
    name: str
    task: int
    status: Status | None  # None: tombstone


@dataclass(frozen=True)
class TopicStatusRecord:
    topic: str
    connector: str
    status: TopicStatus | None  # None: tombstone


StatusRecord = ConnectorStatusRecord | TaskStatusRecord | TopicStatusRecord


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode_status(key: str, name: str, task: int | None, value: bytes) -> Status | None:
    doc: Any = orjson.loads(value)
    if not isinstance(doc, dict):
        log.error("Ignoring status record %s: expected a JSON object, got %.200r", key, doc)
        return None
    state, trace = doc.get("state"), doc.get("trace")
    worker_id, generation = doc.get("worker_id"), doc.get("generation", 0)
    if (
        not isinstance(state, str)
        or state not in State.__members__
        or not isinstance(worker_id, str)
        or not (trace is None or isinstance(trace, str))
        or not _is_int(generation)
    ):
        log.error("Ignoring status record %s: invalid status %.300r", key, doc)
        return None
    return Status(name, task, State(state), worker_id, trace, generation)


def _decode_topic_status(key: str, value: bytes) -> TopicStatus | None:
    doc: Any = orjson.loads(value)
    inner = doc.get("topic") if isinstance(doc, dict) else None
    if isinstance(inner, dict):
        topic, connector = inner.get("name"), inner.get("connector")
        task, ts = inner.get("task"), inner.get("discoverTimestamp")
        if (
            isinstance(topic, str)
            and isinstance(connector, str)
            and isinstance(task, int)
            and isinstance(ts, int)
            and _is_int(task)
            and _is_int(ts)
        ):
            return TopicStatus(topic, connector, task, ts)
    log.error("Ignoring status record %s: invalid topic status %.300r", key, doc)
    return None


def _decode(key: str, value: bytes | None) -> StatusRecord | None:
    if key.startswith(CONNECTOR_STATUS_PREFIX):
        name = key[len(CONNECTOR_STATUS_PREFIX) :]
        if value is None:
            return ConnectorStatusRecord(name, None)
        status = _decode_status(key, name, None, value)
        return None if status is None else ConnectorStatusRecord(name, status)
    if key.startswith(TASK_STATUS_PREFIX):
        # Connector names may contain '-': the task number is the last part.
        name, sep, number = key[len(TASK_STATUS_PREFIX) :].rpartition("-")
        if not sep or not name or not number.isdigit():
            log.error("Ignoring status record with an invalid task key: %s", key)
            return None
        task = int(number)
        if value is None:
            return TaskStatusRecord(name, task, None)
        status = _decode_status(key, name, task, value)
        return None if status is None else TaskStatusRecord(name, task, status)
    if key.startswith(TOPIC_STATUS_PREFIX):
        # Topic names cannot contain ':', so the first separator ends the topic.
        topic, sep, connector = key[len(TOPIC_STATUS_PREFIX) :].partition(TOPIC_STATUS_SEPARATOR)
        if not sep or not topic or not connector:
            log.error("Ignoring status record with an invalid topic key: %s", key)
            return None
        if value is None:
            return TopicStatusRecord(topic, connector, None)
        ts = _decode_topic_status(key, value)
        return None if ts is None else TopicStatusRecord(topic, connector, ts)
    log.error("Discarding status record with an unknown key: %s", key)
    return None


def decode_status_record(key: bytes | None, value: bytes | None) -> StatusRecord | None:
    """Decode one status-topic record; None (after logging) for anything unusable."""
    if key is None:
        log.error("Ignoring status record without a key")
        return None
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        log.error("Ignoring status record with a non-UTF-8 key %r", key[:200])
        return None
    try:
        return _decode(text, value)
    except Exception:  # the reader must never fail on a record (bad JSON included)
        log.exception("Ignoring status record %s that could not be decoded", text)
        return None


# -- the in-memory view shared by the stores --------------------------------------------------


class _StatusView:
    """Statuses and active topics; the caller holds the owning store's lock."""

    def __init__(self) -> None:
        self.connectors: dict[str, Status] = {}
        self.tasks: dict[str, dict[int, Status]] = {}
        self.topics: dict[str, dict[str, TopicStatus]] = {}

    def apply(self, record: StatusRecord | None) -> None:
        if isinstance(record, ConnectorStatusRecord):
            if record.status is None:
                self.connectors.pop(record.name, None)
            else:
                self.connectors[record.name] = record.status
        elif isinstance(record, TaskStatusRecord):
            if record.status is None:
                tasks = self.tasks.get(record.name)
                if tasks is not None:
                    tasks.pop(record.task, None)
                    if not tasks:
                        del self.tasks[record.name]
            else:
                self.tasks.setdefault(record.name, {})[record.task] = record.status
        elif isinstance(record, TopicStatusRecord):
            if record.status is None:
                topics = self.topics.get(record.connector)
                if topics is not None:
                    topics.pop(record.topic, None)
                    if not topics:
                        del self.topics[record.connector]
            else:
                self.topics.setdefault(record.connector, {})[record.topic] = record.status

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


# -- the memory store -------------------------------------------------------------------------


class MemoryStatusStore:
    """A :class:`StatusStore` in memory (nothing survives a restart). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view = _StatusView()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def flush(self, timeout: float | None = None) -> None:
        pass

    def put(self, status: Status) -> None:
        with self._lock:
            self._view.apply(_to_record(status))

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._view.connector(name)

    def tasks(self, name: str) -> list[Status]:
        with self._lock:
            return self._view.task_list(name)

    def connectors(self) -> list[str]:
        with self._lock:
            return self._view.connector_names()

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

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return self._view.topic_names(connector)
