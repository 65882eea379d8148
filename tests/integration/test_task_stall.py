"""Stuck-task detection with the real worker, REST server and embedded broker.

A task stuck inside one call (``put``, ``poll``) longer than ``task.stall.timeout.ms`` keeps its
state but its REST status gains ``"stalled": true``, the call's name and the task thread's
stack, and ``connectrt_task_stalled`` is 1 in /metrics; ``task.stall.action=restart`` restarts
it. Idle tasks (nothing to consume, ``poll()`` returning None) are never stalled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins import hanging

pytestmark = pytest.mark.integration

TIMEOUT_MS = 2000


@pytest.fixture(scope="module")
def module_worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    running = start_rest_worker(broker.bootstrap_servers)
    try:
        yield running
    finally:
        hanging.RELEASE.set()
        running.stop()


@pytest.fixture
def worker(module_worker: RestWorker) -> Iterator[RestWorker]:
    """The module's worker; every connector a test created is deleted after it, and every
    blocked call released."""
    hanging.RELEASE.clear()
    try:
        yield module_worker
    finally:
        hanging.RELEASE.set()
        module_worker.delete_connectors()


def _create(worker: RestWorker, name: str, config: dict[str, str]) -> None:
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code in (200, 201), response.text


def _tasks(worker: RestWorker, name: str) -> dict[int, dict[str, Any]]:
    response = worker.http.get(f"/connectors/{quote(name, safe='')}/status")
    if response.status_code != 200:
        return {}
    return {t["id"]: t for t in response.json()["tasks"]}


def _stalled_gauge(worker: RestWorker, name: str, task: int) -> float | None:
    return scrape(worker.http).value("connectrt_task_stalled", connector=name, task=task)


def _sink(name: str, topic: str, store: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "tests.plugins.hanging.HangingSink",
        "name": name,
        "topics": topic,
        "store.id": store,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "task.stall.timeout.ms": str(TIMEOUT_MS),
        **extra,
    }


def test_a_sink_stuck_in_put_is_stalled_with_its_stack_and_clears_when_put_returns(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    name, topic, store = unique_name("stall-sink"), unique_name("topic"), unique_name("store")
    create_topic(broker.bootstrap_servers, topic, partitions=2)
    _create(worker, name, _sink(name, topic, store, **{"tasks.max": "2", "hang.task": "0"}))
    wait_for(
        lambda: [t.get("state") for t in _tasks(worker, name).values()] == ["RUNNING"] * 2,
        60,
        "both sink tasks RUNNING",
    )
    # RUNNING is not assigned: on Apache Kafka the first task may hold both partitions until the
    # group rebalances, and once it is stuck in put() it cannot rejoin, so the sibling would get
    # nothing. Produce only once each task holds one partition.
    wait_for(
        lambda: all(len(hanging.ASSIGNED.get((store, i), ())) == 1 for i in ("0", "1")),
        120,
        "the group to give each sink task one partition",
    )
    produce(broker.bootstrap_servers, topic, (f"v{i}" for i in range(200)), key=lambda i: b"%d" % i)

    produced_at = time.monotonic()
    wait_for(lambda: _tasks(worker, name)[0].get("stalled"), 60, "task 0 reported stalled")
    print(f"stall reported {time.monotonic() - produced_at:.2f} s after the records were produced")
    tasks = _tasks(worker, name)
    stuck, sibling = tasks[0], tasks[1]
    assert stuck["state"] == "RUNNING"  # the Kafka Connect state is kept
    assert stuck["stalled_call"] == "put"
    assert "put() for more than" in stuck["trace"]
    assert "hanging.py" in stuck["trace"] and "in put" in stuck["trace"]  # the live stack
    assert sibling["state"] == "RUNNING" and "stalled" not in sibling
    wait_for(lambda: hanging.PUT[store] > 0, 60, "the sibling task to accept its records")
    assert _stalled_gauge(worker, name, 0) == 1
    assert _stalled_gauge(worker, name, 1) == 0

    hanging.RELEASE.set()  # put() returns: the flag clears, the state never changed
    wait_for(lambda: "stalled" not in _tasks(worker, name)[0], 60, "task 0's stall to clear")
    assert _tasks(worker, name)[0]["state"] == "RUNNING"
    wait_for(lambda: _stalled_gauge(worker, name, 0) == 0, 60, "the stalled gauge back to 0")
    wait_for(lambda: hanging.PUT[store] == 200, 60, "all 200 records put once released")


def test_a_stalled_task_with_action_restart_is_restarted(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    name, topic, store = unique_name("stall-restart"), unique_name("topic"), unique_name("store")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    config = _sink(name, topic, store, **{"hang.task": "0", "task.stall.action": "restart"})
    _create(worker, name, config)
    wait_for(lambda: _tasks(worker, name).get(0, {}).get("state") == "RUNNING", 60, "RUNNING")
    assert hanging.STARTS[store] == 1
    produce(broker.bootstrap_servers, topic, ["stuck"])
    wait_for(lambda: hanging.STARTS[store] >= 2, 60, "the stalled task to be started again")
    wait_for(lambda: _tasks(worker, name).get(0, {}).get("state") == "RUNNING", 60, "RUNNING again")

    # Released, the abandoned threads finish, and none reports over the task now running.
    hanging.RELEASE.set()
    wait_for(lambda: hanging.PUT[store] >= 1, 60, "the record put once released")
    wait_for(
        lambda: [t.name for t in threading.enumerate()].count(f"task-{name}-0") == 1,
        60,
        "the abandoned task threads to end",
    )
    task = _tasks(worker, name)[0]
    assert task["state"] == "RUNNING" and "stalled" not in task, task


def test_a_source_stuck_in_poll_is_stalled(worker: RestWorker, unique_name):
    name, store = unique_name("stall-source"), unique_name("store")
    config = {
        "connector.class": "tests.plugins.hanging.HangingSource",
        "name": name,
        "topic": unique_name("topic"),
        "store.id": store,
        "hang": "true",
        "task.stall.timeout.ms": str(TIMEOUT_MS),
    }
    _create(worker, name, config)
    wait_for(lambda: _tasks(worker, name).get(0, {}).get("stalled"), 60, "the source stalled")
    task = _tasks(worker, name)[0]
    assert task["state"] == "RUNNING"
    assert task["stalled_call"] == "poll"
    assert "in poll" in task["trace"]


def test_idle_tasks_are_not_stalled(worker: RestWorker, broker: EmbeddedBroker, unique_name):
    """A sink with nothing to consume and a source whose poll() returns None, watched for three
    times their timeout: never stalled."""
    sink, source, topic = unique_name("idle-sink"), unique_name("idle-source"), unique_name("t")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    _create(
        worker, sink, _sink(sink, topic, unique_name("store"), **{"task.stall.timeout.ms": "500"})
    )
    source_config = {
        "connector.class": "tests.plugins.hanging.HangingSource",
        "name": source,
        "topic": topic,
        "store.id": unique_name("store"),
        "task.stall.timeout.ms": "500",
    }
    _create(worker, source, source_config)
    for name in (sink, source):
        wait_for(
            lambda n=name: _tasks(worker, n).get(0, {}).get("state") == "RUNNING", 60, "RUNNING"
        )
    # Watched for three timeouts and more, with at least 10 readings (each reading is four HTTP
    # calls: on a loaded machine 3.5 s held only 9 of them).
    watch_until = time.monotonic() + 3 * 0.5 + 2.0
    readings = 0
    while time.monotonic() < watch_until or readings < 10:
        for name in (sink, source):
            task = _tasks(worker, name)[0]
            assert task["state"] == "RUNNING" and "stalled" not in task, task
            assert _stalled_gauge(worker, name, 0) == 0
        readings += 1
        time.sleep(0.1)


def test_bad_stall_settings_are_refused_per_field(worker: RestWorker, unique_name):
    name = unique_name("bad-stall")
    config = {
        "connector.class": "tests.plugins.hanging.HangingSource",
        "name": name,
        "store.id": "x",
        "task.stall.timeout.ms": "-5",
        "task.stall.action": "explode",
        "task.rate.limit.records.per.sec": "-1",
        "task.rate.limit.bytes.per.sec": "fast",
    }
    response = worker.http.put(
        "/connector-plugins/tests.plugins.hanging.HangingSource/config/validate", json=config
    )
    assert response.status_code == 200, response.text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in response.json()["configs"]}
    assert errors["task.stall.timeout.ms"] == ["Value must be at least 0"]
    assert errors["task.stall.action"] == ["String must be one of: log, restart"]
    assert errors["task.rate.limit.records.per.sec"] == ["Value must be at least 0"]
    assert errors["task.rate.limit.bytes.per.sec"] != []
    created = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert created.status_code == 400, created.text
    assert "task.stall.action" in created.text
    assert name not in worker.http.get("/connectors").json()
