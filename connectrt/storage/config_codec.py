"""The record format of Kafka Connect's config topic (``config.storage.topic``): encode, decode.

Record format (byte-compatible with Kafka Connect; compact JSON, fields in this order):

=============================== ===================================================
key                             value
=============================== ===================================================
``connector-<name>``            ``{"properties":{...}}`` (tombstone: connector deleted)
``target-state-<name>``         ``{"state":"PAUSED","state.v2":"STOPPED"}`` (STOPPED is
                                written as PAUSED in ``state`` for old workers)
``task-<name>-<n>``             ``{"properties":{...}}``, applied only on a commit;
                                ``task.class`` is Kafka Connect's where the connector has a
                                Kafka Connect counterpart (:mod:`~connectrt.storage.task_classes`)
``commit-<name>``               ``{"tasks":3}``: commits task configs ``0..2``
``restart-connector-<name>``    ``{"include-tasks":true,"only-failed":false}``
``worker-heartbeat-<group>``    ``{"worker_id":"h:8083","instance":"<uuid>","timestamp":<ms>}``
                                (earlier connectrt versions only, which Kafka Connect logs
                                at ERROR: still read, and removed by the worker, whose
                                heartbeat is now in the status topic; see
                                :mod:`connectrt.storage.worker_lock`)
=============================== ===================================================

``tasks-fencing-<name>`` ``{"task-count":3}`` is the task count of the last generation of an
exactly-once source connector whose predecessors were fenced (KIP-618).

``session-key`` and ``logger-cluster-*`` records are recognised and ignored;
any other key, and any value that is not the expected JSON, is logged and ignored: the reader
never fails on a record.

The ``*_record`` functions build ``(key, value)`` byte pairs; :func:`decode_config_record` turns
one such pair back into a typed record (one of :data:`ConfigRecord`). How decoded records make up
a snapshot is :mod:`connectrt.storage.config_store`'s business. Pure functions and frozen
dataclasses: safe from any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from connectrt.errors import ConnectError
from connectrt.storage.record_codec import decode_guarded, is_int, task_key_parts
from connectrt.storage.states import TargetState
from connectrt.storage.task_classes import task_class_for_connectrt, task_class_for_kafka_connect

__all__ = [
    "CommitRecord",
    "ConfigRecord",
    "ConnectorConfigRecord",
    "Heartbeat",
    "HeartbeatRecord",
    "IgnoredRecord",
    "Record",
    "RestartRecord",
    "TargetStateRecord",
    "TaskConfigRecord",
    "TaskCountRecord",
    "commit_record",
    "connector_config_record",
    "decode_config_record",
    "heartbeat_record",
    "restart_request_record",
    "target_state_record",
    "task_config_record",
    "task_configs_records",
    "task_count_record",
]

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "connector-"
TARGET_STATE_PREFIX = "target-state-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
RESTART_PREFIX = "restart-connector-"
HEARTBEAT_PREFIX = "worker-heartbeat-"
TASK_COUNT_PREFIX = "tasks-fencing-"
# Kafka Connect records this runtime does not use (request signing, log levels).
_IGNORED_PREFIXES = ("logger-cluster-",)
_IGNORED_KEYS = ("session-key",)

Record = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class Heartbeat:
    """A worker's liveness record (see :mod:`connectrt.storage.worker_lock`)."""

    worker_id: str
    instance: str
    timestamp_ms: int


# -- encoding --------------------------------------------------------------------------------


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
    props = _string_map(f"Task {task} config", name, task_class_for_kafka_connect(config))
    return key, _dumps({"properties": props})


def commit_record(name: str, task_count: int) -> Record:
    """``commit-<name>`` -> ``{"tasks":<task_count>}``."""
    return (COMMIT_PREFIX + name).encode(), _dumps({"tasks": int(task_count)})


def task_count_record(name: str, task_count: int | None) -> Record:
    """``tasks-fencing-<name>`` -> ``{"task-count":<task_count>}`` (None: a tombstone)."""
    key = (TASK_COUNT_PREFIX + name).encode()
    return key, None if task_count is None else _dumps({"task-count": int(task_count)})


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


# -- decoding --------------------------------------------------------------------------------


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
class TaskCountRecord:
    """``tasks-fencing-<name>``: the fenced generation's task count (KIP-618)."""

    name: str
    task_count: int | None  # None: tombstone


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
    | TaskCountRecord
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
    if not is_int(count) or count < 0:
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
        if isinstance(worker_id, str) and isinstance(instance, str) and is_int(ts):
            return HeartbeatRecord(group_id, Heartbeat(worker_id, instance, ts))
    log.error("Ignoring config record %s: invalid heartbeat %.200r", key, doc)
    return None


def decode_config_record(key: bytes | None, value: bytes | None) -> ConfigRecord | None:
    """Decode one config-topic record; None (after logging) for anything unusable."""
    return decode_guarded("config", log, key, value, _decode)


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
        parsed = task_key_parts(key[len(TASK_PREFIX) :])
        if parsed is None:
            log.error("Ignoring config record with an invalid task key: %s", key)
            return None
        if value is None:
            log.error("Ignoring task config %s: unexpected tombstone", key)
            return None
        props = _properties(key, _loads(key, value))
        if props is None:
            return None
        return TaskConfigRecord(parsed[0], parsed[1], task_class_for_connectrt(props))
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
    if key.startswith(TASK_COUNT_PREFIX):
        name = key[len(TASK_COUNT_PREFIX) :]
        if value is None:
            return TaskCountRecord(name, None)
        doc = _loads(key, value)
        count = doc.get("task-count") if isinstance(doc, dict) else None
        if not is_int(count) or count < 0:
            log.error(
                'Ignoring config record %s: expected {"task-count":<n>}, got %.200r', key, doc
            )
            return None
        return TaskCountRecord(name, count)
    if key in _IGNORED_KEYS or key.startswith(_IGNORED_PREFIXES):
        return IgnoredRecord(key)
    log.error("Discarding config record with an unknown key: %s", key)
    return None
