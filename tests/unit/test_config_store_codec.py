from __future__ import annotations

import logging

import pytest

from connectrt.errors import ConnectError
from connectrt.runtime.status import TargetState
from connectrt.storage.config_codec import (
    CommitRecord,
    ConnectorConfigRecord,
    Heartbeat,
    HeartbeatRecord,
    IgnoredRecord,
    RestartRecord,
    TargetStateRecord,
    TaskConfigRecord,
    TaskCountRecord,
    commit_record,
    connector_config_record,
    decode_config_record,
    heartbeat_record,
    restart_request_record,
    target_state_record,
    task_config_record,
    task_configs_records,
    task_count_record,
)
from connectrt.storage.config_store import _ConfigView

# -- byte-exact encoding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "value"),
    [
        (TargetState.STARTED, b'{"state":"STARTED","state.v2":"STARTED"}'),
        (TargetState.PAUSED, b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (TargetState.STOPPED, b'{"state":"PAUSED","state.v2":"STOPPED"}'),
    ],
)
def test_target_state_bytes(state: TargetState, value: bytes) -> None:
    assert target_state_record("my-conn", state) == (b"target-state-my-conn", value)


def test_connector_config_keeps_insertion_order_and_utf8() -> None:
    config = {"name": "c", "connector.class": "FileStreamSource", "z": "1", "a": 'é/"\n'}
    key, value = connector_config_record("c", config)
    assert key == b"connector-c"
    assert value == (
        b'{"properties":{"name":"c","connector.class":"FileStreamSource","z":"1",'
        b'"a":"\xc3\xa9/\\"\\n"}}'
    )


def test_tombstones() -> None:
    assert connector_config_record("c", None) == (b"connector-c", None)
    assert target_state_record("c", None) == (b"target-state-c", None)
    assert heartbeat_record("g", None) == (b"worker-heartbeat-g", None)


def test_task_commit_restart_heartbeat_bytes() -> None:
    assert task_config_record("a-b", 2, {"task.class": "T", "k": "v"}) == (
        b"task-a-b-2",
        b'{"properties":{"task.class":"T","k":"v"}}',
    )
    assert commit_record("a-b", 3) == (b"commit-a-b", b'{"tasks":3}')
    assert restart_request_record("c", True, False) == (
        b"restart-connector-c",
        b'{"include-tasks":true,"only-failed":false}',
    )
    assert heartbeat_record("connect-cluster", Heartbeat("h:8083", "u-1", 1700000000000)) == (
        b"worker-heartbeat-connect-cluster",
        b'{"worker_id":"h:8083","instance":"u-1","timestamp":1700000000000}',
    )


def test_task_configs_records_end_with_commit() -> None:
    records = task_configs_records("c", [{"t": "0"}, {"t": "1"}])
    assert [k for k, _ in records] == [b"task-c-0", b"task-c-1", b"commit-c"]
    assert records[-1][1] == b'{"tasks":2}'
    assert task_configs_records("c", []) == [(b"commit-c", b'{"tasks":0}')]


def test_non_string_config_is_rejected() -> None:
    with pytest.raises(ConnectError, match="must map strings to strings"):
        connector_config_record("c", {"tasks.max": 1})  # type: ignore[dict-item]


# -- decoding ---------------------------------------------------------------------------------


def test_decode_round_trips() -> None:
    assert decode_config_record(*connector_config_record("c", {"a": "1"})) == (
        ConnectorConfigRecord("c", {"a": "1"})
    )
    assert decode_config_record(b"connector-c", None) == ConnectorConfigRecord("c", None)
    for state in TargetState:
        assert decode_config_record(*target_state_record("c", state)) == TargetStateRecord(
            "c", state
        )
    assert decode_config_record(*task_config_record("my-conn-x", 12, {"a": "b"})) == (
        TaskConfigRecord("my-conn-x", 12, {"a": "b"})
    )
    assert decode_config_record(*commit_record("c", 0)) == CommitRecord("c", 0)
    assert decode_config_record(*restart_request_record("c", False, True)) == RestartRecord(
        "c", False, True
    )
    hb = Heartbeat("w", "i", 5)
    assert decode_config_record(*heartbeat_record("g", hb)) == HeartbeatRecord("g", hb)


def test_decode_target_state_from_old_and_new_workers() -> None:
    # A pre-KIP-875 worker writes only "state"; "state.v2" wins when both are present.
    assert decode_config_record(b"target-state-c", b'{"state":"PAUSED"}') == TargetStateRecord(
        "c", TargetState.PAUSED
    )
    assert decode_config_record(
        b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}'
    ) == TargetStateRecord("c", TargetState.STOPPED)


def test_decode_converts_scalar_properties() -> None:
    record = decode_config_record(
        b"connector-c", b'{"properties":{"tasks.max":2,"b":true,"n":null,"s":"x"}}'
    )
    assert record == ConnectorConfigRecord("c", {"tasks.max": "2", "b": "true", "s": "x"})


def test_known_unused_keys_are_ignored_quietly() -> None:
    for key in (b"session-key", b"logger-cluster-org.foo"):
        assert decode_config_record(key, b'{"x":1}') == IgnoredRecord(key.decode())


def test_task_count_record_round_trips_in_kafka_connects_format() -> None:
    key, value = task_count_record("my-conn", 3)
    assert (key, value) == (b"tasks-fencing-my-conn", b'{"task-count":3}')
    assert decode_config_record(key, value) == TaskCountRecord("my-conn", 3)
    assert decode_config_record(key, None) == TaskCountRecord("my-conn", None)
    assert decode_config_record(key, b'{"task-count":"3"}') is None  # not a count: dropped


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b'{"properties":{}}'),
        (b"\xff\xfe", b"{}"),
        (b"unknown-thing", b"{}"),
        (b"connector-c", b"not json"),
        (b"connector-c", b'{"props":{}}'),
        (b"connector-c", b'["properties"]'),
        (b"connector-c", b'{"properties":{"a":{"nested":1}}}'),
        (b"target-state-c", b'{"state":"RUNNING"}'),
        (b"target-state-c", b'{"state":7}'),
        (b"target-state-c", b"[]"),
        (b"task-c", b'{"properties":{}}'),
        (b"task-c-x", b'{"properties":{}}'),
        (b"task--1", b'{"properties":{}}'),
        (b"task-c-0", None),
        (b"task-c-0", b'{"properties":"x"}'),
        (b"commit-c", None),
        (b"commit-c", b'{"tasks":"3"}'),
        (b"commit-c", b'{"tasks":-1}'),
        (b"commit-c", b'{"tasks":true}'),
        (b"restart-connector-c", None),
        (b"restart-connector-c", b"3"),
        (b"worker-heartbeat-g", b'{"worker_id":"w"}'),
        (b"connector-c", b"\xff"),
    ],
)
def test_garbage_is_logged_and_ignored(
    key: bytes | None, value: bytes | None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="connectrt.storage.config_codec"):
        assert decode_config_record(key, value) is None
    assert caplog.records, "an ignored record must be logged"


def test_restart_flags_default_to_false() -> None:
    assert decode_config_record(b"restart-connector-c", b'{"include-tasks":"yes"}') == (
        RestartRecord("c", False, False)
    )


# -- applying records (the snapshot rules) ----------------------------------------------------


def _apply(view: _ConfigView, *records: tuple[bytes | None, bytes | None]) -> list[tuple[str, str]]:
    return view.apply_all((r, None) for r in records)


def test_tasks_apply_only_on_commit() -> None:
    view = _ConfigView()
    _apply(view, task_config_record("c", 0, {"t": "0"}), task_config_record("c", 1, {"t": "1"}))
    assert view.snapshot().task_configs == {}
    events = _apply(view, commit_record("c", 2))
    assert events == [("tasks", "c")]
    assert view.snapshot().task_configs == {"c": ({"t": "0"}, {"t": "1"})}


def test_incomplete_commit_keeps_previous_tasks_and_marks_inconsistent() -> None:
    view = _ConfigView()
    _apply(view, *task_configs_records("c", [{"t": "old"}]))
    events = _apply(view, task_config_record("c", 1, {"t": "1"}), commit_record("c", 2))
    assert events == []
    snap = view.snapshot()
    assert snap.task_configs == {"c": ({"t": "old"},)}
    assert snap.inconsistent == {"c"}
    # The buffered configs were dropped by that commit: task 1 alone does not complete a set.
    _apply(view, task_config_record("c", 0, {"t": "0"}), commit_record("c", 2))
    assert view.snapshot().inconsistent == {"c"}
    _apply(view, *task_configs_records("c", [{"t": "a"}, {"t": "b"}]))
    snap = view.snapshot()
    assert snap.task_configs == {"c": ({"t": "a"}, {"t": "b"})}
    assert snap.inconsistent == frozenset()


def test_zero_task_commit_empties_the_set() -> None:
    view = _ConfigView()
    _apply(view, *task_configs_records("c", [{"t": "0"}]))
    _apply(view, commit_record("c", 0))
    assert view.snapshot().task_configs == {"c": ()}


def test_connector_tombstone_drops_tasks_and_restart() -> None:
    view = _ConfigView()
    _apply(
        view,
        target_state_record("c", TargetState.PAUSED),
        connector_config_record("c", {"a": "1"}),
        *task_configs_records("c", [{"t": "0"}]),
        restart_request_record("c", True, True),
        connector_config_record("other", {"b": "2"}),
    )
    snap = view.snapshot()
    assert snap.target_state("c") is TargetState.PAUSED
    assert snap.restart_requests == {"c": (True, True)}
    _apply(view, connector_config_record("c", None), target_state_record("c", None))
    snap = view.snapshot()
    assert snap.connectors == {"other": {"b": "2"}}
    assert snap.task_configs == {}
    assert snap.restart_requests == {}
    assert snap.target_states == {}
    assert snap.target_state("c") is TargetState.STARTED


def test_older_offset_of_a_key_is_skipped() -> None:
    view = _ConfigView()
    new = connector_config_record("c", {"v": "new"})
    old = connector_config_record("c", {"v": "old"})
    assert view.apply_all([(new, 5)]) == [("connector", "c")]
    assert view.apply_all([(old, 3), (new, 5)]) == []  # read back: nothing changes
    assert view.snapshot().connectors == {"c": {"v": "new"}}


def test_heartbeats_stay_out_of_the_snapshot() -> None:
    view = _ConfigView()
    events = _apply(view, heartbeat_record("g", Heartbeat("w", "i", 1)))
    assert events == []
    assert view.snapshot().connectors == {}
    assert view.heartbeats() == {"g": Heartbeat("w", "i", 1)}
    _apply(view, heartbeat_record("g", None))
    assert view.heartbeats() == {}


def test_task_configs_name_kafka_connects_task_class_in_the_topic() -> None:
    """A bundled connector's task config names Kafka Connect's task class in the topic (so a
    Kafka Connect cluster on the same topics can load it) and connectrt's when read back."""
    from connectrt.storage.config_codec import TaskConfigRecord

    config = {"task.class": "connectors.file.source.FileStreamSourceTask", "file": "f"}
    key, value = task_config_record("src", 0, config)
    assert value == (
        b'{"properties":{"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask",'
        b'"file":"f"}}'
    )
    assert decode_config_record(key, value) == TaskConfigRecord("src", 0, config)
    # What Kafka Connect itself wrote reads the same; a class without a counterpart is kept.
    written_by_kafka = (
        b'{"properties":{"file":"f",'
        b'"task.class":"org.apache.kafka.connect.file.FileStreamSinkTask"}}'
    )
    assert decode_config_record(b"task-snk-0", written_by_kafka) == TaskConfigRecord(
        "snk", 0, {"file": "f", "task.class": "connectors.file.sink.FileStreamSinkTask"}
    )
    other = {"task.class": "my.plugin.Task"}
    assert decode_config_record(*task_config_record("x", 0, other)) == TaskConfigRecord(
        "x", 0, other
    )


def test_every_bundled_connector_has_its_kafka_connect_task_class() -> None:
    """The table follows the bundled connectors: each one's task class (by the name the worker
    writes, module and qualified name) has a Kafka Connect counterpart."""
    import importlib

    from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS
    from connectrt.storage.task_classes import KAFKA_CONNECT_TASK_CLASSES

    for path, _java, kind in BUNDLED_PLUGINS:
        if kind not in ("source", "sink"):
            continue
        module, name = path.rsplit(".", 1)
        task = getattr(importlib.import_module(module), name)().task_class()
        assert f"{task.__module__}.{task.__qualname__}" in KAFKA_CONNECT_TASK_CLASSES, path
