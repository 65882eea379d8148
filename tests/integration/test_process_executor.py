"""task.executor=processes with real task processes and the embedded broker.

Each task runs in a child process of the worker. These tests kill, crash and starve those
children and check what the issue asks: the task that died is FAILED with a trace saying how
(exit code, signal, memory limit) and ``errors.task.restart.*`` restarts it; its siblings stay
RUNNING in the same processes and lose nothing; a graceful stop commits exactly what was
produced, so a restart resumes exactly; pause and resume reach the child; and ``kill -9`` of
the worker leaves no task process behind. Every stream is checked record by record
(``"<task>:<seq>:<pid>"`` values of :mod:`tests.plugins.process_faults`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.runtime.errors import ConflictError
from connectrt.runtime.herder.taps import open_tap
from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl
from connectrt.runtime.redaction import Redactor
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.tasks.liveness import StallReport
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STRING = "org.apache.kafka.connect.storage.StringConverter"
SOURCE = "tests.plugins.process_faults.FaultySource"
CHILD_MODULE = "connectrt.runtime.executors.process.child_main"


def _task_state(worker: WorkerHarness, task: int, name: str = "src") -> State | None:
    status = worker.running.status.task(name, task)
    return None if status is None else status.state


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 60.0, every=0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def _records(bootstrap: str, topic: str) -> list[tuple[int, int, int]]:
    """Every record of the topic as ``(task, seq, pid)``, in partition order."""
    out = []
    for rows in read_topic(bootstrap, topic).values():
        for _, value in rows:
            assert value is not None
            task, seq, pid = value.decode().split(":")
            out.append((int(task), int(seq), int(pid)))
    return out


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _committed(h: WorkerHarness, connector: str, task: int) -> int:
    stored = OffsetStorageReaderImpl(h.running.offset_store, connector).offset({"task": task})
    return int(stored["seq"]) if stored else 0


@pytest.fixture
def worker(broker: EmbeddedBroker) -> Iterator[WorkerHarness]:
    """A worker running its tasks in processes; its stop removes every connector."""
    h = WorkerHarness(
        broker.bootstrap_servers,
        {
            "task.executor": "processes",
            "value.converter": STRING,
            "offset.flush.interval.ms": "500",
        },
    )
    h.start()
    try:
        yield h
    finally:
        h.stop()


def _source(h: WorkerHarness, name: str, topic: str, **config: str) -> None:
    h.start_connector(
        name,
        {
            "connector.class": SOURCE,
            "topic": topic,
            "tasks.max": "2",
            **{k.replace("_", "."): v for k, v in config.items()},
        },
    )


def test_tasks_run_in_their_own_processes_and_a_graceful_stop_commits_exactly(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name
):
    bootstrap, topic = broker.bootstrap_servers, unique_name("procs")
    create_topic(bootstrap, topic, partitions=2)
    _source(worker, "src", topic, batch_size="50", batch_interval_ms="20")
    worker.wait_for_tasks("src", State.RUNNING)
    pids = worker.running.task_pids("src")
    assert sorted(pids) == [0, 1] and len(set(pids.values())) == 2
    children = {p.pid: p for p in psutil.Process().children()}
    for pid in pids.values():
        assert pid != os.getpid()
        assert CHILD_MODULE in " ".join(children[pid].cmdline())
    _wait(
        lambda: all(_committed(worker, "src", t) >= 500 for t in (0, 1)),
        "both task processes to commit 500 records through the worker's offset store",
    )

    worker.running.delete_connector("src")  # a graceful stop: each task commits and exits
    _wait(lambda: all(_gone(p) for p in pids.values()), "both task processes to exit")
    first = _records(bootstrap, topic)
    for task in (0, 1):
        seqs = sorted(s for t, s, p in first if t == task)
        assert {p for t, _, p in first if t == task} == {pids[task]}
        # Everything produced is committed, and nothing else: the restart resumes exactly.
        assert seqs == list(range(len(seqs)))
        assert _committed(worker, "src", task) == len(seqs)

    ends = {t: _committed(worker, "src", t) for t in (0, 1)}
    _source(worker, "src", topic, batch_size="50", batch_interval_ms="20")
    _wait(
        lambda: all(_committed(worker, "src", t) >= ends[t] + 200 for t in (0, 1)),
        "the restarted tasks to commit 200 more records each",
    )
    second_pids = worker.running.task_pids("src")
    worker.running.delete_connector("src")
    again = _records(bootstrap, topic)
    for task in (0, 1):
        seqs = sorted(s for t, s, p in again if t == task)
        assert seqs == list(range(len(seqs))), "a duplicate or a gap after the restart"
        resumed = [s for t, s, p in again if t == task and p == second_pids[task]]
        assert min(resumed) == ends[task]


def test_a_sink_task_in_a_process_commits_its_consumer_offsets(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name, tmp_path: Path
):
    bootstrap, topic = broker.bootstrap_servers, unique_name("sink")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, (f"line-{i}" for i in range(300)))
    out = tmp_path / "out.txt"

    def lines() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(out)}
    worker.start_connector("sink", config)
    worker.wait_for_tasks("sink", State.RUNNING)
    pid = worker.running.task_pids("sink")[0]
    _wait(lambda: len(lines()) >= 300, "the sink process to write 300 lines", 90)
    worker.running.delete_connector("sink")  # commits the consumer offsets
    _wait(lambda: _gone(pid), "the sink's task process to exit")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "connect-sink"})
    try:
        committed = consumer.committed([KafkaTopicPartition(topic, 0)], timeout=30)
    finally:
        consumer.close()
    assert committed[0].offset == 300

    produce(bootstrap, topic, (f"line-{i}" for i in range(300, 400)))
    worker.start_connector("sink", config)
    _wait(lambda: len(lines()) >= 400, "the restarted sink to write the 100 new lines", 90)
    assert lines() == [f"line-{i}" for i in range(400)]  # resumed at the commit: no repeats


@pytest.mark.parametrize(
    ("kind", "how"),
    [
        ("exit", "exited with code 13"),
        ("segv", "killed by signal SIGSEGV (11)"),
        ("sigkill", "killed by signal SIGKILL (9)"),
    ],
)
def test_a_task_whose_process_dies_fails_alone_and_is_restarted(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name, tmp_path: Path, kind, how
):
    bootstrap, topic = broker.bootstrap_servers, unique_name(f"die-{kind}")
    create_topic(bootstrap, topic, partitions=2)
    seen: list[Status] = []
    worker.running.status.add_listener(seen.append)
    per_task, fault_at = 1500, 600
    _source(
        worker,
        "src",
        topic,
        records_per_task=str(per_task),
        batch_size="20",
        batch_interval_ms="20",
        fault_task="1",
        fault_at=str(fault_at),
        fault_kind=kind,
        fault_marker=str(tmp_path / "fault-done"),
        errors_task_restart_max_attempts="1",
        errors_task_restart_backoff_ms="500",
    )
    worker.wait_for_tasks("src", State.RUNNING)
    first = worker.running.task_pids("src")

    def failed() -> list[Status]:
        return [s for s in seen if s.connector == "src" and s.state is State.FAILED]

    _wait(lambda: failed(), f"task 1 to be reported FAILED after {kind}")
    # The dead process's pid, as it wrote it just before dying: under load, task 1 can die and
    # be restarted before ``first`` above was read.
    dead = int((tmp_path / "fault-done").read_text())
    trace = failed()[0].trace or ""
    assert failed()[0].task == 1
    assert f"its process (pid {dead}) {how}" in trace
    _wait(
        lambda: (
            worker.running.restart_counts("src") == {1: 1}
            and worker.running.task_pids("src").get(1) not in (None, dead)
        ),
        "errors.task.restart.* to start task 1 in a new process",
    )
    _wait(
        lambda: all(_committed(worker, "src", t) == per_task for t in (0, 1)),
        f"both tasks to commit all {per_task} records",
        90,
    )
    # Task 0 never noticed: one process, RUNNING throughout, every record exactly once.
    assert worker.running.task_pids("src")[0] == first[0]
    assert [s.task for s in failed()] == [1]
    assert worker.running.status.task("src", 0).state is State.RUNNING  # type: ignore[union-attr]
    records = _records(bootstrap, topic)
    assert sorted(s for t, s, p in records if t == 0) == list(range(per_task))
    assert {p for t, _, p in records if t == 0} == {first[0]}
    # Task 1: the new process resumed at the dead one's last commit. Everything before that
    # commit was acknowledged (so it is there, once); duplicates come only from after it.
    second = worker.running.task_pids("src")[1]
    old = [s for t, s, p in records if t == 1 and p == dead]
    new = sorted(s for t, s, p in records if t == 1 and p == second)
    assert len(old) + len(new) == sum(1 for t, _, _ in records if t == 1)
    resumed_at = new[0]
    assert new == list(range(resumed_at, per_task))
    assert set(range(resumed_at)) <= set(old) and all(s < fault_at for s in old)
    counts = Counter(s for t, s, p in records if t == 1)
    assert set(counts) == set(range(per_task))
    assert {s for s, n in counts.items() if n > 1} <= set(range(resumed_at, fault_at))


def test_a_task_process_stuck_in_poll_is_reported_stalled_and_killed_by_the_restart(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name, tmp_path: Path
):
    bootstrap, topic = broker.bootstrap_servers, unique_name("stall")
    create_topic(bootstrap, topic, partitions=2)
    per_task = 1000
    _source(
        worker,
        "src",
        topic,
        records_per_task=str(per_task),
        batch_size="20",
        batch_interval_ms="20",
        fault_task="1",
        fault_at="300",
        fault_kind="hang",
        fault_marker=str(tmp_path / "hung-once"),
        task_stall_timeout_ms="2000",
        task_stall_action="restart",
    )
    worker.wait_for_tasks("src", State.RUNNING)
    first = worker.running.task_pids("src")
    seen: list[StallReport | None] = []  # the report as found: the restart may clear it soon
    _wait(
        lambda: seen.append(worker.running.stall("src", 1)) or seen[-1] is not None,
        "task 1's process to be reported stalled in poll()",
    )
    report = seen[-1]
    assert report is not None and report.call == "poll"
    assert f"task process {first[1]}" in report.stack
    assert "process_faults.py" in report.stack and "_fault" in report.stack
    assert worker.running.stall("src", 0) is None
    # task.stall.action=restart: the stuck child is killed (it ignores stop) and replaced.
    _wait(
        lambda: worker.running.task_pids("src").get(1) not in (None, first[1]),
        "the stalled task to be restarted in a new process",
    )
    _wait(lambda: _gone(first[1]), "the stuck task process to be killed")
    _wait(
        lambda: all(_committed(worker, "src", t) == per_task for t in (0, 1)),
        f"both tasks to commit all {per_task} records",
        90,
    )
    assert worker.running.task_pids("src")[0] == first[0]
    records = _records(bootstrap, topic)
    assert sorted(s for t, s, _ in records if t == 0) == list(range(per_task))
    assert set(s for t, s, _ in records if t == 1) == set(range(per_task))


def test_a_task_over_its_memory_limit_fails_and_its_sibling_runs_on(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name
):
    bootstrap, topic = broker.bootstrap_servers, unique_name("memory")
    create_topic(bootstrap, topic, partitions=2)
    per_task = 1500
    _source(
        worker,
        "src",
        topic,
        records_per_task=str(per_task),
        batch_size="50",
        batch_interval_ms="20",
        fault_task="1",
        fault_at="300",
        fault_kind="leak",
        task_memory_limit_mb="256",
    )
    # Task 0 only: on a loaded machine task 1 may reach its fault (record 300, 0.12 s in) and
    # fail before both were ever seen RUNNING at once.
    _wait(lambda: _task_state(worker, 0) is State.RUNNING, "task 0 RUNNING")
    first = worker.running.task_pids("src")
    worker.wait_for_tasks("src", State.FAILED, count=1)
    failed = worker.running.status.task("src", 1)
    assert failed is not None and failed.state is State.FAILED
    assert "exceeded its memory limit" in (failed.trace or "")
    assert "task.memory.limit.mb=256" in (failed.trace or "")
    assert "MemoryError" in (failed.trace or "")
    _wait(lambda: _committed(worker, "src", 0) == per_task, "task 0 to commit every record")
    assert worker.running.status.task("src", 0).state is State.RUNNING  # type: ignore[union-attr]
    assert worker.running.task_pids("src")[0] == first[0]
    records = _records(bootstrap, topic)
    assert sorted(s for t, s, _ in records if t == 0) == list(range(per_task))
    # The failed task still committed what was acknowledged before it ran out of memory.
    assert sorted(s for t, s, _ in records if t == 1) == list(range(300))
    assert _committed(worker, "src", 1) == 300


def test_pause_and_resume_reach_the_task_process(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name
):
    bootstrap, topic = broker.bootstrap_servers, unique_name("pause")
    create_topic(bootstrap, topic)
    _source(worker, "src", topic, tasks_max="1", batch_size="20", batch_interval_ms="20")
    worker.wait_for_tasks("src", State.RUNNING)
    pid = worker.running.task_pids("src")[0]
    _wait(lambda: _committed(worker, "src", 0) >= 200, "200 records committed")
    # The record inspector cannot see into a task process: a conflict (409) naming why.
    with pytest.raises(
        ConflictError, match=r"task.executor=processes.*needs task.executor=threads"
    ):
        open_tap(worker.running, Redactor(), "src")

    worker.running.set_target_state("src", TargetState.PAUSED)
    worker.wait_for_tasks("src", State.PAUSED)
    readings: list[int] = []

    def settled() -> bool:
        readings.append(len(_records(bootstrap, topic)))
        return len(readings) >= 2 and readings[-1] == readings[-2]

    _wait(settled, "the paused task's topic to stop growing (two reads agree)", every=0.5)
    paused_at = readings[-1]
    threading.Event().wait(2.0)  # a window in which a running task would produce ~2000
    assert len(_records(bootstrap, topic)) == paused_at
    assert worker.running.task_pids("src")[0] == pid  # paused in place, not restarted

    committed = _committed(worker, "src", 0)
    worker.running.set_target_state("src", TargetState.STARTED)
    worker.wait_for_tasks("src", State.RUNNING)
    _wait(
        lambda: _committed(worker, "src", 0) >= committed + 200,
        "the resumed task to commit 200 more records",
    )
    assert worker.running.task_pids("src")[0] == pid
    worker.running.delete_connector("src")
    seqs = sorted(s for _, s, _ in _records(bootstrap, topic))
    assert seqs == list(range(len(seqs)))


def test_a_task_its_process_cannot_build_is_failed_with_the_reason(
    worker: WorkerHarness, broker: EmbeddedBroker, unique_name
):
    topic = unique_name("unbuildable")
    create_topic(broker.bootstrap_servers, topic)
    worker.start_connector(
        "bad",
        {
            "connector.class": "tests.plugins.process_faults.UnimportableTaskSource",
            "topic": topic,
            "tasks.max": "1",
        },
    )
    worker.wait_for_tasks("bad", State.FAILED)
    trace = worker.running.status.task("bad", 0).trace or ""  # type: ignore[union-attr]
    assert "Failed to find any class that implements Task" in trace
    assert "<locals>.LocalTask" in trace
    pid = worker.running.task_pids("bad")[0]
    _wait(lambda: _gone(pid), "the task process to exit after reporting its failure")
    assert worker.running.status.connector("bad").state is State.RUNNING  # type: ignore[union-attr]


def test_memory_limit_is_refused_on_a_worker_without_task_processes(broker: EmbeddedBroker):
    from connectrt.testing.rest import start_rest_worker

    rest = start_rest_worker(broker.bootstrap_servers)  # task.executor=threads
    try:
        config = {
            "connector.class": "FileStreamSource",
            "file": "/dev/null",
            "topic": "unused",
            "task.memory.limit.mb": "512",
        }
        created = rest.http.post("/connectors", json={"name": "limited", "config": config})
        assert created.status_code == 400
        assert "task.executor=threads" in created.json()["message"]
        checked = rest.http.put(
            "/connector-plugins/FileStreamSource/config/validate",
            json={**config, "name": "limited", "task.memory.limit.mb": "64"},
        ).json()
        values = [c["value"] for c in checked["configs"]]
        errors = {v["name"]: v["errors"] for v in values if v["errors"]}
        assert list(errors) == ["task.memory.limit.mb"]
        assert "at least 128" in errors["task.memory.limit.mb"][0]
        assert rest.http.get("/connectors").json() == []
    finally:
        rest.delete_connectors()
        rest.stop()


# -- kill -9 of the worker -----------------------------------------------------------------------


def test_kill_9_of_the_worker_leaves_no_task_process(
    broker: EmbeddedBroker, unique_name, tmp_path: Path
):
    """``connectrt worker`` (Kafka config, status and offsets topics) with its tasks in
    processes: the status topic gets their states from the worker, the REST status their pids;
    then ``kill -9`` of the worker, and no task process is left."""
    bootstrap, topic = broker.bootstrap_servers, unique_name("orphans")
    create_topic(bootstrap, topic, partitions=2)
    port = free_port()
    run = uuid.uuid4().hex[:8]
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"key.converter={STRING}\nvalue.converter={STRING}\n"
        f"group.id=procs-{run}\n"
        f"config.storage.topic=configs-{run}\n"
        f"status.storage.topic=status-{run}\n"
        f"offset.storage.topic=offsets-{run}\n"
        "offset.flush.interval.ms=500\n"
        "task.executor=processes\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "plugin.packages=tests\n"
    )
    log = tmp_path / "worker.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "connectrt.cli", "worker", str(worker_file)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    url = f"http://127.0.0.1:{port}"
    pids: list[int] = []
    try:

        def created() -> bool:
            try:
                response = httpx.post(
                    f"{url}/connectors",
                    json={
                        "name": "src",
                        "config": {
                            "connector.class": SOURCE,
                            "tasks.max": "2",
                            "topic": topic,
                            "batch.size": "20",
                            "batch.interval.ms": "20",
                        },
                    },
                    timeout=10,
                )
            except httpx.HTTPError:
                return False
            if response.status_code == 503:  # still starting (GET /health is 503 too)
                return False
            assert response.status_code in (201, 409), response.text
            return True

        _wait(created, "the worker to accept the connector", 90, every=0.5)

        def running_children() -> bool:
            body = httpx.get(f"{url}/connectors/src/status", timeout=5).json()
            tasks = body.get("tasks", [])
            if len(tasks) != 2 or any(t["state"] != "RUNNING" for t in tasks):
                return False
            assert all(t["worker_id"] == f"127.0.0.1:{port}" for t in tasks)
            pids[:] = [t["pid"] for t in tasks]
            return True

        _wait(running_children, "the worker's two task processes RUNNING (status with pid)")
        children = {p.pid for p in psutil.Process(process.pid).children()}
        assert set(pids) <= children

        def committed() -> list[int]:
            body = httpx.get(f"{url}/connectors/src/offsets", timeout=5).json()
            return [int(o["offset"]["seq"]) for o in body["offsets"]]

        _wait(
            lambda: len(committed()) == 2 and min(committed()) >= 200,
            "both task processes to commit 200 records through the offsets topic",
        )
        statuses = {  # the latest record per key
            k: v for rows in read_topic(bootstrap, f"status-{run}").values() for k, v in rows
        }
        for task in (0, 1):
            value = statuses[f"status-task-src-{task}".encode()]
            assert value is not None and b'"state":"RUNNING"' in value
            assert f'"worker_id":"127.0.0.1:{port}"'.encode() in value
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        _wait(lambda: all(_gone(p) for p in pids), "every task process to die with its worker")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        for pid in pids:  # never leave one behind, even when an assertion failed
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
    readings: list[int] = []

    def stopped() -> bool:
        readings.append(len(_records(bootstrap, topic)))
        return len(readings) >= 2 and readings[-1] == readings[-2]

    _wait(stopped, "the topic to stop growing (two reads agree)", every=1.0)
