"""Connector tasks on Spark Connect: the executor backend with only the DataFrame API.

The driver (herder, REST, Kafka-topic stores) runs in this process with a Spark Connect client
session; each task launch is a one-row DataFrame whose ``mapInArrow`` runs the task in the
Connect server's Python workers (a real server started from the installed pyspark,
``local[4,3]``: 4 slots, 3 attempts per task). Real broker, real HTTP.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.process.spark_worker import build_spark_worker
from connectrt.spark.launchers import ConnectLauncher
from connectrt.testing.harness import create_topic
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import rest_worker_props, wait_for
from tests.rate_support import assert_within_10_percent, measured_rate, source_committed
from tests.spark.test_backend import (
    COOPERATIVE_STOP,
    SINK,
    SparkWorker,
    check_crashed_source,
    offsets_committed,
    parse,
    scan_until,
    source_config,
    values_of,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark_connect: SparkSession) -> Iterator[SparkWorker]:
    props = rest_worker_props(
        broker.bootstrap_servers, **{"offset.flush.interval.ms": "300", **COOPERATIVE_STOP}
    )
    process, executor = build_spark_worker(props, spark_connect)
    assert isinstance(executor.launcher, ConnectLauncher)
    stop = threading.Event()
    thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
    thread.start()
    try:
        wait_for(lambda: process.herder.ready, 90, "the Spark Connect driver's herder")
        with httpx.Client(base_url=process.rest.url, timeout=60) as http:
            yield SparkWorker(process, executor, http, props, broker.bootstrap_servers)
    finally:
        stop.set()
        thread.join(60)


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    yield
    for name in worker.http.get("/connectors").json():
        response = worker.http.delete(f"/connectors/{name}")
        assert response.status_code in (204, 404), response.text
    wait_for(lambda: worker.executor.slots.held() == 0, 60, "every Spark slot released")


def test_source_and_sink_tasks_over_connect_survive_a_crash(
    worker: SparkWorker, tmp_path: Path
) -> None:
    """2 source tasks and 1 sink task as Spark Connect operations; source task 1's Python
    worker dies (os._exit) on its first attempt. Spark re-runs it; it resumes from its
    committed offset: nothing lost, duplicates only between that commit and the crash."""
    assert worker.executor.slots.total == 4  # the server's local[4,3], no slot kept free
    run = os.urandom(4).hex()
    topic, src, snk = f"cseq-{run}", f"cseq-source-{run}", f"cseq-sink-{run}"
    create_topic(worker.bootstrap, topic, partitions=2)
    per_task, crash_at = 1500, 700
    out = tmp_path / "sink"
    out.mkdir()
    sink = {
        "connector.class": SINK,
        "tasks.max": "1",
        "topics": topic,
        "dir": str(out),
        "key.converter": STRING,
        "value.converter": STRING,
    }
    assert worker.http.put(f"/connectors/{snk}/config", json=sink).status_code == 201
    wait_for(lambda: worker.tasks_in(snk, "RUNNING", 1), 90, "the sink task RUNNING")
    source = source_config(
        topic,
        2,
        **{
            "records.per.task": str(per_task),
            "batch.size": "50",
            "batch.interval.ms": "25",
            "crash.task": "1",
            "crash.at": str(crash_at),
            "crash.mode": "exit",
        },
    )
    assert worker.http.put(f"/connectors/{src}/config", json=source).status_code == 201

    wanted = {(t, s) for t in range(2) for s in range(per_task)}

    def delivered() -> set[tuple[int, int]]:
        return {
            parse(line)[:2]
            for path in out.glob("*.txt")
            for line in path.read_text().splitlines()
            if line[0] != "#"
        }

    wait_for(lambda: delivered() >= wanted, 150, "every record in the sink's files")
    status = worker.status(src)
    worker_ids = {t["worker_id"] for t in status["tasks"]}
    assert all(not w.endswith(f":{os.getpid()}") for w in worker_ids), worker_ids
    assert status["connector"]["worker_id"] == worker.process.herder.worker.status.worker_id

    by_seq: dict[tuple[int, int], list[int]] = defaultdict(list)
    for value in values_of(worker.bootstrap, topic):
        task, seq, attempt, _ = parse(value)
        by_seq[(task, seq)].append(attempt)
    assert set(by_seq) == wanted  # nothing lost
    attempts_of_1 = {a for (t, _), attempts in by_seq.items() if t == 1 for a in attempts}
    assert attempts_of_1 == {0, 1}  # Spark re-ran the crashed task
    resumed_at = check_crashed_source(by_seq, 1, crash_at, per_task)
    committed = offsets_committed(worker, src, 1)
    assert resumed_at in committed  # the resume point was a committed offset

    cancels = worker.executor.cancels
    worker.delete(src)
    worker.delete(snk)
    assert worker.executor.cancels == cancels  # stopped cooperatively
    assert worker.executor.slots.held() == 0


def test_pause_resume_stop_slots_and_last_resort_interrupt_over_connect(
    worker: SparkWorker,
) -> None:
    run = os.urandom(4).hex()
    topic, name = f"cctl-{run}", f"cctl-source-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    config = source_config(topic, 2, **{"batch.size": "20", "batch.interval.ms": "50"})
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 90, "2 tasks RUNNING over Connect")

    # Slots: 2 held of 4; a connector asking for 3 more waits, UNASSIGNED with the numbers.
    greedy = f"cgreedy-{run}"
    r = worker.http.put(f"/connectors/{greedy}/config", json=source_config(topic, 3))
    assert r.status_code == 201, r.text
    wait_for(lambda: worker.tasks_in(greedy, "UNASSIGNED", 3), 60, "cgreedy's tasks waiting")
    trace = worker.status(greedy)["tasks"][0]["trace"]
    assert f"Not enough Spark task slots for connector {greedy}" in trace
    assert "the cluster has 4 slot(s), 2 held" in trace
    worker.delete(greedy)

    assert worker.http.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: worker.tasks_in(name, "PAUSED", 2), 60, "2 tasks PAUSED")
    counts = [len(values_of(worker.bootstrap, topic))]

    def settled() -> bool:
        time.sleep(0.5)
        counts.append(len(values_of(worker.bootstrap, topic)))
        return counts[-1] == counts[-2]

    wait_for(settled, 60, "the records sent before the pause to land")
    paused = counts[-1]
    time.sleep(1.5)  # an observation window: a paused task sends nothing
    assert len(values_of(worker.bootstrap, topic)) == paused
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 60, "2 tasks RUNNING again")
    scan_until(worker.bootstrap, topic, lambda seen: len(seen) > paused)

    # Stop: the tasks commit and return; no operation interrupted.
    cancels = worker.executor.cancels
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: worker.status(name)["connector"]["state"] == "STOPPED", 60, "STOPPED")
    assert worker.executor.live_tasks(name) == []
    assert worker.executor.cancels == cancels
    last_seq: dict[int, int] = {}
    for t, s, _, _ in map(parse, values_of(worker.bootstrap, topic)):
        last_seq[t] = max(s, last_seq.get(t, -1))
    offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
    assert {o["partition"]["task"]: o["offset"]["seq"] for o in offsets} == {
        t: s + 1 for t, s in last_seq.items()
    }

    # Tasks that never return from poll(): stopping them needs the tagged interrupt.
    hanging = {**config, "hang": "true"}
    assert worker.http.put(f"/connectors/{name}/config", json=hanging).status_code == 200
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 2), 90, "2 hanging tasks RUNNING")
    started = time.monotonic()
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    waited = time.monotonic() - started
    assert worker.executor.cancels == cancels + 2
    assert waited >= int(worker.props["task.shutdown.graceful.timeout.ms"]) / 1000.0
    assert worker.executor.live_tasks(name) == []
    assert worker.executor.slots.held() == 0
    worker.delete(name)


def test_a_task_stuck_in_poll_over_connect_is_reported_stalled(worker: SparkWorker):
    """Stall detection through the Spark Connect launcher: the task in the server's Python
    worker reports its open call through the status topic like a classic Spark task."""
    run = os.urandom(4).hex()
    topic, name = f"stall-{run}", f"stall-connect-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    config = source_config(topic, 1, **{"hang": "true", "task.stall.timeout.ms": "3000"})
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 1), 90, "the task RUNNING")
    wait_for(lambda: worker.status(name)["tasks"][0].get("stalled") is True, 60, "the task stalled")
    task = worker.status(name)["tasks"][0]
    assert task["state"] == "RUNNING" and task["stalled_call"] == "poll"
    assert "sequence.py" in task["trace"] and "in poll" in task["trace"], task["trace"]
    samples = scrape(worker.http)
    assert samples.value("connectrt_task_stalled", connector=name, task=0) == 1


def test_a_source_over_connect_is_held_to_its_records_rate(worker: SparkWorker):
    """task.rate.limit.records.per.sec in a task run by the Spark Connect server's Python
    worker: within 10% over 10 s (the measurement of :mod:`tests.rate_support`)."""
    run = os.urandom(4).hex()
    topic, name = f"rate-{run}", f"rate-connect-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    limit = 2000.0
    config = source_config(
        topic,
        1,
        **{
            "batch.size": "100",
            "batch.interval.ms": "0",  # unlimited: the task could do far more than the limit
            "task.rate.limit.records.per.sec": str(limit),
        },
    )
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    committed = source_committed(worker.http, name)
    rate = measured_rate(committed, int(2 * limit), "the committed source offset")
    assert_within_10_percent(rate, limit)
