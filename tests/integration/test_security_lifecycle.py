"""Management never waits on plugin code (issue 27, attack 4), over real HTTP against a worker.

A plugin author, careless or hostile, writes a source whose task's ``stop()`` blocks for ten
minutes, or a connector whose ``start()``, ``task_configs()`` or ``stop()`` blocks. The worker
must stay manageable: a DELETE answers within ``task.shutdown.graceful.timeout.ms`` plus a few
seconds (the stuck task is abandoned, a task process killed), ``GET /connectors`` answers
as quickly as before while the call stays blocked, ``/health`` never answers 500, a create of a
connector whose ``start()`` blocks answers once ``connector.call.timeout.ms`` has passed with
the connector FAILED and a timeout message, and other connectors are created and deleted
meanwhile as if nothing happened. The plugins are :mod:`tests.plugins.blocking`.

The bounds on a loaded machine: each test first times ``GET /connectors`` the same way with
no plugin call blocked (same worker, same bystander). A read path that waited on the blocked
call (a lock held across it, the event loop blocked) answers in seconds: 2 s for a blocked
stop, 15 s for a blocked start. So no read may take a second, and the reads' median must stay
under 100 ms, or five times the baseline's median when other jobs slow the machine. The p99
itself is not bounded here: with 50 reads it is the slowest one, and one CI run measured 229 ms
against 6.9 ms unblocked, a busy machine's pause rather than a wait on the plugin (timed
figures belong in ``bench/``).
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import psutil
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.rest import RestWorker, rest_worker_props, start_rest_worker, wait_for
from tests.plugins import blocking

pytestmark = pytest.mark.integration

GRACEFUL_MS = 2000  # task.shutdown.graceful.timeout.ms of the workers here
CALL_MS = 15000  # connector.call.timeout.ms here: longer than another connector's changes
SLACK_S = 5.0  # "a few seconds" on top of a timeout, for a busy machine
MEDIAN_LIMIT_S = 0.1  # GET /connectors while a plugin blocks: the 100 ms
LOADED_FACTOR = 5.0  # on a loaded machine: the bound is this times the unblocked median
STALL_S = 1.0  # half the shortest block here (GRACEFUL_MS): a request that waited on it
SAMPLES = 200
SOURCE = "tests.plugins.blocking.BlockingSource"


def _props(broker: EmbeddedBroker, **extra: str) -> dict[str, str]:
    return rest_worker_props(
        broker.bootstrap_servers,
        **{
            "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
            "connector.call.timeout.ms": str(CALL_MS),
            **extra,
        },
    )


@pytest.fixture(scope="module")
def module_worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    running = start_rest_worker(broker.bootstrap_servers, _props(broker))
    try:
        yield running
    finally:
        blocking.RELEASE.set()
        running.stop()


@pytest.fixture
def worker(module_worker: RestWorker) -> Iterator[RestWorker]:
    """The module's worker (tasks as threads); every connector a test created is deleted
    after it and every blocked call released."""
    blocking.RELEASE.clear()
    try:
        yield module_worker
    finally:
        blocking.RELEASE.set()
        module_worker.delete_connectors()


def _path(name: str) -> str:
    return f"/connectors/{quote(name, safe='')}"


def _source(name: str, store: str, **extra: str) -> dict[str, str]:
    return {
        "name": name,
        "connector.class": SOURCE,
        "store.id": store,
        "tasks.max": "1",
        **extra,
    }


def _create(worker: RestWorker, config: dict[str, str]) -> httpx.Response:
    response = worker.http.post("/connectors", json={"name": config["name"], "config": config})
    assert response.status_code == 201, response.text
    return response


def _status(worker: RestWorker, name: str) -> dict[str, Any]:
    response = worker.http.get(f"{_path(name)}/status")
    return response.json() if response.status_code == 200 else {}


def _task_running(worker: RestWorker, name: str) -> bool:
    tasks = _status(worker, name).get("tasks", [])
    return bool(tasks) and tasks[0]["state"] == "RUNNING"


@dataclass
class _Timed:
    """One request sent on a thread of its own: its response (or error) and how long it
    took. ``done`` is set when it answered."""

    send: Callable[[httpx.Client], httpx.Response]
    url: str
    response: httpx.Response | None = None
    error: BaseException | None = None
    seconds: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> _Timed:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        try:
            with httpx.Client(base_url=self.url, timeout=600) as client:
                self.response = self.send(client)
        except BaseException as e:  # reported by result()
            self.error = e
        finally:
            self.seconds = time.monotonic() - started
            self.done.set()

    def result(self, timeout: float = 600) -> httpx.Response:
        assert self.done.wait(timeout), f"no answer after {timeout:g} s"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


@dataclass
class _Reads:
    """What the read entry points answered while a plugin call was blocked."""

    connectors_s: list[float]
    health: list[int]
    others: dict[str, list[int]]

    @property
    def median_s(self) -> float:
        return statistics.median(self.connectors_s)

    @property
    def p99_s(self) -> float:
        ordered = sorted(self.connectors_s)
        return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]  # nearest rank


def _sample_reads(worker: RestWorker, bystander: str, samples: int = SAMPLES) -> _Reads:
    """``samples`` timed ``GET /connectors``; every tenth sample also ``/health``, ``/metrics``,
    the console's ``/ui`` and a bystander's status (each must answer, within 30 s)."""
    reads = _Reads([], [], {"metrics": [], "ui": [], "status": []})
    with httpx.Client(base_url=worker.url, timeout=30) as client:
        client.get("/connectors")  # the connection, before timing
        for i in range(samples):
            started = time.perf_counter()
            response = client.get("/connectors")
            reads.connectors_s.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
            if i % 10 == 0:
                reads.health.append(client.get("/health").status_code)
                reads.others["metrics"].append(client.get("/metrics").status_code)
                reads.others["ui"].append(client.get("/ui").status_code)
                reads.others["status"].append(client.get(f"{_path(bystander)}/status").status_code)
    return reads


def _assert_reads_unaffected(reads: _Reads, baseline: _Reads) -> None:
    """``reads`` (taken while a plugin call was blocked) answered, none of them waited on the
    blocked call, and they were as quick as ``baseline`` (the same reads with no call blocked,
    just before).

    A request that queued behind the blocked call would take as long as the call blocks (2 s
    for a stop, 15 s for a start), so no ``GET /connectors`` may take ``STALL_S``; and their
    median stays under the issue's 100 ms, or five times the baseline's median when the
    machine's load made that slow. A single slow answer from a busy machine (a p99 of 229 ms
    over 50 reads, against 6.9 ms unblocked, in one CI run) is not a blocked call: the p99 is
    in the failure message, not the bound."""
    slowest = max(reads.connectors_s)
    limit = max(MEDIAN_LIMIT_S, LOADED_FACTOR * baseline.median_s)
    figures = (
        f"GET /connectors over {len(reads.connectors_s)} requests while a plugin call was "
        f"blocked: median {reads.median_s * 1000:.1f} ms, p99 {reads.p99_s * 1000:.1f} ms, "
        f"slowest {slowest:.3f} s; with no call blocked just before: median "
        f"{baseline.median_s * 1000:.1f} ms, p99 {baseline.p99_s * 1000:.1f} ms"
    )
    assert slowest < STALL_S, f"a request waited on the blocked call: {figures}"
    assert reads.median_s < limit, f"median over {limit * 1000:.0f} ms: {figures}"
    assert 500 not in reads.health, f"/health answered {reads.health}"
    assert set(reads.health) == {200}, f"/health answered {reads.health}"
    for route, codes in reads.others.items():
        assert set(codes) == {200}, f"{route} answered {codes}"


def _manage_another(worker: RestWorker, name: str) -> float:
    """Create a connector, wait until its task runs, delete it; returns the seconds taken by
    the create and the delete (a client that gives up after 30 s each)."""
    config = _source(name, uuid.uuid4().hex)
    with httpx.Client(base_url=worker.url, timeout=30) as client:
        started = time.monotonic()
        created = client.post("/connectors", json={"name": name, "config": config})
        took = time.monotonic() - started
        assert created.status_code == 201, created.text
        wait_for(lambda: _task_running(worker, name), 60, f"the task of {name} to run")
        started = time.monotonic()
        deleted = client.delete(_path(name))
        took += time.monotonic() - started
        assert deleted.status_code == 204, deleted.text
    assert name not in worker.http.get("/connectors").json()
    return took


def test_a_task_whose_stop_blocks_is_abandoned_and_holds_up_no_management(
    worker: RestWorker, unique_name: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="connectrt.runtime.worker.connector")
    stuck, bystander = unique_name("stuck-stop"), unique_name("bystander")
    store = uuid.uuid4().hex
    _create(worker, _source(bystander, uuid.uuid4().hex))
    _create(worker, _source(stuck, store, **{"task.block.in": "stop"}))
    wait_for(lambda: _task_running(worker, stuck), 60, "the stuck source's task to run")
    baseline = _sample_reads(worker, bystander)

    delete = _Timed(lambda c: c.delete(_path(stuck)), worker.url).start()
    wait_for(lambda: blocking.entered(store, "task.stop"), 60, "the task's stop() to block")
    reads = _sample_reads(worker, bystander)
    other = _manage_another(worker, unique_name("meanwhile"))

    assert delete.result().status_code == 204, delete.result().text
    assert delete.seconds < GRACEFUL_MS / 1000 + SLACK_S, f"DELETE took {delete.seconds:.1f} s"
    assert blocking.entered(store, "task.stop") and not blocking.RELEASE.is_set()
    _assert_reads_unaffected(reads, baseline)
    assert other < 2 * SLACK_S, f"another connector's create + delete took {other:.1f} s"
    assert stuck not in worker.http.get("/connectors").json()
    assert _status(worker, bystander)["tasks"][0]["state"] == "RUNNING"
    assert any(
        "Graceful stop of task" in r.getMessage() and stuck in r.getMessage()
        for r in caplog.records
    ), "the abandoned task was not reported"
    # The name is free again at once: the abandoned thread reports nothing over a new task.
    _create(worker, _source(stuck, uuid.uuid4().hex))
    wait_for(lambda: _task_running(worker, stuck), 60, "the new task of the same name to run")


def test_a_task_restart_with_a_blocked_stop_answers_within_the_graceful_timeout(
    worker: RestWorker, unique_name: Any
) -> None:
    name, store = unique_name("stuck-restart"), uuid.uuid4().hex
    _create(worker, _source(name, store, **{"task.block.in": "stop"}))
    wait_for(lambda: _task_running(worker, name), 60, "the task to run")
    started = time.monotonic()
    restarted = worker.http.post(f"{_path(name)}/tasks/0/restart")
    took = time.monotonic() - started
    assert restarted.status_code == 204, restarted.text
    assert took < GRACEFUL_MS / 1000 + SLACK_S, f"the task restart took {took:.1f} s"
    assert blocking.entered(store, "task.stop")
    wait_for(lambda: _task_running(worker, name), 60, "the restarted task to run")


@pytest.mark.parametrize("call", ["start", "task_configs"])
def test_a_connector_whose_start_blocks_fails_after_the_call_timeout_and_blocks_nobody(
    worker: RestWorker, unique_name: Any, call: str
) -> None:
    stuck, bystander = unique_name(f"stuck-{call}"), unique_name("bystander")
    store = uuid.uuid4().hex
    _create(worker, _source(bystander, uuid.uuid4().hex))
    wait_for(lambda: _task_running(worker, bystander), 60, "the bystander's task to run")
    baseline = _sample_reads(worker, bystander, samples=50)
    config = _source(stuck, store, **{"block.in": call})
    create = _Timed(
        lambda c: c.post("/connectors", json={"name": stuck, "config": config}), worker.url
    ).start()
    wait_for(lambda: blocking.entered(store, call), 60, f"the connector's {call}() to block")
    other = _manage_another(worker, unique_name("meanwhile"))
    finished_first = not create.done.is_set()
    reads = _sample_reads(worker, bystander, samples=50)

    assert create.result().status_code == 201, create.result().text
    assert create.seconds < CALL_MS / 1000 + SLACK_S, f"the create took {create.seconds:.1f} s"
    assert finished_first, (
        f"another connector's create + delete ({other:.1f} s) waited for the blocked {call}()"
    )
    _assert_reads_unaffected(reads, baseline)
    status = _status(worker, stuck)
    assert status["connector"]["state"] == "FAILED", status
    trace = status["connector"]["trace"]
    assert f"{call}() of connector {stuck} did not return within {CALL_MS} ms" in trace, trace
    assert "connector.call.timeout.ms" in trace, trace
    assert status["tasks"] == [], status
    started = time.monotonic()
    deleted = worker.http.delete(_path(stuck))
    assert deleted.status_code == 204, deleted.text
    assert time.monotonic() - started < GRACEFUL_MS / 1000 + SLACK_S


def test_a_connector_whose_stop_blocks_is_deleted_within_the_graceful_timeout(
    worker: RestWorker, unique_name: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="connectrt.runtime.worker.connector")
    stuck, bystander = unique_name("stuck-conn-stop"), unique_name("bystander")
    store = uuid.uuid4().hex
    _create(worker, _source(bystander, uuid.uuid4().hex))
    _create(worker, _source(stuck, store, **{"block.in": "stop"}))
    wait_for(lambda: _task_running(worker, stuck), 60, "the task to run")
    baseline = _sample_reads(worker, bystander, samples=50)

    delete = _Timed(lambda c: c.delete(_path(stuck)), worker.url).start()
    wait_for(lambda: blocking.entered(store, "stop"), 60, "the connector's stop() to block")
    reads = _sample_reads(worker, bystander, samples=50)
    other = _manage_another(worker, unique_name("meanwhile"))

    assert delete.result().status_code == 204, delete.result().text
    assert delete.seconds < 2 * GRACEFUL_MS / 1000 + SLACK_S, f"DELETE took {delete.seconds:.1f} s"
    _assert_reads_unaffected(reads, baseline)
    assert other < 2 * SLACK_S, f"another connector's create + delete took {other:.1f} s"
    assert stuck not in worker.http.get("/connectors").json()
    assert any(
        f"Connector '{stuck}' failed to properly shut down" in r.getMessage()
        for r in caplog.records
    ), "the abandoned connector was not reported"


def test_a_task_process_whose_stop_blocks_is_killed_within_the_graceful_timeout(
    broker: EmbeddedBroker, unique_name: Any
) -> None:
    """task.executor=processes: the task blocks in ``poll()`` and in ``stop()``, so only the
    worker's kill ends its process."""
    running = start_rest_worker(
        broker.bootstrap_servers, _props(broker, **{"task.executor": "processes"})
    )
    try:
        stuck, bystander = unique_name("stuck-process"), unique_name("bystander")
        _create(running, _source(bystander, uuid.uuid4().hex))
        _create(running, _source(stuck, uuid.uuid4().hex, **{"task.block.in": "stop,poll"}))
        wait_for(lambda: _task_running(running, stuck), 120, "the task process to run")
        pid = _status(running, stuck)["tasks"][0]["pid"]
        process = psutil.Process(pid)
        baseline = _sample_reads(running, bystander)

        delete = _Timed(lambda c: c.delete(_path(stuck)), running.url).start()
        reads = _sample_reads(running, bystander)

        assert delete.result().status_code == 204, delete.result().text
        assert delete.seconds < GRACEFUL_MS / 1000 + SLACK_S, f"DELETE took {delete.seconds:.1f} s"
        _assert_reads_unaffected(reads, baseline)
        wait_for(
            lambda: not process.is_running() or process.status() == psutil.STATUS_ZOMBIE,
            30,
            f"task process {pid} to end",
        )
        assert stuck not in running.http.get("/connectors").json()
        assert _status(running, bystander)["tasks"][0]["state"] == "RUNNING"
    finally:
        try:
            running.delete_connectors()
        finally:
            running.stop()
