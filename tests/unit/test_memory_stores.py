from __future__ import annotations

import re
import threading
import time

import pytest

from connectrt.errors import ConnectError
from connectrt.runtime.status import State, Status, TargetState
from connectrt.storage.config_codec import Heartbeat
from connectrt.storage.config_store import ConfigSnapshot, ConfigStore, MemoryConfigStore
from connectrt.storage.status_store import MemoryStatusStore, StatusStore
from connectrt.storage.worker_lock import SingleWorkerGuard

# -- MemoryConfigStore ------------------------------------------------------------------------


def test_memory_config_store_implements_protocol() -> None:
    assert isinstance(MemoryConfigStore(), ConfigStore)


def test_config_lifecycle() -> None:
    store = MemoryConfigStore()
    store.start()
    assert store.snapshot() == ConfigSnapshot()
    store.put_connector_config("c-1", {"name": "c-1", "x": "1"}, TargetState.STOPPED)
    store.put_connector_config("c-2", {"name": "c-2"})
    store.put_task_configs("c-1", [{"t": "0"}, {"t": "1"}])
    store.put_restart_request("c-2", include_tasks=True, only_failed=False)
    snap = store.snapshot()
    assert snap.connectors == {"c-1": {"name": "c-1", "x": "1"}, "c-2": {"name": "c-2"}}
    assert snap.target_state("c-1") is TargetState.STOPPED
    assert snap.target_state("c-2") is TargetState.STARTED
    assert snap.task_configs == {"c-1": ({"t": "0"}, {"t": "1"})}
    assert snap.restart_requests == {"c-2": (True, False)}

    store.put_target_state("c-1", TargetState.PAUSED)
    store.put_task_configs("c-1", [])
    store.remove_connector("c-2")
    later = store.snapshot()
    assert later.target_state("c-1") is TargetState.PAUSED
    assert later.task_configs == {"c-1": ()}
    assert list(later.connectors) == ["c-1"]
    assert later.restart_requests == {}
    # An earlier snapshot is an immutable point-in-time view.
    assert snap.target_state("c-1") is TargetState.STOPPED
    assert "c-2" in snap.connectors
    with pytest.raises(TypeError):
        snap.connectors["c-3"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        snap.connectors["c-1"]["x"] = "2"  # type: ignore[index]
    store.stop()


def test_config_is_copied_on_write() -> None:
    store = MemoryConfigStore()
    config = {"a": "1"}
    store.put_connector_config("c", config)
    config["a"] = "changed"
    assert store.snapshot().connectors["c"] == {"a": "1"}


def test_memory_config_store_never_calls_listeners() -> None:
    store = MemoryConfigStore()
    events: list[tuple[str, str]] = []
    store.add_listener(lambda kind, name: events.append((kind, name)))
    store.put_connector_config("c", {})
    store.refresh()
    assert events == []


def test_concurrent_config_writes() -> None:
    store = MemoryConfigStore()

    def work(n: int) -> None:
        for i in range(50):
            store.put_connector_config(f"c{n}-{i}", {"i": str(i)})
            store.put_task_configs(f"c{n}-{i}", [{"t": str(t)} for t in range(i % 4)])
            if i % 2:
                store.remove_connector(f"c{n}-{i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = store.snapshot()
    assert len(snap.connectors) == 100
    assert set(snap.task_configs) == set(snap.connectors)
    assert all(len(snap.task_configs[f"c0-{i}"]) == i % 4 for i in range(0, 50, 2))


# -- MemoryStatusStore ------------------------------------------------------------------------


def test_memory_status_store() -> None:
    store = MemoryStatusStore()
    assert isinstance(store, StatusStore)
    store.start()
    store.put(Status("b", None, State.RUNNING, "w"))
    store.put(Status("a", None, State.FAILED, "w", "trace"))
    for task in (10, 2, 0):
        store.put(Status("a", task, State.RUNNING, "w"))
    assert store.connectors() == ["a", "b"]
    assert [s.task for s in store.tasks("a")] == [0, 2, 10]
    status = store.connector("a")
    assert status is not None and status.trace == "trace"
    store.put(Status("a", 2, State.DESTROYED, "w"))
    store.put(Status("b", None, State.DESTROYED, "w"))
    assert [s.task for s in store.tasks("a")] == [0, 10]
    assert store.connector("b") is None
    assert store.connectors() == ["a"]
    assert store.tasks("missing") == []

    store.put_topic("a", "t2", 0, 1)
    store.put_topic("a", "t1", 1, 2)
    store.put_topic("a", "t1", 0, 3)
    store.put_topic("b", "t9", 0, 1)
    assert store.topics("a") == ["t1", "t2"]
    store.remove_topics("a")
    assert store.topics("a") == []
    assert store.topics("b") == ["t9"]
    store.flush(1.0)
    store.stop()


# -- SingleWorkerGuard (on the memory status store) -------------------------------------------


def test_guard_refuses_a_second_live_worker_and_allows_after_stop() -> None:
    store = MemoryStatusStore()
    first = SingleWorkerGuard(store, "g", "host:8083", interval_s=0.1)
    first.acquire()
    try:
        assert first.running
        second = SingleWorkerGuard(store, "g", "host:8084", interval_s=0.1)
        message = (
            f"Another connectrt worker (host:8083, instance {first.instance}) is already "
            "running on status topic (memory) (group.id g); a second worker on the same "
            "topics would corrupt them. Stop it first, or use a different "
            "group.id / config.storage.topic / status.storage.topic."
        )
        with pytest.raises(ConnectError, match=re.escape(message)):
            second.acquire()
        assert not second.running
        assert store.heartbeats()["g"].instance == first.instance
        # Another group on the same topic is independent.
        other_group = SingleWorkerGuard(store, "g2", "host:8085", interval_s=0.1)
        other_group.acquire()
        other_group.stop()
    finally:
        first.stop()
    assert not first.running
    after_stop = store.heartbeats()["g"]
    third = SingleWorkerGuard(store, "g", "host:8086", interval_s=0.1)
    started = time.monotonic()
    third.acquire()
    try:
        assert time.monotonic() - started >= 0.3  # waited 3 intervals to see the beat stop
        taken = store.heartbeats()["g"]
        assert taken.instance == third.instance
        assert taken.timestamp_ms > after_stop.timestamp_ms
        # The new holder goes on beating (every 0.1 s; 10 s allowed for a busy machine).
        deadline = time.monotonic() + 10
        while store.heartbeats()["g"].timestamp_ms <= taken.timestamp_ms:
            assert time.monotonic() < deadline, "no heartbeat from the new holder in 10 s"
            time.sleep(0.02)
    finally:
        third.stop()


def test_guard_skips_the_wait_for_an_old_heartbeat() -> None:
    store = MemoryStatusStore()
    store.write_heartbeat("g", Heartbeat("dead:1", "old-instance", 1_000))
    guard = SingleWorkerGuard(store, "g", "w", interval_s=5.0)
    started = time.monotonic()
    guard.acquire()
    assert time.monotonic() - started < 1.0
    assert store.heartbeats()["g"].instance == guard.instance
    guard.stop()


def test_guard_stop_writes_nothing_more() -> None:
    store = MemoryStatusStore()
    guard = SingleWorkerGuard(store, "g", "w", interval_s=0.02)
    guard.acquire()
    time.sleep(0.1)  # a few beats before the stop
    guard.stop()
    last = store.heartbeats()["g"]
    time.sleep(0.1)  # not a synchronisation: an observation window of 5 intervals
    assert store.heartbeats()["g"] == last
    with pytest.raises(ConnectError, match="called twice"):
        guard.acquire()


def test_guard_removes_an_old_heartbeat_of_the_config_topic() -> None:
    """A heartbeat an earlier version left in the config topic does not stop the worker; once
    the guard holds the cluster it removes that record, and its own beats go to the status
    store only."""
    status, configs = MemoryStatusStore(), MemoryConfigStore()
    configs.put_legacy_heartbeat("g", Heartbeat("old:8083", "old-instance", 1_000))
    configs.put_legacy_heartbeat("other", Heartbeat("old:8084", "other-instance", 1_000))
    guard = SingleWorkerGuard(status, "g", "w", interval_s=5.0, legacy=configs)
    guard.acquire()
    try:
        assert status.heartbeats()["g"].instance == guard.instance
        assert configs.heartbeats() == {"other": Heartbeat("old:8084", "other-instance", 1_000)}
    finally:
        guard.stop()


def test_guard_refuses_to_start_next_to_a_live_worker_of_an_earlier_version() -> None:
    """An earlier version's worker, still beating into the config topic, keeps the cluster."""
    status, configs = MemoryStatusStore(), MemoryConfigStore()
    stop = threading.Event()

    def old_worker() -> None:
        while not stop.is_set():
            configs.put_legacy_heartbeat("g", Heartbeat("old:8083", "old", int(time.time() * 1000)))
            stop.wait(0.05)

    beating = threading.Thread(target=old_worker, daemon=True)
    beating.start()
    try:
        guard = SingleWorkerGuard(status, "g", "w", interval_s=0.1, legacy=configs)
        with pytest.raises(ConnectError, match=re.escape("(old:8083, instance old)")):
            guard.acquire()
        assert not guard.running
    finally:
        stop.set()
        beating.join(10)
