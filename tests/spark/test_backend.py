"""The Spark executor backend end to end: the driver (herder, REST, Kafka-topic stores) in this
process, connector tasks as long-running Spark tasks in Spark's Python workers (``local[N,F]``
from the ``spark`` fixture), real broker, real HTTP.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.process.assembly import WorkerProcess
from connectrt.process.spark_worker import build_spark_worker
from connectrt.runtime.tasks.runner import TaskId
from connectrt.spark.backend import SparkTaskExecutor
from connectrt.storage.offset_codec import decode_value, encode_key
from connectrt.storage.status_codec import TaskStatusRecord, decode_status_record
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import rest_worker_props, wait_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"
SOURCE = "tests.plugins.sequence.SequenceSource"
SINK = "tests.plugins.sequence.SequenceFileSink"


@dataclass
class SparkWorker:
    process: WorkerProcess
    executor: SparkTaskExecutor
    http: httpx.Client
    props: dict[str, str]
    bootstrap: str

    def status(self, name: str) -> dict[str, Any]:
        response = self.http.get(f"/connectors/{name}/status")
        return response.json() if response.status_code == 200 else {}

    def tasks_in(self, name: str, state: str, count: int) -> bool:
        tasks = self.status(name).get("tasks", [])
        return len(tasks) == count and all(t["state"] == state for t in tasks)

    def delete(self, name: str) -> None:
        assert self.http.delete(f"/connectors/{name}").status_code == 204


COOPERATIVE_STOP = {
    # A stop signal reaches a Spark task through a topic and its Python worker: on a machine
    # at a load of 10 and more that took longer than the 5 s default of the test workers, and
    # the cooperative stops these tests assert became last-resort cancels.
    "task.shutdown.graceful.timeout.ms": "15000",
}
"""For the workers of the tests that assert a stop without a cancel (here and in
``test_connect_backend.py``); the stall tests keep the 5 s, being about the cancel."""


@contextmanager
def running_spark_worker(
    broker: EmbeddedBroker, spark: SparkSession, **extra: str
) -> Iterator[SparkWorker]:
    """A Spark driver worker (herder, REST, Kafka-topic stores) on ``spark``, stopped after.
    ``extra`` worker properties are added to the test defaults."""
    props = rest_worker_props(
        broker.bootstrap_servers, **{"offset.flush.interval.ms": "300", **extra}
    )
    process, executor = build_spark_worker(props, spark)
    stop = threading.Event()
    thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
    thread.start()
    try:
        wait_for(lambda: process.herder.ready, 90, "the Spark driver's herder")
        with httpx.Client(base_url=process.rest.url, timeout=60) as http:
            yield SparkWorker(process, executor, http, props, broker.bootstrap_servers)
    finally:
        stop.set()
        thread.join(60)


def remove_connectors(worker: SparkWorker) -> None:
    """Delete every connector and wait until every Spark slot is released."""
    for name in worker.http.get("/connectors").json():
        response = worker.http.delete(f"/connectors/{name}")
        assert response.status_code in (204, 404), response.text
    wait_for(lambda: worker.executor.slots.held() == 0, 60, "every Spark slot released")


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark: SparkSession) -> Iterator[SparkWorker]:
    with running_spark_worker(broker, spark, **COOPERATIVE_STOP) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    """Whatever a test asserted, its connectors are gone afterwards and their Spark slots free,
    so a failing test cannot starve the next ones."""
    yield
    remove_connectors(worker)


def source_config(topic: str, tasks: int, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "tasks.max": str(tasks),
        "topic": topic,
        "key.converter": STRING,
        "value.converter": STRING,
        **extra,
    }


def values_of(bootstrap: str, topic: str) -> list[str]:
    return [
        v.decode() for records in read_topic(bootstrap, topic).values() for _, v in records if v
    ]


def scan_until(bootstrap: str, topic: str, done: Callable[[list[str]], bool]) -> None:
    """Read ``topic`` from the start until ``done(values so far)`` holds (no partition EOF is
    needed: while tasks produce, a reader may never see one)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"scan-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while not done(seen):
            assert time.monotonic() < deadline, f"{topic}: condition not met in {len(seen)}"
            seen.extend(m.value().decode() for m in consumer.consume(500, 0.2) if not m.error())
    finally:
        consumer.close()


def parse(value: str) -> tuple[int, int, int, str]:
    task, seq, attempt, tag = value.split(":", 3)
    return int(task), int(seq), int(attempt), tag


def check_crashed_source(
    by_seq: dict[tuple[int, int], list[int]], task: int, crash_at: int, per_task: int
) -> int:
    """At-least-once for source ``task``, whose process died (``os._exit``) on attempt 0 just
    before record ``crash_at``, given ``{(task, seq): [attempt of each copy]}`` of the topic;
    returns the seq attempt 1 resumed at.

    Attempt 1 wrote ``resumed_at..per_task-1`` once each, from a committed offset ``0 <
    resumed_at <= crash_at``; attempt 0 wrote each record before ``resumed_at`` (an offset is
    committed only once its records are acknowledged) and nothing from ``crash_at`` on, each
    at most once. So nothing is lost and every duplicate lies in ``resumed_at..crash_at-1``.
    Which records of that stretch attempt 0 wrote depends on how many of the batches handed
    to its producer were sent before the process died (on Apache Kafka under load the last
    ones often were not): a matter of timing, not of the guarantee.
    """
    first = [s for (t, s), attempts in by_seq.items() if t == task for a in attempts if a == 0]
    second = [s for (t, s), attempts in by_seq.items() if t == task for a in attempts if a == 1]
    assert second, f"task {task} was not re-run"
    resumed_at = min(second)
    assert 0 < resumed_at <= crash_at
    assert sorted(second) == list(range(resumed_at, per_task))  # once each, to the end
    assert set(range(resumed_at)) <= set(first)
    assert len(first) == len(set(first)) and max(first) < crash_at
    duplicated = sorted(k for k, attempts in by_seq.items() if len(attempts) > 1)
    assert all(k[0] == task and resumed_at <= k[1] < crash_at for k in duplicated), duplicated
    return resumed_at


def test_source_and_sink_four_tasks_each_survive_crashes(worker: SparkWorker, tmp_path: Path):
    """4 source + 4 sink tasks on Spark; source task 1's Python worker dies (os._exit) on its
    first attempt, sink task 2 raises on its first attempt. Spark re-runs both; they resume
    from committed offsets: no record lost, duplicates only from the last commit on."""
    run = os.urandom(4).hex()
    topic, src, snk = f"seq-{run}", f"seq-source-{run}", f"seq-sink-{run}"
    create_topic(worker.bootstrap, topic, partitions=4)
    per_task, crash_at = 2000, 1200
    out = tmp_path / "sink"
    out.mkdir()
    r = worker.http.put(
        f"/connectors/{snk}/config",
        json={
            "connector.class": SINK,
            "tasks.max": "4",
            "topics": topic,
            "dir": str(out),
            "key.converter": STRING,
            "value.converter": STRING,
            "crash.task": "2",
            "crash.after": "300",
        },
    )
    assert r.status_code == 201, r.text
    # Data flows once the sink group has settled (fewer rebalances while records move).
    wait_for(lambda: worker.tasks_in(snk, "RUNNING", 4), 90, "4 sink tasks RUNNING")
    r = worker.http.put(
        f"/connectors/{src}/config",
        json=source_config(
            topic,
            4,
            **{
                "records.per.task": str(per_task),
                "batch.size": "50",
                "batch.interval.ms": "25",
                "crash.task": "1",
                "crash.at": str(crash_at),
                "crash.mode": "exit",
            },
        ),
    )
    assert r.status_code == 201, r.text

    def sink_lines() -> dict[str, list[str]]:
        return {p.name: p.read_text().splitlines() for p in sorted(out.glob("*.txt"))}

    wanted = {(t, s) for t in range(4) for s in range(per_task)}

    def delivered() -> set[tuple[int, int]]:
        return {
            parse(line)[:2] for lines in sink_lines().values() for line in lines if line[0] != "#"
        }

    wait_for(lambda: delivered() >= wanted, 150, "every record in the sink files")

    # Tasks ran in Spark's Python workers (not this process), reported through the status topic.
    status = worker.status(src)
    assert [t["id"] for t in status["tasks"]] == [0, 1, 2, 3]
    worker_ids = {t["worker_id"] for t in status["tasks"]}
    assert all(not w.endswith(f":{os.getpid()}") for w in worker_ids), worker_ids
    assert len(worker_ids) == 4  # four concurrent Python workers
    assert status["connector"]["worker_id"] == worker.process.herder.worker.status.worker_id

    # Source: task 1 resumed from a committed offset C > 0; the only duplicates lie in C..crash.
    produced = values_of(worker.bootstrap, topic)
    by_seq: dict[tuple[int, int], list[int]] = defaultdict(list)
    for value in produced:
        task, seq, attempt, _ = parse(value)
        by_seq[(task, seq)].append(attempt)
    assert set(by_seq) == wanted  # nothing lost
    attempts_of_1 = {a for (t, _), attempts in by_seq.items() if t == 1 for a in attempts}
    assert attempts_of_1 == {0, 1}  # Spark re-ran the crashed task
    resumed_at = check_crashed_source(by_seq, 1, crash_at, per_task)
    committed = offsets_committed(worker, src, 1)
    assert resumed_at in committed  # the resume point was a committed offset
    assert max(committed[: committed.index(resumed_at) + 1]) == resumed_at

    # Sink: task 2 failed (FAILED with the trace in the status topic) and was re-run. What its
    # failed attempt wrote after its last flush was not committed, so it was delivered again;
    # what it wrote before its second-to-last flush was committed and never came back. (A
    # commit can fail during a group rebalance - ILLEGAL_GENERATION - which costs at most the
    # interval before it, in any task: duplicates stay bounded by commit intervals.)
    traces = task_traces(worker, snk, 2)
    assert any("injected sink failure" in t for t in traces), traces
    lines = sink_lines()
    crashed = [n for n in lines if n.startswith(f"{snk}-2-a0-")]
    assert len(crashed) == 1
    retried = [n for n in lines if n.startswith(f"{snk}-2-a1-")]
    assert retried, sorted(lines)
    crashed_lines = [v for v in lines[crashed[0]] if v != "#close"]
    flushes = [i for i, v in enumerate(crashed_lines) if v == "#flush"]
    tail = set(crashed_lines[flushes[-1] + 1 :] if flushes else crashed_lines)
    committed_part = set(crashed_lines[: flushes[-2]] if len(flushes) > 1 else [])
    counts = Counter(v for ls in lines.values() for v in ls if v[0] != "#")
    twice = {v for v, n in counts.items() if n > 1}
    assert all(counts[v] == 2 for v in twice)
    assert tail <= twice  # resumed from the last commit, not from the failure point
    assert not committed_part & twice
    # Every duplicate was first delivered after the last commit its task made before losing the
    # partition: in the last two flush intervals before a "#close" (revoked: the commit on
    # revocation may fail in the rebalance) or before the end of a crashed attempt's file.
    uncommitted: set[str] = set()
    for file_lines in lines.values():
        uncommitted |= records_not_surely_committed(file_lines)
    assert twice <= uncommitted, sorted(twice - uncommitted)[:10]

    # Deleting stops the tasks cooperatively (no Spark job cancelled) and frees their slots.
    cancels = worker.executor.cancels
    worker.delete(src)
    worker.delete(snk)
    assert worker.executor.cancels == cancels
    assert worker.executor.live_tasks(src) == [] and worker.executor.live_tasks(snk) == []
    assert worker.executor.slots.held() == 0


def records_not_surely_committed(file_lines: list[str]) -> set[str]:
    """The records of a sink file that a redelivery may repeat: those in the last two non-empty
    flush intervals before each ``#close`` and before the end of the file."""
    segments: list[list[str]] = [[]]
    out: set[str] = set()

    def take_last_two() -> None:
        non_empty = [seg for seg in segments if seg]
        for seg in non_empty[-2:]:
            out.update(seg)

    for v in file_lines:
        if v == "#flush":
            segments.append([])
        elif v == "#close":
            take_last_two()
            segments[:] = [[]]
        else:
            segments[-1].append(v)
    take_last_two()
    return out


def offsets_committed(worker: SparkWorker, connector: str, task: int) -> list[int]:
    """Every ``seq`` committed for a task's source partition, in the offsets topic's order."""
    topic = worker.props["offset.storage.topic"]
    key = encode_key(connector, {"task": task})
    return [
        int((decode_value(v) or {})["seq"])
        for records in read_topic(worker.bootstrap, topic).values()
        for k, v in records
        if k == key and v is not None
    ]


def task_traces(worker: SparkWorker, connector: str, task: int) -> list[str]:
    """Traces of every FAILED status of a task in the status topic."""
    out = []
    for records in read_topic(worker.bootstrap, worker.props["status.storage.topic"]).values():
        for k, v in records:
            record = decode_status_record(k, v)
            if (
                isinstance(record, TaskStatusRecord)
                and record.name == connector
                and record.task == task
                and record.status is not None
                and record.status.state == "FAILED"
            ):
                out.append(record.status.trace or "")
    return out


def test_pause_resume_update_stop_over_rest_and_slot_check(
    worker: SparkWorker, spark: SparkSession
):
    run = os.urandom(4).hex()
    topic, name = f"ctl-{run}", f"ctl-source-{run}"
    create_topic(worker.bootstrap, topic, partitions=2)
    config = source_config(topic, 4, **{"batch.size": "20", "batch.interval.ms": "50", "tag": "v1"})
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 4), 90, "4 tasks RUNNING on Spark")
    driver_id = worker.process.herder.worker.status.worker_id
    assert all(t["worker_id"] != driver_id for t in worker.status(name)["tasks"])
    # One job group per connector, holding one running job per task.
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(f"connectrt:{name}")
    assert len(jobs) == 4
    assert all(tracker.getJobInfo(j).status == "RUNNING" for j in jobs)

    # Slot check: a connector wanting one slot more than remain waits, with the numbers (a
    # local master keeps no slot free): its tasks UNASSIGNED with the reason, never FAILED.
    total, held = worker.executor.slots.total, worker.executor.slots.held()
    assert held == 4 and worker.executor.slots.free == 0
    greedy = f"greedy-{run}"
    wanted = total - held + 1
    r = worker.http.put(
        f"/connectors/{greedy}/config", json=source_config(topic, wanted, tag="greedy")
    )
    assert r.status_code == 201, r.text
    wait_for(lambda: worker.tasks_in(greedy, "UNASSIGNED", wanted), 60, "greedy's tasks waiting")
    status = worker.status(greedy)
    assert status["connector"]["state"] == "RUNNING"
    trace = status["tasks"][0]["trace"]
    assert f"Not enough Spark task slots for connector {greedy}" in trace
    assert "The tasks wait (UNASSIGNED)" in trace
    assert f"the cluster has {total} slot(s), {held} held by running connector tasks" in trace
    assert f"({name}: 4)" in trace and "0 must stay free" in trace
    assert worker.executor.slots.held() == held
    worker.delete(greedy)
    assert worker.executor.slots.held() == held and not worker.executor.waiting_connectors()

    # Offsets the executors commit are served by the driver while the tasks run.
    def offsets_of_running_tasks() -> list[int]:
        offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
        return sorted(o["partition"]["task"] for o in offsets if o["offset"]["seq"] > 0)

    wait_for(lambda: offsets_of_running_tasks() == [0, 1, 2, 3], 60, "offsets of 4 tasks")

    # Pause: every task reports PAUSED from its executor and produces nothing more.
    assert worker.http.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: worker.tasks_in(name, "PAUSED", 4), 60, "4 tasks PAUSED")

    # What the tasks sent before pausing may still be in flight: wait until the topic stops
    # growing, then watch it for 1.5 s (an observation window, not a synchronisation).
    counts = [len(values_of(worker.bootstrap, topic))]

    def settled() -> bool:
        time.sleep(0.5)
        counts.append(len(values_of(worker.bootstrap, topic)))
        return counts[-1] == counts[-2]

    wait_for(settled, 60, "the records sent before the pause to land")
    paused_count = counts[-1]
    time.sleep(1.5)
    assert len(values_of(worker.bootstrap, topic)) == paused_count

    # Resume: RUNNING again and producing.
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 4), 60, "4 tasks RUNNING again")
    scan_until(worker.bootstrap, topic, lambda seen: len(seen) > paused_count)

    # Config update: 2 tasks with tag v2; the old launches end cooperatively.
    cancels = worker.executor.cancels
    updated = {**config, "tasks.max": "2", "tag": "v2"}
    assert worker.http.put(f"/connectors/{name}/config", json=updated).status_code == 200
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 60, "2 reconfigured tasks RUNNING")

    def v2_tasks(values: list[str]) -> set[int]:
        return {t for t, _, _, tag in map(parse, values) if tag == "v2"}

    scan_until(worker.bootstrap, topic, lambda seen: v2_tasks(seen) == {0, 1})
    assert worker.executor.slots.held(name) == 2
    assert worker.executor.cancels == cancels

    # Stop: tasks commit and exit, no job cancelled; the committed offsets cover every record.
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: worker.status(name)["connector"]["state"] == "STOPPED", 60, "STOPPED")
    assert worker.status(name)["tasks"] == []
    assert worker.executor.live_tasks(name) == []
    assert worker.executor.cancels == cancels
    last_seq: dict[int, int] = {}
    for t, s, _, _ in map(parse, values_of(worker.bootstrap, topic)):
        last_seq[t] = max(s, last_seq.get(t, -1))
    offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
    committed = {o["partition"]["task"]: o["offset"]["seq"] for o in offsets}
    assert committed == {t: s + 1 for t, s in last_seq.items()}
    worker.delete(name)
    assert worker.executor.slots.held() == 0


def test_restart_task_and_last_resort_cancel(worker: SparkWorker):
    """A task restarted over REST is a new launch on Spark; a task that ignores its stop
    signal is cancelled after task.shutdown.graceful.timeout.ms, and its slot is freed."""
    run = os.urandom(4).hex()
    topic, name = f"hang-{run}", f"hang-source-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    config = source_config(topic, 2, **{"batch.size": "10", "batch.interval.ms": "50"})
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 60, "2 tasks RUNNING")

    cancels = worker.executor.cancels
    launches = worker.executor.launches
    assert worker.http.post(f"/connectors/{name}/tasks/1/restart").status_code == 204
    assert worker.executor.launches == launches + 1
    # RUNNING again: reported by the new launch (the restart left the task UNASSIGNED).
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 60, "task 1 RUNNING again")
    assert worker.executor.cancels == cancels  # the old launch stopped cooperatively
    assert worker.executor.slots.held(name) == 2

    # Reconfigure into tasks that never return from poll(): stopping them needs a cancel.
    hanging = {**config, "hang": "true"}
    assert worker.http.put(f"/connectors/{name}/config", json=hanging).status_code == 200
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 60, "2 hanging tasks RUNNING")
    t0 = time.monotonic()
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    waited = time.monotonic() - t0
    assert worker.executor.cancels == cancels + 2
    assert waited >= int(worker.props["task.shutdown.graceful.timeout.ms"]) / 1000.0
    assert worker.executor.live_tasks(name) == []
    assert worker.executor.slots.held() == 0
    assert worker.status(name)["connector"]["state"] == "STOPPED"
    worker.delete(name)


def test_task_failing_every_attempt_is_failed_with_its_trace(worker: SparkWorker):
    """Spark re-runs a failing task up to its attempt limit (3 here); then the task is FAILED
    over REST with the trace, its slot is free, and its sibling keeps running."""
    run = os.urandom(4).hex()
    topic, name = f"fail-{run}", f"fail-source-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    config = source_config(
        topic,
        2,
        **{
            "batch.size": "10",
            "batch.interval.ms": "50",
            "crash.task": "1",
            "crash.at": "30",
            "crash.mode": "raise",
            "crash.every.attempt": "true",
        },
    )
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201

    def task_state(task: int) -> str:
        tasks = worker.status(name).get("tasks", [])
        return tasks[task]["state"] if len(tasks) > task else ""

    def failed_for_good() -> bool:
        return task_state(1) == "FAILED" and worker.executor.live_tasks(name) == [TaskId(name, 0)]

    wait_for(failed_for_good, 90, "task 1 FAILED after its last attempt")
    trace = worker.status(name)["tasks"][1]["trace"]
    assert "injected failure of task 1" in trace
    assert "failed on attempt 2" in trace  # the third and last attempt (local[N,3])
    driver_id = worker.process.herder.worker.status.worker_id
    assert worker.status(name)["tasks"][1]["worker_id"] == driver_id  # reported by the driver
    assert task_state(0) == "RUNNING"
    assert worker.executor.slots.held(name) == 1
    # Every attempt reported FAILED with its trace to the status topic first.
    assert sum("injected failure of task 1" in t for t in task_traces(worker, name, 1)) >= 3
    worker.delete(name)
    assert worker.executor.slots.held() == 0
