"""Connector configurations: the :class:`ConfigStore` protocol, its memory store and the codec
of Kafka Connect's config topic (``config.storage.topic``).

Record format (byte-compatible with Kafka Connect; compact JSON, fields in this order):

=============================== ===================================================
key                             value
=============================== ===================================================
``connector-<name>``            ``{"properties":{...}}`` (tombstone: connector deleted)
``target-state-<name>``         ``{"state":"PAUSED","state.v2":"STOPPED"}`` (STOPPED is
                                written as PAUSED in ``state`` for old workers)
``task-<name>-<n>``             ``{"properties":{...}}``, applied only on a commit
``commit-<name>``               ``{"tasks":3}``: commits task configs ``0..2``
``restart-connector-<name>``    ``{"include-tasks":true,"only-failed":false}``
``worker-heartbeat-<group>``    ``{"worker_id":"h:8083","instance":"<uuid>","timestamp":<ms>}``
                                (connectrt only: see :mod:`connectrt.storage.worker_lock`)
=============================== ===================================================

``session-key``, ``tasks-fencing-*`` and ``logger-cluster-*`` records are recognised and ignored;
any other key, and any value that is not the expected JSON, is logged and ignored: the reader
never fails on a record.

Snapshot semantics (as Kafka Connect's ``ClusterConfigState``): a connector without a
``target-state`` record is STARTED; task configs are buffered until the ``commit`` record and
applied only if every id ``0..n-1`` was buffered (otherwise the connector is *inconsistent* and
keeps its previous task set); a connector tombstone drops its task configs too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import orjson

from connectrt.errors import ConnectError
from connectrt.storage.states import TargetState

__all__ = [
    "CommitRecord",
    "ConfigListener",
    "ConfigRecord",
    "ConfigSnapshot",
    "ConfigStore",
    "ConnectorConfigRecord",
    "Heartbeat",
    "HeartbeatRecord",
    "IgnoredRecord",
    "MemoryConfigStore",
    "RestartRecord",
    "TargetStateRecord",
    "TaskConfigRecord",
    "commit_record",
    "connector_config_record",
    "decode_config_record",
    "heartbeat_record",
    "restart_request_record",
    "target_state_record",
    "task_config_record",
    "task_configs_records",
]

log = logging.getLogger(__name__)

ConfigListener = Callable[[str, str], None]
"""``listener(kind, connector_name)``; kind is "connector", "target_state", "tasks" or "restart"."""

CONNECTOR_PREFIX = "connector-"
TARGET_STATE_PREFIX = "target-state-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
RESTART_PREFIX = "restart-connector-"
HEARTBEAT_PREFIX = "worker-heartbeat-"
# Kafka Connect records this runtime does not use (EOS fencing, request signing, log levels).
_IGNORED_PREFIXES = ("tasks-fencing-", "logger-cluster-")
_IGNORED_KEYS = ("session-key",)

Record = tuple[bytes | None, bytes | None]


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

    def target_state(self, name: str) -> TargetState:
        """The connector's target state; STARTED when no target-state record exists."""
        return self.target_states.get(name, TargetState.STARTED)


@dataclass(frozen=True)
class Heartbeat:
    """A worker's liveness record (see :mod:`connectrt.storage.worker_lock`)."""

    worker_id: str
    instance: str
    timestamp_ms: int


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

    def add_listener(self, listener: ConfigListener) -> None: ...


# -- codec: encoding --------------------------------------------------------------------------


def _dumps(value: object) -> bytes:
    # orjson writes compact JSON, UTF-8 without \u escapes, keys in insertion order: the
    # shape Jackson gives Kafka Connect.
    return orjson.dumps(value)


def _string_map(kind: str, name: str, config: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConnectError(
                f"{kind} for connector '{name}' must map strings to strings, "
                f"but has {key!r}: {value!r}"
            )
        out[key] = value
    return out


def connector_config_record(name: str, config: Mapping[str, str] | None) -> Record:
    """``connector-<name>`` -> ``{"properties":{...}}`` (insertion order); None: tombstone."""
    key = (CONNECTOR_PREFIX + name).encode()
    if config is None:
        return key, None
    return key, _dumps({"properties": _string_map("Connector config", name, config)})


def target_state_record(name: str, state: TargetState | None) -> Record:
    """``target-state-<name>``; STOPPED is ``{"state":"PAUSED","state.v2":"STOPPED"}``."""
    key = (TARGET_STATE_PREFIX + name).encode()
    if state is None:
        return key, None
    state = TargetState(state)
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return key, _dumps({"state": legacy.value, "state.v2": state.value})


def task_config_record(name: str, task: int, config: Mapping[str, str]) -> Record:
    """``task-<name>-<task>`` -> ``{"properties":{...}}``."""
    key = f"{TASK_PREFIX}{name}-{task}".encode()
    return key, _dumps({"properties": _string_map(f"Task {task} config", name, config)})


def commit_record(name: str, task_count: int) -> Record:
    """``commit-<name>`` -> ``{"tasks":<task_count>}``."""
    return (COMMIT_PREFIX + name).encode(), _dumps({"tasks": int(task_count)})


def task_configs_records(name: str, configs: Sequence[Mapping[str, str]]) -> list[Record]:
    """The records of one task-config update: every task, then the commit."""
    records = [task_config_record(name, i, c) for i, c in enumerate(configs)]
    records.append(commit_record(name, len(configs)))
    return records


def restart_request_record(name: str, include_tasks: bool, only_failed: bool) -> Record:
    """``restart-connector-<name>`` -> ``{"include-tasks":..,"only-failed":..}``."""
    value = {"include-tasks": bool(include_tasks), "only-failed": bool(only_failed)}
    return (RESTART_PREFIX + name).encode(), _dumps(value)


def heartbeat_record(group_id: str, heartbeat: Heartbeat | None) -> Record:
    """``worker-heartbeat-<group_id>`` -> ``{"worker_id":..,"instance":..,"timestamp":..}``."""
    key = (HEARTBEAT_PREFIX + group_id).encode()
    if heartbeat is None:
        return key, None
    value = {
        "worker_id": heartbeat.worker_id,
        "instance": heartbeat.instance,
        "timestamp": int(heartbeat.timestamp_ms),
    }
    return key, _dumps(value)


# -- codec: decoding --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectorConfigRecord:
    name: str
    config: Mapping[str, str] | None  # None: tombstone (connector deleted)


@dataclass(frozen=True)
class TargetStateRecord:
    name: str
    state: TargetState | None  # None: tombstone


@dataclass(frozen=True)
class TaskConfigRecord:
    name: str
    task: int
    config: Mapping[str, str]


@dataclass(frozen=True)
class CommitRecord:
    name: str
    task_count: int


@dataclass(frozen=True)
class RestartRecord:
    name: str
    include_tasks: bool
    only_failed: bool


@dataclass(frozen=True)
class HeartbeatRecord:
    group_id: str
    heartbeat: Heartbeat | None  # None: tombstone


@dataclass(frozen=True)
class IgnoredRecord:
    """A Kafka Connect record kind this runtime does not use (session key, fencing, ...)."""

    key: str


ConfigRecord = (
    ConnectorConfigRecord
    | TargetStateRecord
    | TaskConfigRecord
    | CommitRecord
    | RestartRecord
    | HeartbeatRecord
    | IgnoredRecord
)


def _loads(key: str, value: bytes) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        log.error("Ignoring config record %s: value is not JSON: %r", key, value[:200])
        return None


def _properties(key: str, doc: Any) -> dict[str, str] | None:
    props = doc.get("properties") if isinstance(doc, dict) else None
    if not isinstance(props, dict):
        log.error('Ignoring config record %s: expected {"properties":{...}}, got %.200r', key, doc)
        return None
    out: dict[str, str] = {}
    for k, v in props.items():
        if isinstance(v, str):
            out[k] = v
        elif v is None:
            continue  # Java would keep a null; a Mapping[str, str] cannot
        elif isinstance(v, bool | int | float):
            out[k] = orjson.dumps(v).decode()
        else:
            log.error("Ignoring config record %s: property %s is not a string: %.200r", key, k, v)
            return None
    return out


def _decode_target_state(key: str, name: str, doc: Any) -> TargetStateRecord | None:
    if not isinstance(doc, dict):
        log.error("Ignoring config record %s: expected a JSON object, got %.200r", key, doc)
        return None
    raw = doc.get("state.v2")
    if raw is None:
        raw = doc.get("state")  # written by a worker older than KIP-875
    if isinstance(raw, str) and raw in TargetState.__members__:
        return TargetStateRecord(name, TargetState(raw))
    log.error("Ignoring config record %s: invalid target state %.200r", key, raw)
    return None


def _decode_commit(key: str, name: str, doc: Any) -> CommitRecord | None:
    count = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        log.error('Ignoring config record %s: expected {"tasks":<count>}, got %.200r', key, doc)
        return None
    return CommitRecord(name, count)


def _decode_restart(key: str, name: str, doc: Any) -> RestartRecord | None:
    if not isinstance(doc, dict):
        log.error("Ignoring config record %s: expected a JSON object, got %.200r", key, doc)
        return None
    flags = []
    for field_name in ("include-tasks", "only-failed"):
        flag = doc.get(field_name)
        if not isinstance(flag, bool):
            # As Kafka Connect: a missing or invalid flag takes its default (false).
            log.warning("Restart request %s: %s is %.100r, using false", key, field_name, flag)
            flag = False
        flags.append(flag)
    return RestartRecord(name, flags[0], flags[1])


def _decode_heartbeat(key: str, group_id: str, doc: Any) -> HeartbeatRecord | None:
    if isinstance(doc, dict):
        worker_id, instance, ts = doc.get("worker_id"), doc.get("instance"), doc.get("timestamp")
        if (
            isinstance(worker_id, str)
            and isinstance(instance, str)
            and isinstance(ts, int)
            and not isinstance(ts, bool)
        ):
            return HeartbeatRecord(group_id, Heartbeat(worker_id, instance, ts))
    log.error("Ignoring config record %s: invalid heartbeat %.200r", key, doc)
    return None


def _parse_task_key(key: str) -> tuple[str, int] | None:
    # Connector names may contain '-': the task number is the last part.
    name, sep, number = key[len(TASK_PREFIX) :].rpartition("-")
    if not sep or not name or not number.isdigit():
        return None
    return name, int(number)


def decode_config_record(key: bytes | None, value: bytes | None) -> ConfigRecord | None:
    """Decode one config-topic record; None (after logging) for anything unusable."""
    if key is None:
        log.error("Ignoring config record without a key")
        return None
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        log.error("Ignoring config record with a non-UTF-8 key %r", key[:200])
        return None
    try:
        return _decode(text, value)
    except Exception:  # the reader must never fail on a record
        log.exception("Ignoring config record %s that could not be decoded", text)
        return None


def _decode(key: str, value: bytes | None) -> ConfigRecord | None:
    if key.startswith(CONNECTOR_PREFIX):
        name = key[len(CONNECTOR_PREFIX) :]
        if value is None:
            return ConnectorConfigRecord(name, None)
        props = _properties(key, _loads(key, value))
        return None if props is None else ConnectorConfigRecord(name, props)
    if key.startswith(TARGET_STATE_PREFIX):
        name = key[len(TARGET_STATE_PREFIX) :]
        if value is None:
            return TargetStateRecord(name, None)
        return _decode_target_state(key, name, _loads(key, value))
    if key.startswith(TASK_PREFIX):
        parsed = _parse_task_key(key)
        if parsed is None:
            log.error("Ignoring config record with an invalid task key: %s", key)
            return None
        if value is None:
            log.error("Ignoring task config %s: unexpected tombstone", key)
            return None
        props = _properties(key, _loads(key, value))
        return None if props is None else TaskConfigRecord(parsed[0], parsed[1], props)
    if key.startswith(COMMIT_PREFIX):
        if value is None:
            log.error("Ignoring task commit %s: unexpected tombstone", key)
            return None
        return _decode_commit(key, key[len(COMMIT_PREFIX) :], _loads(key, value))
    if key.startswith(RESTART_PREFIX):
        if value is None:
            log.error("Ignoring restart request %s: unexpected tombstone", key)
            return None
        return _decode_restart(key, key[len(RESTART_PREFIX) :], _loads(key, value))
    if key.startswith(HEARTBEAT_PREFIX):
        group_id = key[len(HEARTBEAT_PREFIX) :]
        if value is None:
            return HeartbeatRecord(group_id, None)
        return _decode_heartbeat(key, group_id, _loads(key, value))
    if key in _IGNORED_KEYS or key.startswith(_IGNORED_PREFIXES):
        return IgnoredRecord(key)
    log.error("Discarding config record with an unknown key: %s", key)
    return None


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
            else:
                self._connectors[name] = MappingProxyType(dict(record.config))
            return ("connector", name)
        if isinstance(record, TargetStateRecord):
            if record.state is None:
                self._targets.pop(record.name, None)
            else:
                self._targets[record.name] = record.state
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
        if isinstance(record, HeartbeatRecord):
            if record.heartbeat is None:
                self._heartbeats.pop(record.group_id, None)
            else:
                self._heartbeats[record.group_id] = record.heartbeat
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


# -- the memory store -------------------------------------------------------------------------


class MemoryConfigStore:
    """A :class:`ConfigStore` in memory: the test double and the standalone default.

    Writes go through the same record codec and apply rules as the Kafka store (so task
    configs, commits and tombstones behave identically) but nothing is persisted. ``refresh``
    is a no-op and listeners are never called: every change is a write of this store.
    Thread-safe.
    """

    topic = "(memory)"

    def __init__(self) -> None:
        self._view = _ConfigView()
        self._listeners: list[ConfigListener] = []
        self._write_lock = threading.Lock()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def snapshot(self) -> ConfigSnapshot:
        return self._view.snapshot()

    def refresh(self, timeout: float | None = None) -> None:
        pass

    def add_listener(self, listener: ConfigListener) -> None:
        self._listeners.append(listener)

    def put_connector_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None = None
    ) -> None:
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

    def heartbeats(self) -> dict[str, Heartbeat]:
        """The latest heartbeat per group id (for :class:`SingleWorkerGuard`)."""
        return self._view.heartbeats()

    def write_heartbeat(self, group_id: str, heartbeat: Heartbeat) -> None:
        self._view.apply_all([(heartbeat_record(group_id, heartbeat), None)])

    def _write(self, records: list[Record]) -> None:
        with self._write_lock:
            self._view.apply_all((r, None) for r in records)
