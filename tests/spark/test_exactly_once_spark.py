"""Exactly-once source (KIP-618) on the Spark executor (``task.executor=spark``).

The driver (herder, REST, Kafka-topic stores) runs in this process with
``exactly.once.source.support=enabled``; the source task (:mod:`tests.plugins.eos_sequence`:
records ``"<task>:<seq>:<attempt>"``, a fresh attempt id each time the task starts) runs in a
Python worker of the ``spark`` fixture's ``local[10,3]`` session (3 attempts per task), with
``exactly.once.support=required`` and an offsets topic of its own, so the data topic and the
offsets topic hold this connector's transactions only.

What is counted is what a ``read_committed`` consumer of Apache Kafka would see:
:func:`connectrt.testing.committed_view.committed_view` computes it from the stored batches and
transaction markers (the embedded broker shows aborted records to its own consumers). In that
view every test proves: the records are seqs ``0..N-1`` exactly once (0 lost, 0 duplicated),
written by two runs of the task, the second starting exactly at an offset the first committed;
the last committed offset is ``N``; transaction by transaction the records and their offset
commit together; after the connector is stopped cleanly nothing is open; the zombie fencing
of the task generation wrote ``tasks-fencing-<name>``.

* A killed attempt: the task's Python worker dies (``os._exit``) on Spark attempt 0, either
  while the runtime sends a batch (``transaction.boundary=poll``: the kill lands inside that
  batch's transaction, before its offset is written) or inside ``poll()`` with records of the
  interval's transaction already sent (``transaction.boundary=interval``). Spark re-runs the
  attempt; its ``init_transactions()`` aborts the killed attempt's open transaction (those
  records end up aborted, none committed) and it resumes at the committed offset.
* A fenced attempt: while the task waits in ``poll()`` (nothing being committed), a producer
  with the task's ``transactional.id`` calls ``init_transactions()``. The task's next
  transaction fails, the attempt fails with a readable trace (reported FAILED through the
  status topic) and Spark re-runs it from the committed offset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer

from connectrt.broker import EmbeddedBroker
from connectrt.testing.committed_view import PartitionView
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import wait_for
from tests.eos_support import assert_atomic, offset_of, seq_of, view
from tests.spark.test_backend import (
    SparkWorker,
    remove_connectors,
    running_spark_worker,
    task_traces,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"
SOURCE = "tests.plugins.eos_sequence.EosSequenceSource"
BATCH = 20


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark: SparkSession) -> Iterator[SparkWorker]:
    with running_spark_worker(
        broker, spark, **{"exactly.once.source.support": "enabled"}
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    """Whatever a test asserted, its connectors are gone afterwards and their slots free."""
    yield
    remove_connectors(worker)


def create_topics(worker: SparkWorker, topic: str, offsets_topic: str) -> None:
    """The data topic and the connector's offsets topic, one partition each."""
    create_topic(worker.bootstrap, topic)
    create_topic(worker.bootstrap, offsets_topic, **{"cleanup.policy": "compact"})


def eos_config(topic: str, offsets_topic: str, boundary: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "tasks.max": "1",
        "topic": topic,
        "key.converter": STRING,
        "value.converter": STRING,
        "batch.size": str(BATCH),
        "batch.interval.ms": "10",
        "exactly.once.support": "required",
        "transaction.boundary": boundary,
        "transaction.boundary.interval.ms": "1000",
        "offsets.storage.topic": offsets_topic,
        "producer.override.linger.ms": "0",
        **extra,
    }


def committed_offset(bootstrap: str, offsets_topic: str) -> int:
    """The last offset committed in ``offsets_topic`` (0: none yet)."""
    records = view(bootstrap, offsets_topic).committed
    return offset_of(records[-1].value) if records else 0


def fencing_records(worker: SparkWorker, name: str) -> list[bytes | None]:
    """The ``tasks-fencing-<name>`` values in the config topic, in order."""
    rows = read_topic(worker.bootstrap, worker.props["config.storage.topic"])[0]
    return [v for k, v in rows if k == f"tasks-fencing-{name}".encode()]


def assert_exactly_once(data: PartitionView, offsets: PartitionView) -> tuple[int, int, list[int]]:
    """What every test proves in the committed view after a clean stop (see the module
    docstring); returns the record count ``N``, the seq the second run resumed at, and the
    seqs of the aborted records (all the first run's, at or past that seq)."""
    assert not data.open and not offsets.open, "a transaction left open after a clean stop"
    committed = [seq_of(r.value) for r in data.committed]
    seqs = [s for s, _ in committed]
    assert seqs == list(range(len(seqs))), "records lost or duplicated in the committed view"
    runs = list(dict.fromkeys(a for _, a in committed))
    assert len(runs) == 2, f"{len(runs)} runs of the task committed records, expected 2"
    first, second = runs
    resumed = next(s for s, a in committed if a == second)
    assert {a for s, a in committed if s < resumed} == {first}
    assert {a for s, a in committed if s >= resumed} == {second}
    stored = [offset_of(r.value) for r in offsets.committed]
    assert resumed in stored, f"the second run resumed at {resumed}, not a committed offset"
    assert stored[-1] == len(seqs), "the last committed offset is not one past the last record"
    assert_atomic(data, offsets)
    assert not offsets.aborted, "an aborted transaction held an offset record"
    aborted = [seq_of(r.value) for r in data.aborted]
    assert {a for _, a in aborted} <= {first}, "a record of the second run was aborted"
    aborted_seqs = [s for s, _ in aborted]
    assert all(s >= resumed for s in aborted_seqs), "an aborted record below the resume point"
    return len(seqs), resumed, aborted_seqs


def stop(worker: SparkWorker, name: str) -> None:
    """A clean stop: the task commits its open transaction and its Spark job ends."""
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(
        lambda: worker.status(name).get("connector", {}).get("state") == "STOPPED",
        90,
        f"connector {name} STOPPED",
    )
    wait_for(lambda: worker.executor.live_tasks(name) == [], 90, f"the Spark job of {name} ended")


@pytest.mark.parametrize(
    ("boundary", "crash_mode", "crash_at"),
    [
        pytest.param("poll", "sending", 600, id="poll-killed-while-sending"),
        pytest.param("interval", "poll", 3000, id="interval-killed-in-poll"),
    ],
)
def test_a_killed_attempt_rerun_by_spark_commits_every_record_once(
    worker: SparkWorker, boundary: str, crash_mode: str, crash_at: int
) -> None:
    check_killed_attempt(worker, boundary, crash_mode, crash_at)


def check_killed_attempt(
    worker: SparkWorker, boundary: str, crash_mode: str, crash_at: int
) -> None:
    """One source task whose Python worker dies at seq ``crash_at`` on Spark attempt 0 (see
    the module docstring); checked in the committed view after Spark's re-run and a clean
    stop. Shared with the Spark Connect module."""
    run = os.urandom(4).hex()
    name, topic, offsets_topic = f"eos-kill-{run}", f"eos-kill-{run}", f"eos-kill-offsets-{run}"
    create_topics(worker, topic, offsets_topic)
    config = eos_config(
        topic,
        offsets_topic,
        boundary,
        **{
            "crash.at": str(crash_at),
            "crash.mode": crash_mode,
            "crash.bootstrap": worker.bootstrap,
        },
    )
    response = worker.http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for(
        lambda: committed_offset(worker.bootstrap, offsets_topic) >= crash_at + 400,
        180,
        "Spark to re-run the killed attempt and the re-run to commit 400 records past the "
        "crash point",
    )
    assert worker.tasks_in(name, "RUNNING", 1), worker.status(name)
    assert fencing_records(worker, name) == [b'{"task-count":1}']
    stop(worker, name)
    worker.delete(name)

    data, offsets = view(worker.bootstrap, topic), view(worker.bootstrap, offsets_topic)
    count, resumed, aborted = assert_exactly_once(data, offsets)
    assert aborted == list(range(resumed, resumed + len(aborted))), "aborted records not a run"
    if crash_mode == "sending":
        # Every batch before the crash point committed after its poll; the kill hit the
        # transaction of the next batch while its records were being sent (once the broker
        # held some): those records are that open transaction, aborted when Spark's re-run
        # fenced it.
        assert resumed == crash_at
        assert aborted, "the kill left no records in an open transaction"
    else:
        # The kill hit poll() with the interval's transaction open: the first run's records
        # from its last commit to the crash point are that transaction, aborted (the last
        # batch may not have reached the broker before the process died).
        assert 0 < resumed <= crash_at
        assert crash_at - 2 * BATCH <= resumed + len(aborted) <= crash_at, aborted[-5:]
    print(
        f"killed ({boundary}, {crash_mode}) at seq {crash_at}: the first run committed "
        f"0..{resumed - 1}, its open transaction ({len(aborted)} records) aborted by the "
        f"re-run, which resumed at {resumed}; {count} records, "
        f"{len(data.transactions)} data transaction markers; lost 0, duplicated 0"
    )


def test_a_fenced_attempt_fails_and_is_rerun_from_the_committed_offset(
    worker: SparkWorker, tmp_path: Path
) -> None:
    run = os.urandom(4).hex()
    name, topic, offsets_topic = f"eos-fence-{run}", f"eos-fence-{run}", f"eos-fence-offsets-{run}"
    create_topics(worker, topic, offsets_topic)
    hold_at = 400
    config = eos_config(
        topic, offsets_topic, "poll", **{"hold.at": str(hold_at), "hold.dir": str(tmp_path)}
    )
    response = worker.http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for((tmp_path / "held-0").exists, 90, "the task on Spark to hold in poll()")
    assert committed_offset(worker.bootstrap, offsets_topic) == hold_at

    # A producer with the task's transactional id: its init_transactions() bumps the epoch,
    # so the running attempt can no longer write or commit (a zombie from then on).
    tid = f"{worker.props['group.id']}-{name}-0"
    fencer = Producer({"bootstrap.servers": worker.bootstrap, "transactional.id": tid})
    fencer.init_transactions(30)
    fencer.flush(0)
    (tmp_path / "release-0").write_text("go")

    wait_for(
        lambda: any("transactional.id" in t for t in task_traces(worker, name, 0)),
        90,
        "the fenced attempt to report FAILED with its trace",
    )
    trace = next(t for t in task_traces(worker, name, 0) if "transactional.id" in t)
    assert tid in trace, trace
    wait_for(
        lambda: committed_offset(worker.bootstrap, offsets_topic) >= hold_at + 400,
        120,
        "Spark to re-run the fenced attempt and the re-run to commit 400 records",
    )
    assert worker.tasks_in(name, "RUNNING", 1), worker.status(name)
    stop(worker, name)
    # The offsets endpoint reads the connector's own offsets topic afresh.
    served = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
    worker.delete(name)

    data, offsets = view(worker.bootstrap, topic), view(worker.bootstrap, offsets_topic)
    count, resumed, aborted = assert_exactly_once(data, offsets)
    assert served == [{"partition": {"task": 0}, "offset": {"seq": count}}]
    assert resumed == hold_at, "the re-run did not resume at the offset committed before"
    assert fencing_records(worker, name) == [b'{"task-count":1}']
    print(
        f"fenced at seq {hold_at}: the attempt failed with "
        f"{trace.strip().splitlines()[-1]!r}; the re-run resumed at {resumed}; {count} "
        f"records, {len(aborted)} aborted; lost 0, duplicated 0"
    )
