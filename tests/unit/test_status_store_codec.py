from __future__ import annotations

import logging

import pytest

from connectrt.runtime.status import State, Status
from connectrt.storage.status_codec import (
    ConnectorStatusRecord,
    TaskMetricsRecord,
    TaskStatusRecord,
    TopicStatus,
    TopicStatusRecord,
    decode_status_record,
    encode_status,
    status_record,
    task_metrics_record,
    topic_status_record,
)


def test_connector_status_bytes() -> None:
    status = Status("my-conn", None, State.RUNNING, "10.0.0.1:8083", generation=7)
    assert status_record(status) == (
        b"status-connector-my-conn",
        b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}',
    )


def test_failed_task_status_bytes_with_trace() -> None:
    trace = 'java.lang.Error: "boom"\n\tat x.y(Z.java:1)'
    status = Status("a-b", 12, State.FAILED, "h:8083", trace)
    assert status_record(status) == (
        b"status-task-a-b-12",
        b'{"state":"FAILED","trace":"java.lang.Error: \\"boom\\"\\n\\tat x.y(Z.java:1)",'
        b'"worker_id":"h:8083","generation":0}',
    )


def test_destroyed_is_a_tombstone() -> None:
    assert status_record(Status("c", None, State.DESTROYED, "w")) == (
        b"status-connector-c",
        None,
    )
    assert status_record(Status("c", 0, State.DESTROYED, "w")) == (b"status-task-c-0", None)


def test_topic_status_bytes() -> None:
    ts = TopicStatus("orders", "c", 0, 1700000000000)
    assert topic_status_record(ts) == (
        b"status-topic-orders:connector-c",
        b'{"topic":{"name":"orders","connector":"c","task":0,"discoverTimestamp":1700000000000}}',
    )
    assert topic_status_record(None, "orders", "c") == (b"status-topic-orders:connector-c", None)


def test_decode_round_trips() -> None:
    status = Status("a-b-c", 3, State.PAUSED, "w:1", "t", 4)
    record = decode_status_record(*status_record(status))
    assert isinstance(record, TaskStatusRecord)
    assert (record.name, record.task) == ("a-b-c", 3)
    assert record.status is not None
    got = record.status
    assert (got.connector, got.task, got.state, got.worker_id, got.trace, got.generation) == (
        "a-b-c",
        3,
        State.PAUSED,
        "w:1",
        "t",
        4,
    )
    assert decode_status_record(b"status-connector-c", None) == ConnectorStatusRecord("c", None)
    assert decode_status_record(b"status-task-c-1", None) == TaskStatusRecord("c", 1, None)
    ts = TopicStatus("my-topic.v1", "conn-x", 2, 99)
    assert decode_status_record(*topic_status_record(ts)) == TopicStatusRecord(
        "my-topic.v1", "conn-x", ts
    )
    # The first separator ends the topic (topic names cannot contain ':').
    assert decode_status_record(b"status-topic-t:connector-a:connector-b", None) == (
        TopicStatusRecord("t", "a:connector-b", None)
    )


def test_generation_defaults_to_zero() -> None:
    record = decode_status_record(b"status-connector-c", b'{"state":"RUNNING","worker_id":"w"}')
    assert isinstance(record, ConnectorStatusRecord)
    assert record.status is not None
    assert record.status.generation == 0
    assert record.status.trace is None


def test_encode_status_accepts_string_state() -> None:
    status = Status("c", None, "UNASSIGNED", "w")  # type: ignore[arg-type]
    assert encode_status(status).startswith(b'{"state":"UNASSIGNED",')


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"{}"),
        (b"\xff", b"{}"),
        (b"status-unknown-c", b"{}"),
        (b"status-connector-c", b"garbage"),
        (b"status-connector-c", b"[1]"),
        (b"status-connector-c", b'{"state":"SLEEPY","worker_id":"w"}'),
        (b"status-connector-c", b'{"state":"RUNNING"}'),
        (b"status-connector-c", b'{"state":"RUNNING","worker_id":"w","generation":"1"}'),
        (b"status-connector-c", b'{"state":"RUNNING","worker_id":"w","trace":5}'),
        (b"status-task-c", b'{"state":"RUNNING","worker_id":"w"}'),
        (b"status-task-c-x", b'{"state":"RUNNING","worker_id":"w"}'),
        (b"status-topic-orders", None),
        (b"status-topic-:connector-c", None),
        (b"status-topic-t:connector-c", b'{"topic":{"name":"t"}}'),
        (b"status-topic-t:connector-c", b'{"name":"t"}'),
    ],
)
def test_garbage_is_logged_and_ignored(
    key: bytes | None, value: bytes | None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="connectrt.storage.status_codec"):
        assert decode_status_record(key, value) is None
    assert caplog.records


def test_task_metrics_record_round_trips_and_its_tombstone_reports_nothing() -> None:
    record = TaskMetricsRecord("my-conn", 2, 7, {"records_put": 61, "partition_lag": []})
    key, value = task_metrics_record(record)
    assert key == b"metrics-task-my-conn-2"
    assert decode_status_record(key, value) == record
    assert decode_status_record(key, None) is None


@pytest.mark.parametrize(
    "value",
    [b"[1]", b'{"generation":"7","metrics":{}}', b'{"generation":7,"metrics":[1]}', b'{"x":1}'],
)
def test_malformed_task_metrics_are_logged_and_ignored(
    value: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="connectrt.storage.status_codec"):
        assert decode_status_record(b"metrics-task-c-0", value) is None
    assert caplog.records


def test_worker_heartbeat_is_an_active_topic_record_kafka_connect_reads_silently() -> None:
    """The heartbeat has the key and value shape of Kafka Connect's active-topic record (the
    fields Kafka Connect reads: name, connector, task, discoverTimestamp), with a topic part no
    real topic can have; connectrt decodes it as a heartbeat, never as an active topic."""
    from connectrt.storage.config_codec import Heartbeat
    from connectrt.storage.status_codec import HeartbeatStatusRecord, heartbeat_status_record

    hb = Heartbeat("h:8083", "u-1", 1700000000000)
    key, value = heartbeat_status_record("connect-cluster", hb)
    assert key == b"status-topic-@connectrt-worker-heartbeat:connector-connect-cluster"
    assert value == (
        b'{"topic":{"name":"@connectrt-worker-heartbeat","connector":"connect-cluster",'
        b'"task":0,"discoverTimestamp":1700000000000,"worker_id":"h:8083","instance":"u-1"}}'
    )
    assert decode_status_record(key, value) == HeartbeatStatusRecord("connect-cluster", hb)
    assert decode_status_record(key, None) == HeartbeatStatusRecord("connect-cluster", None)
    # A real active topic of a connector named like the group is still an active topic.
    real = topic_status_record(TopicStatus("orders", "connect-cluster", 0, 1))
    assert isinstance(decode_status_record(*real), TopicStatusRecord)
