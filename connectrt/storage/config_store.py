"""Connector configurations: the :class:`ConfigStore` protocol, the snapshot its records build
and its memory store. The record format of the config topic (``config.storage.topic``) is in
:mod:`connectrt.storage.config_codec`.

Snapshot semantics (as Kafka Connect's ``ClusterConfigState``): a connector without a
``target-state`` record is STARTED; task configs are buffered until the ``commit`` record and
applied only if every id ``0..n-1`` was buffered (otherwise the connector is *inconsistent* and
keeps its previous task set); a connector tombstone drops its task configs too.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from connectrt.storage.config_codec import (
    CommitRecord,
    ConnectorConfigRecord,
    Heartbeat,
    HeartbeatRecord,
    Record,
    RestartRecord,
    TargetStateRecord,
    TaskConfigRecord,
    TaskCountRecord,
    connector_config_record,
    decode_config_record,
    heartbeat_record,
    restart_request_record,
    target_state_record,
    task_configs_records,
    task_count_record,
)
from connectrt.storage.in_memory import InMemoryStore
from connectrt.storage.states import TargetState
from connectrt.storage.tombstones import put_or_drop

__all__ = [
    "ConfigListener",
    "ConfigSnapshot",
    "ConfigStore",
    "MemoryConfigStore",
    "RecordConfigStore",
]

log = logging.getLogger(__name__)

ConfigListener = Callable[[str, str], None]
"""``listener(kind, connector_name)``; kind is "connector", "target_state", "tasks" or "restart"."""


# -- snapshot ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSnapshot:
    """An immutable view of the config topic at one point in time.

    ``task_configs`` holds committed task sets only (an empty tuple after ``{"tasks":0}``).
    ``restart_requests`` is the latest request read per connector: act on the ``"restart"``
    listener event, not on presence here (old requests stay until the connector is deleted).
    ``inconsistent`` names connectors whose last commit did not find all its task configs.
    """

    connectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    target_states: Mapping[str, TargetState] = field(default_factory=dict)
    task_configs: Mapping[str, tuple[Mapping[str, str], ...]] = field(default_factory=dict)
    restart_requests: Mapping[str, tuple[bool, bool]] = field(default_factory=dict)
    inconsistent: frozenset[str] = frozenset()
    task_counts: Mapping[str, int] = field(default_factory=dict)
    """The ``tasks-fencing-<name>`` task count per connector (exactly-once sources)."""

    def target_state(self, name: str) -> TargetState:
        """The connector's target state; STARTED when no target-state record exists."""
        return self.target_states.get(name, TargetState.STARTED)


# -- protocol ---------------------------------------------------------------------------------


@runtime_checkable
class ConfigStore(Protocol):
    """Connector configs, target states, task configs and restart requests.

    Lifecycle: ``start()`` once (reads everything), then any methods from any thread, then
    ``stop()``. Every ``put_*``/``remove_*`` returns once the records are acknowledged
    (``acks=all``) and applied to the snapshot (read-your-writes). Listeners are called on the
    thread that calls ``refresh()``, for changes read from the topic that were not already
    applied, i.e. records written by someone else; a store's own writes do not call them.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def snapshot(self) -> ConfigSnapshot: ...

    def refresh(self) -> None: ...

    def put_connector_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None = None
    ) -> None: ...

    def remove_connector(self, name: str) -> None: ...

    def put_target_state(self, name: str, state: TargetState) -> None: ...

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None: ...

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None: ...

    def put_task_count_record(self, name: str, task_count: int) -> None:
        """Write ``tasks-fencing-<name>`` (KIP-618): the task count of a connector generation
        whose predecessors' transactional producers were fenced."""
        ...

    def add_listener(self, listener: ConfigListener) -> None: ...


# -- the in-memory view shared by the stores --------------------------------------------------


class _ConfigView:
    """The snapshot being built from records; all methods hold the view's lock.

    ``offset`` orders records of one key: a record at or below the offset already applied for
    its key is skipped, so reading back a store's own writes (already applied when they were
    acknowledged) changes nothing and calls no listener. ``offset=None`` always applies.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connectors: dict[str, Mapping[str, str]] = {}
        self._targets: dict[str, TargetState] = {}
        self._tasks: dict[str, tuple[Mapping[str, str], ...]] = {}
        self._deferred: dict[str, dict[int, Mapping[str, str]]] = {}
        self._inconsistent: set[str] = set()
        self._restarts: dict[str, tuple[bool, bool]] = {}
        self._heartbeats: dict[str, Heartbeat] = {}
        self._task_counts: dict[str, int] = {}
        self._latest: dict[bytes, int] = {}
        self._cached: ConfigSnapshot | None = None

    def snapshot(self) -> ConfigSnapshot:
        with self._lock:
            if self._cached is None:
                self._cached = ConfigSnapshot(
                    connectors=MappingProxyType(dict(self._connectors)),
                    target_states=MappingProxyType(dict(self._targets)),
                    task_configs=MappingProxyType(dict(self._tasks)),
                    restart_requests=MappingProxyType(dict(self._restarts)),
                    inconsistent=frozenset(self._inconsistent),
                    task_counts=MappingProxyType(dict(self._task_counts)),
                )
            return self._cached

    def heartbeats(self) -> dict[str, Heartbeat]:
        with self._lock:
            return dict(self._heartbeats)

    def apply_all(self, records: Iterable[tuple[Record, int | None]]) -> list[tuple[str, str]]:
        """Apply ``((key, value), offset)`` pairs atomically; return the listener events."""
        events: list[tuple[str, str]] = []
        with self._lock:
            for (key, value), offset in records:
                event = self._apply(key, value, offset)
                if event is not None:
                    events.append(event)
        return events

    def _apply(
        self, key: bytes | None, value: bytes | None, offset: int | None
    ) -> tuple[str, str] | None:
        if key is not None and offset is not None:
            if offset <= self._latest.get(key, -1):
                return None
            self._latest[key] = offset
        record = decode_config_record(key, value)
        if record is None:
            return None
        self._cached = None
        if isinstance(record, ConnectorConfigRecord):
            name = record.name
            if record.config is None:
                self._connectors.pop(name, None)
                self._tasks.pop(name, None)
                self._deferred.pop(name, None)
                self._inconsistent.discard(name)
                self._restarts.pop(name, None)
                self._task_counts.pop(name, None)
            else:
                self._connectors[name] = MappingProxyType(dict(record.config))
            return ("connector", name)
        if isinstance(record, TargetStateRecord):
            put_or_drop(self._targets, record.name, record.state)
            return ("target_state", record.name)
        if isinstance(record, TaskConfigRecord):
            tasks = self._deferred.setdefault(record.name, {})
            tasks[record.task] = MappingProxyType(dict(record.config))
            return None
        if isinstance(record, CommitRecord):
            return self._commit(record.name, record.task_count)
        if isinstance(record, RestartRecord):
            self._restarts[record.name] = (record.include_tasks, record.only_failed)
            return ("restart", record.name)
        if isinstance(record, TaskCountRecord):
            put_or_drop(self._task_counts, record.name, record.task_count)
            return None
        if isinstance(record, HeartbeatRecord):
            put_or_drop(self._heartbeats, record.group_id, record.heartbeat)
            return None
        log.debug("Ignoring config record %s (not used by connectrt)", record.key)
        return None

    def _commit(self, name: str, count: int) -> tuple[str, str] | None:
        # As Kafka Connect: the buffered configs are dropped whether or not they applied.
        deferred = self._deferred.pop(name, {})
        if any(i not in deferred for i in range(count)):
            log.error(
                "Task configs of connector %s are inconsistent: the commit expects %d task(s) "
                "but only ids %s were written; keeping the previous task configs",
                name,
                count,
                sorted(deferred),
            )
            self._inconsistent.add(name)
            return None
        self._inconsistent.discard(name)
        self._tasks[name] = tuple(deferred[i] for i in range(count))
        return ("tasks", name)


def dispatch(listeners: Sequence[ConfigListener], events: Iterable[tuple[str, str]]) -> None:
    """Call every listener for each distinct event, in order; a failing listener is logged."""
    seen: set[tuple[str, str]] = set()
    for event in events:
        if event in seen:
            continue
        seen.add(event)
        for listener in listeners:
            try:
                listener(*event)
            except Exception:
                log.exception("Config listener %r failed on %s", listener, event)


# -- what both stores share -------------------------------------------------------------------


class RecordConfigStore(ABC):
    """What the memory and Kafka config stores share: a :class:`ConfigSnapshot` built by a
    view that applies config-topic records, the listeners, and every write of the
    :class:`ConfigStore` protocol as the records Kafka Connect writes for it, handed to
    ``_write`` (which applies them, after persisting them where the store persists).

    ``_write`` is called under no lock of this class; the stores serialize writes with
    ``_write_lock``. Thread-safe as far as ``_write`` is.
    """

    def __init__(self) -> None:
        self._view = _ConfigView()
        self._listeners: list[ConfigListener] = []
        self._write_lock = threading.Lock()

    def snapshot(self) -> ConfigSnapshot:
        return self._view.snapshot()

    def add_listener(self, listener: ConfigListener) -> None:
        self._listeners.append(listener)

    def put_connector_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None = None
    ) -> None:
        # Kafka Connect writes an initial target state before the connector record, so the
        # connector never runs in the wrong state.
        records = [] if target_state is None else [target_state_record(name, target_state)]
        records.append(connector_config_record(name, config))
        self._write(records)

    def remove_connector(self, name: str) -> None:
        self._write([connector_config_record(name, None), target_state_record(name, None)])

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._write([target_state_record(name, state)])

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None:
        self._write(task_configs_records(name, configs))

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self._write([restart_request_record(name, include_tasks, only_failed)])

    def put_task_count_record(self, name: str, task_count: int) -> None:
        self._write([task_count_record(name, task_count)])

    @abstractmethod
    def _write(self, records: list[Record]) -> None:
        """Persist ``records`` (in order, contiguously) and apply them to the view."""


# -- the memory store -------------------------------------------------------------------------


class MemoryConfigStore(InMemoryStore, RecordConfigStore):
    """A :class:`ConfigStore` in memory: the test double and the standalone default.

    Writes go through the same record codec and apply rules as the Kafka store (so task
    configs, commits and tombstones behave identically) but nothing is persisted. ``refresh``
    is a no-op and listeners are never called: every change is a write of this store.
    Thread-safe.
    """

    def heartbeats(self) -> dict[str, Heartbeat]:
        """Heartbeat records of earlier connectrt versions, latest per group id (read, and
        removed, by :class:`~connectrt.storage.worker_lock.SingleWorkerGuard`)."""
        return self._view.heartbeats()

    def put_legacy_heartbeat(self, group_id: str, heartbeat: Heartbeat) -> None:
        """Apply a heartbeat record as an earlier version wrote it (for tests of the guard)."""
        self._view.apply_all([(heartbeat_record(group_id, heartbeat), None)])

    def remove_heartbeat(self, group_id: str) -> None:
        self._view.apply_all([(heartbeat_record(group_id, None), None)])

    def _write(self, records: list[Record]) -> None:
        with self._write_lock:
            self._view.apply_all((r, None) for r in records)
