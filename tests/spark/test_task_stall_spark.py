"""Stuck-task detection on the Spark executor, with a real SparkSession, broker and REST server.

The tasks run in Spark's Python workers; each reports the call it has been in for a second or
more through the status topic, and the driver's stall watchdog marks it stalled: REST status
``"stalled": true`` with the call and the stack sent from the executor, the
``connectrt_task_stalled`` gauge at 1, cleared when the call returns. With
``task.stall.action=restart`` the task is stopped, cancelled after the graceful-shutdown
timeout and launched again. Idle tasks are never stalled.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import wait_for
from tests.spark.test_backend import SparkWorker, remove_connectors, running_spark_worker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"
TIMEOUT_MS = 3000


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark: SparkSession) -> Iterator[SparkWorker]:
    with running_spark_worker(broker, spark) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    yield
    remove_connectors(worker)


def _tasks(worker: SparkWorker, name: str) -> dict[int, dict[str, Any]]:
    return {t["id"]: t for t in worker.status(name).get("tasks", [])}


def _gauge(worker: SparkWorker, name: str, task: int) -> float | None:
    return scrape(worker.http).value("connectrt_task_stalled", connector=name, task=task)


def _partitions_per_member(worker: SparkWorker, group: str) -> list[int]:
    """How many partitions each member of consumer group ``group`` holds, sorted ([] while the
    group is not stable)."""
    admin = AdminClient({"bootstrap.servers": worker.bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(30)
    if described.state != ConsumerGroupState.STABLE:
        return []
    return sorted(len(m.assignment.topic_partitions) for m in described.members)


def _create(worker: SparkWorker, name: str, config: dict[str, str]) -> None:
    response = worker.http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text


def test_spark_sink_stuck_in_put_is_stalled_and_clears_idle_tasks_never(
    worker: SparkWorker, tmp_path: Path
):
    """Sink task 0 blocks in put() in its Spark task; task 1 (its sibling) and an idle source
    stay unstalled the whole time; creating the release file lets put() return and the stall
    clears."""
    run = os.urandom(4).hex()
    topic, sink, source = f"stall-{run}", f"stall-sink-{run}", f"idle-source-{run}"
    release = tmp_path / "release"
    create_topic(worker.bootstrap, topic, partitions=2)
    _create(
        worker,
        sink,
        {
            "connector.class": "tests.plugins.hanging.HangingSink",
            "tasks.max": "2",
            "topics": topic,
            "store.id": run,
            "hang.task": "0",
            "release.file": str(release),
            "value.converter": STRING,
            "task.stall.timeout.ms": str(TIMEOUT_MS),
        },
    )
    _create(
        worker,
        source,
        {
            "connector.class": "tests.plugins.hanging.HangingSource",  # poll() idles, None
            "topic": topic,
            "store.id": run,
            "task.stall.timeout.ms": "500",
        },
    )
    wait_for(lambda: worker.tasks_in(sink, "RUNNING", 2), 90, "both sink tasks RUNNING")
    wait_for(lambda: worker.tasks_in(source, "RUNNING", 1), 90, "the idle source RUNNING")
    # RUNNING is not yet assigned: had task 0 taken both partitions before task 1 joined, it
    # would hold them inside put() (a rebalance waits for it) and task 1 would never get one.
    wait_for(
        lambda: _partitions_per_member(worker, f"connect-{sink}") == [1, 1],
        90,
        f"the group connect-{sink} to give each of its two members one partition",
    )
    running_at = time.monotonic()
    produce(worker.bootstrap, topic, (f"v{i}" for i in range(200)), key=lambda i: b"%d" % i)
    produced_at = time.monotonic()

    def stuck_seen() -> bool:
        """Task 0 stalled yet? Meanwhile the sibling and the idle source must not be."""
        tasks = _tasks(worker, sink)
        assert "stalled" not in tasks.get(1, {}), tasks
        idle = _tasks(worker, source).get(0, {})
        assert idle.get("state") == "RUNNING" and "stalled" not in idle, idle
        return bool(tasks.get(0, {}).get("stalled"))

    wait_for(stuck_seen, 60, "sink task 0 reported stalled")
    print(f"stall reported {time.monotonic() - produced_at:.2f} s after the records were produced")
    stuck = _tasks(worker, sink)[0]
    assert stuck["state"] == "RUNNING"  # the Kafka Connect state is kept
    assert stuck["stalled_call"] == "put"
    assert "put() for more than" in stuck["trace"]
    # The stack comes from the executor's Python worker, not from this process.
    assert "hanging.py" in stuck["trace"] and "in put" in stuck["trace"], stuck["trace"]
    assert "the Spark task" in stuck["trace"] and f":{os.getpid()})" not in stuck["trace"]
    assert _gauge(worker, sink, 0) == 1
    assert _gauge(worker, sink, 1) == 0
    assert _gauge(worker, source, 0) == 0
    # The idle source was watched (by stuck_seen) for more than three times its timeout.
    assert time.monotonic() - running_at > 3 * 0.5

    # The driver's /metrics follows the running Spark tasks (sent every few seconds through
    # the status topic), not only once they end: the sibling's records put, the stuck task's
    # records consumed, and its consumer lag once records arrive behind the stuck batch.
    def sink_metric(name: str, task: int) -> float:
        return scrape(worker.http).value(name, connector=sink, task=task) or 0

    def stuck_task_lag() -> float:
        lag = scrape(worker.http).matching("connectrt_task_consumer_lag", connector=sink, task=0)
        return sum(value for _, value in lag)

    wait_for(
        lambda: sink_metric("connectrt_task_records_put_total", 1) > 0,
        60,
        "records put by the running sibling task 1 in the driver's /metrics",
    )
    wait_for(
        lambda: sink_metric("connectrt_task_records_polled_total", 0) > 0,
        60,
        "the stuck task 0's consumed records in the driver's /metrics",
    )
    assert sink_metric("connectrt_task_records_put_total", 0) == 0  # still inside put()
    produce(worker.bootstrap, topic, (f"w{i}" for i in range(50)), key=lambda i: b"w%d" % i)
    wait_for(
        lambda: stuck_task_lag() > 0,
        60,
        "the stuck task 0's consumer lag above 0 once records arrive behind its batch",
    )

    release.touch()  # put() returns in the executor: the flag clears, the state never changed
    wait_for(lambda: "stalled" not in _tasks(worker, sink)[0], 60, "task 0's stall to clear")
    assert _tasks(worker, sink)[0]["state"] == "RUNNING"
    wait_for(lambda: _gauge(worker, sink, 0) == 0, 60, "the stalled gauge back to 0")


def test_spark_source_stuck_in_poll_with_action_restart_is_relaunched(worker: SparkWorker):
    """A source whose poll() never returns (stop ignored): stalled, then stopped, cancelled
    after task.shutdown.graceful.timeout.ms and launched again, again and again."""
    run = os.urandom(4).hex()
    topic, name = f"stall-src-{run}", f"stall-source-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    launches, cancels = worker.executor.launches, worker.executor.cancels
    _create(
        worker,
        name,
        {
            "connector.class": "tests.plugins.sequence.SequenceSource",
            "tasks.max": "1",
            "topic": topic,
            "hang": "true",
            "key.converter": STRING,
            "value.converter": STRING,
            "task.stall.timeout.ms": str(TIMEOUT_MS),
            "task.stall.action": "restart",
        },
    )
    assert worker.executor.launches == launches + 1
    wait_for(
        lambda: worker.executor.cancels >= cancels + 1 and worker.executor.launches >= launches + 2,
        120,
        "the stalled launch cancelled and the task launched again",
    )
    wait_for(lambda: worker.tasks_in(name, "RUNNING", 1), 90, "the new launch RUNNING")
    assert len(worker.executor.live_tasks(name)) == 1  # the old launch is gone
    assert worker.executor.slots.held(name) == 1  # the cancelled launch freed its slot
    # The new launch hangs in poll() too: it is found stalled again (its own report).
    wait_for(
        lambda: (
            _tasks(worker, name).get(0, {}).get("stalled_call") == "poll"
            or worker.executor.launches >= launches + 3
        ),
        120,
        "the relaunched task stalled (or already restarted again)",
    )
