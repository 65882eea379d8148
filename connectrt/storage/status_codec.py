"""The record format of Kafka Connect's status topic (``status.storage.topic``): encode, decode.

Record format (byte-compatible with Kafka Connect; compact JSON, fields in this order):

======================================= ====================================================
key                                     value
======================================= ====================================================
``status-connector-<name>``             ``{"state":"RUNNING","trace":null,"worker_id":"h:8083",
                                        "generation":0}``
``status-task-<name>-<n>``              same shape; ``trace`` is the stack trace when FAILED
``status-topic-<topic>:connector-<c>``  ``{"topic":{"name":"orders","connector":"c","task":0,
                                        "discoverTimestamp":1700000000000}}``
``call-task-<name>-<n>`` (connectrt)    ``{"generation":7,"worker_id":"h:4242","call":"poll",
                                        "entered":1.5,"age":3.2,"stack":"..."}``: the call a
                                        task on a Spark executor is stuck in (``call`` null
                                        once it returned); see :class:`TaskCallRecord`
``metrics-task-<name>-<n>`` (connectrt) ``{"generation":7,"metrics":{"records_put":10,...}}``:
                                        the metrics a task on a Spark executor last reported
                                        (:meth:`TaskMetrics.snapshot`); see
                                        :class:`TaskMetricsRecord`
``status-topic-@connectrt-worker-       ``{"topic":{"name":"@connectrt-worker-heartbeat",
heartbeat:connector-<group.id>``        "connector":"<group.id>","task":0,"discoverTimestamp":
(connectrt)                             <ms>,"worker_id":"h:8083","instance":"<uuid4>"}}``: a
                                        worker's liveness (:class:`HeartbeatStatusRecord`)
======================================= ====================================================

The worker heartbeat takes the shape of an active-topic record because that is a record Kafka
Connect's status reader accepts without a word (it logs at TRACE; any key it does not know it
logs at WARN, ``Discarding record with invalid key``, and its config topic reader logs unknown
keys at ERROR). Its topic part, ``@connectrt-worker-heartbeat``, cannot be a real topic (``@``
is not allowed in topic names), so it never collides with an active topic; Kafka Connect reads
``name``, ``connector``, ``task`` and ``discoverTimestamp`` and ignores the other fields.

A tombstone deletes (a destroyed connector or task, a reset topic). Unknown keys and malformed
values are logged and ignored: :func:`decode_status_record` never raises. Pure functions and
frozen dataclasses: safe from any thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import orjson

from connectrt.storage.config_codec import Heartbeat
from connectrt.storage.record_codec import decode_guarded, is_int, task_key_parts
from connectrt.storage.states import State, Status

__all__ = [
    "HEARTBEAT_TOPIC",
    "ConnectorStatusRecord",
    "HeartbeatStatusRecord",
    "Record",
    "StatusRecord",
    "TaskCallRecord",
    "TaskMetricsRecord",
    "TaskStatusRecord",
    "TopicStatus",
    "TopicStatusRecord",
    "connector_status_key",
    "decode_status_record",
    "encode_status",
    "encode_topic_status",
    "heartbeat_status_record",
    "status_record",
    "task_call_record",
    "task_metrics_record",
    "task_status_key",
    "topic_status_key",
    "topic_status_record",
]

log = logging.getLogger(__name__)

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TASK_CALL_PREFIX = "call-task-"
TASK_METRICS_PREFIX = "metrics-task-"
TOPIC_STATUS_SEPARATOR = ":connector-"
HEARTBEAT_TOPIC = "@connectrt-worker-heartbeat"
"""The topic part of a heartbeat's key: not a legal topic name, so no real topic has it."""
_HEARTBEAT_KEY_PREFIX = TOPIC_STATUS_PREFIX + HEARTBEAT_TOPIC + TOPIC_STATUS_SEPARATOR

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class TopicStatus:
    """A topic a connector has used (KIP-558 active topics)."""

    topic: str
    connector: str
    task: int
    discover_timestamp_ms: int


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


@dataclass(frozen=True)
class TaskCallRecord:
    """connectrt: the call a task running on a Spark executor has been in for a while (from the
    task's :class:`~connectrt.runtime.executors.call_reports.CallReporter`), for the driver's stall
    watchdog. ``call`` None: the call reported before has returned. Kafka Connect's status
    readers skip the key (with a warning); connectrt's status store ignores the record."""

    name: str
    task: int
    generation: int
    worker_id: str
    call: str | None
    entered: float
    age: float
    stack: str | None


@dataclass(frozen=True)
class TaskMetricsRecord:
    """connectrt: the metrics of a task running on a Spark executor (its
    :meth:`~connectrt.runtime.metrics.TaskMetrics.snapshot`, JSON: ``inf`` bounds become null),
    written every few seconds so the driver's ``/metrics`` follows a running task. Ignored by
    Kafka Connect's status readers (with a warning) and by connectrt's status store."""

    name: str
    task: int
    generation: int
    metrics: dict[str, Any]


@dataclass(frozen=True)
class HeartbeatStatusRecord:
    """connectrt: the liveness record of the worker of ``group_id`` (see
    :mod:`connectrt.storage.worker_lock`); ``heartbeat`` None for a tombstone."""

    group_id: str
    heartbeat: Heartbeat | None


StatusRecord = (
    ConnectorStatusRecord
    | TaskStatusRecord
    | TopicStatusRecord
    | TaskCallRecord
    | TaskMetricsRecord
    | HeartbeatStatusRecord
)


def heartbeat_status_record(group_id: str, heartbeat: Heartbeat | None) -> Record:
    """The heartbeat of ``group_id``'s worker as an active-topic record (None: tombstone)."""
    key = (_HEARTBEAT_KEY_PREFIX + group_id).encode()
    if heartbeat is None:
        return key, None
    value = {
        "topic": {
            "name": HEARTBEAT_TOPIC,
            "connector": group_id,
            "task": 0,
            "discoverTimestamp": int(heartbeat.timestamp_ms),
            "worker_id": heartbeat.worker_id,
            "instance": heartbeat.instance,
        }
    }
    return key, orjson.dumps(value)


def _decode_heartbeat(key: str, value: bytes | None) -> HeartbeatStatusRecord | None:
    group_id = key[len(_HEARTBEAT_KEY_PREFIX) :]
    if value is None:
        return HeartbeatStatusRecord(group_id, None)
    doc: Any = orjson.loads(value)
    inner = doc.get("topic") if isinstance(doc, dict) else None
    if isinstance(inner, dict):
        worker_id, instance = inner.get("worker_id"), inner.get("instance")
        ts: Any = inner.get("discoverTimestamp")
        if isinstance(worker_id, str) and isinstance(instance, str) and is_int(ts):
            return HeartbeatStatusRecord(group_id, Heartbeat(worker_id, instance, ts))
    log.error("Ignoring status record %s: invalid heartbeat %.300r", key, doc)
    return None


def task_call_record(record: TaskCallRecord) -> Record:
    value = {
        "generation": int(record.generation),
        "worker_id": record.worker_id,
        "call": record.call,
        "entered": float(record.entered),
        "age": float(record.age),
        "stack": record.stack,
    }
    return f"{TASK_CALL_PREFIX}{record.name}-{record.task}".encode(), orjson.dumps(value)


def task_metrics_record(record: TaskMetricsRecord) -> Record:
    value = {"generation": int(record.generation), "metrics": record.metrics}
    return f"{TASK_METRICS_PREFIX}{record.name}-{record.task}".encode(), orjson.dumps(value)


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
        or not is_int(generation)
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
        if isinstance(topic, str) and isinstance(connector, str) and is_int(task) and is_int(ts):
            return TopicStatus(topic, connector, task, ts)
    log.error("Ignoring status record %s: invalid topic status %.300r", key, doc)
    return None


def _decode_task_call(key: str, value: bytes | None) -> TaskCallRecord | None:
    parts = task_key_parts(key[len(TASK_CALL_PREFIX) :])
    if parts is None or value is None:
        return None  # a tombstone or a key of no task: nothing to report
    doc: Any = orjson.loads(value)
    if not isinstance(doc, dict):
        return None
    call, stack, worker_id = doc.get("call"), doc.get("stack"), doc.get("worker_id")
    entered, age = doc.get("entered"), doc.get("age")
    generation: Any = doc.get("generation")
    if (
        not (call is None or isinstance(call, str))
        or not (stack is None or isinstance(stack, str))
        or not isinstance(worker_id, str)
        or not isinstance(entered, int | float)
        or not isinstance(age, int | float)
        or not is_int(generation)
    ):
        log.warning("Ignoring status record %s: invalid task call %.300r", key, doc)
        return None
    return TaskCallRecord(*parts, generation, worker_id, call, float(entered), float(age), stack)


def _decode_task_metrics(key: str, value: bytes | None) -> TaskMetricsRecord | None:
    parts = task_key_parts(key[len(TASK_METRICS_PREFIX) :])
    if parts is None or value is None:
        return None  # a tombstone or a key of no task: nothing to report
    doc: Any = orjson.loads(value)
    generation: Any = doc.get("generation") if isinstance(doc, dict) else None
    metrics: Any = doc.get("metrics") if isinstance(doc, dict) else None
    if not is_int(generation) or not isinstance(metrics, dict):
        log.warning("Ignoring status record %s: invalid task metrics %.300r", key, doc)
        return None
    return TaskMetricsRecord(*parts, generation, metrics)


def _decode(key: str, value: bytes | None) -> StatusRecord | None:
    if key.startswith(TASK_CALL_PREFIX):
        return _decode_task_call(key, value)
    if key.startswith(TASK_METRICS_PREFIX):
        return _decode_task_metrics(key, value)
    if key.startswith(CONNECTOR_STATUS_PREFIX):
        name = key[len(CONNECTOR_STATUS_PREFIX) :]
        if value is None:
            return ConnectorStatusRecord(name, None)
        status = _decode_status(key, name, None, value)
        return None if status is None else ConnectorStatusRecord(name, status)
    if key.startswith(TASK_STATUS_PREFIX):
        parts = task_key_parts(key[len(TASK_STATUS_PREFIX) :])
        if parts is None:
            log.error("Ignoring status record with an invalid task key: %s", key)
            return None
        name, task = parts
        if value is None:
            return TaskStatusRecord(name, task, None)
        status = _decode_status(key, name, task, value)
        return None if status is None else TaskStatusRecord(name, task, status)
    if key.startswith(_HEARTBEAT_KEY_PREFIX):
        return _decode_heartbeat(key, value)
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
    return decode_guarded("status", log, key, value, _decode)
