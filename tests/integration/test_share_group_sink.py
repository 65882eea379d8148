"""Sink tasks in a share group (KIP-932, ``consumer.group.type=share``) on a real Apache Kafka.

One worker (task processes, real HTTP) and one Apache Kafka 4.x broker for the module: the
session's, unless that is the embedded broker (it has no share groups), then one started here.
The sink is :mod:`tests.plugins.share_log_sink` (1 ms per record, logging what each task wrote
and flushed). What must hold:

* one partition, 4 tasks, 20,000 records: every record written exactly once, each task more
  than 10% of them (a consumer group could use one task; the throughput comparison is
  ``bench/share_group_sink.py``), and the per-task share counters on ``/metrics``;
* a task process killed with SIGKILL mid-stream: its records are delivered again once their
  locks expire, none lost, and every duplicate one of the records the killed task had in hand
  (acquired and not acknowledged: its last batch, see the sink's log);
* 1% poison records (not JSON) with a dead letter queue: all of them in the DLQ with context
  headers, every good record written once;
* validation: a bad ``consumer.group.type`` is a 400 naming the field; the offsets API refuses
  to alter a share group's offsets with a 400.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.testing.broker_choice import SessionBroker, apache_kafka
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins.share_log_sink import read_logs

pytestmark = pytest.mark.integration

SINK = "tests.plugins.share_log_sink.ShareLogSink"


@pytest.fixture(scope="module")
def share_broker(broker: SessionBroker) -> Iterator[SessionBroker]:
    """An Apache Kafka with share groups: the session's, or one started for this module."""
    with apache_kafka(broker) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def worker(share_broker: SessionBroker) -> Iterator[RestWorker]:
    w = start_rest_worker(
        share_broker.bootstrap_servers,
        **{
            "task.executor": "processes",
            "value.converter.schemas.enable": "false",
        },
    )
    try:
        yield w
    finally:
        w.delete_connectors()
        w.stop()


def _topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    # The broker acquires whole record batches (librdkafka's share consumer has no strict
    # record limit, KIP-1206): batches of 100 records let 4 tasks share the partition.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 100})
    for i, value in enumerate(values):
        producer.produce(topic, value)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _create(worker: RestWorker, name: str, **config: str) -> None:
    response = worker.http.put(f"/connectors/{name}/config", json={"name": name, **config})
    assert response.status_code in (200, 201), response.text


def _written(folder: Path) -> dict[str, list[int]]:
    """Per task log, the values it wrote."""
    return {
        stem: [int(line["v"]) for line in lines if "v" in line]  # type: ignore[call-overload]
        for stem, lines in read_logs(folder).items()
    }


def _share_config(topic: str, folder: Path, tasks: int, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SINK,
        "topics": topic,
        "tasks.max": str(tasks),
        "dir": str(folder),
        "per.record.ms": "1",
        "consumer.group.type": "share",
        "consumer.override.max.poll.records": "100",
        "share.record.lock.duration.ms": "5000",
        **extra,
    }


def test_four_tasks_share_one_partition_exactly_once(
    worker: RestWorker, share_broker: SessionBroker, tmp_path: Path
) -> None:
    bootstrap = share_broker.bootstrap_servers
    total = 20_000
    topic = _topic(bootstrap, "share-spread")
    _produce(bootstrap, topic, [str(i).encode() for i in range(total)])
    _create(worker, "share-spread", **_share_config(topic, tmp_path, 4))

    def done() -> int:
        return sum(len(v) for v in _written(tmp_path).values())

    wait_for(lambda: done() >= total, 240, f"the 4 tasks to write {total} records")
    time.sleep(1)  # anything beyond the total would be a duplicate: give it a moment to show
    written = _written(tmp_path)
    counts = Counter(v for values in written.values() for v in values)
    assert sorted(counts) == list(range(total))  # none lost
    assert max(counts.values()) == 1  # none twice
    per_task = {stem: len(values) for stem, values in written.items()}
    assert len(per_task) == 4, per_task
    assert all(n > total / 10 for n in per_task.values()), per_task

    status = worker.http.get("/connectors/share-spread/status").json()
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"] * 4
    assert status["share_group"] == "connect-share-spread"

    def accepted() -> float:
        text = worker.http.get("/metrics").text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("connectrt_task_share_accepted_total{")
            and 'connector="share-spread"' in line
        )

    wait_for(lambda: accepted() == total, 60, "/metrics to count every record accepted")

    offsets = worker.http.patch(
        "/connectors/share-spread/offsets",
        json={
            "offsets": [
                {
                    "partition": {"kafka_topic": topic, "kafka_partition": 0},
                    "offset": {"kafka_offset": 0},
                }
            ]
        },
    )
    assert offsets.status_code == 400, offsets.text
    assert "share group" in offsets.json()["message"]
    worker.http.delete("/connectors/share-spread")


@pytest.mark.slow
def test_a_killed_task_loses_nothing_and_duplicates_only_what_it_held(
    worker: RestWorker, share_broker: SessionBroker, tmp_path: Path
) -> None:
    bootstrap = share_broker.bootstrap_servers
    total = 8_000
    topic = _topic(bootstrap, "share-kill")
    _produce(bootstrap, topic, [str(i).encode() for i in range(total)])
    _create(worker, "share-kill", **_share_config(topic, tmp_path, 4))

    def busy_task() -> Path | None:
        """The log of a task that has written more than 200 records, if any."""
        for path in sorted(tmp_path.glob("task-*.jsonl")):
            if len(path.read_text().splitlines()) > 200:
                return path
        return None

    wait_for(lambda: busy_task() is not None, 120, "a task to write 200 records")
    victim = busy_task()
    assert victim is not None
    pid = int(victim.stem.rsplit("-", 1)[1])
    assert pid != os.getpid()  # a task process, not the test's
    os.kill(pid, signal.SIGKILL)
    at_kill = sum(len(v) for v in _written(tmp_path).values())
    assert at_kill < total  # mid-stream

    def written_total() -> int:
        return len(set(v for values in _written(tmp_path).values() for v in values))

    wait_for(lambda: written_total() >= total, 240, f"all {total} records written")
    time.sleep(1)
    logs = read_logs(tmp_path)
    counts = Counter(int(line["v"]) for lines in logs.values() for line in lines if "v" in line)  # type: ignore[call-overload]
    assert sorted(counts) == list(range(total))  # 0 lost
    duplicates = {v for v, n in counts.items() if n > 1}
    # What the killed task had acquired and not acknowledged: its last batch (a task
    # acknowledges a batch before it polls the next one), whether flushed or not.
    lines = logs[victim.stem]
    last_batch = max(int(line["b"]) for line in lines if "b" in line)  # type: ignore[call-overload]
    held = {int(line["v"]) for line in lines if line.get("b") == last_batch}  # type: ignore[call-overload]
    assert duplicates <= held, sorted(duplicates - held)[:20]
    assert all(n <= 2 for n in counts.values())
    worker.http.delete("/connectors/share-kill")


def test_poison_records_go_to_the_dead_letter_queue(
    worker: RestWorker, share_broker: SessionBroker, tmp_path: Path
) -> None:
    bootstrap = share_broker.bootstrap_servers
    total = 3_000
    topic = _topic(bootstrap, "share-poison")
    dlq = f"{topic}-dlq"
    values = [b"{poison" if i % 100 == 7 else str(i).encode() for i in range(total)]
    poison = {i for i in range(total) if i % 100 == 7}
    _produce(bootstrap, topic, values)
    _create(
        worker,
        "share-poison",
        **_share_config(
            topic,
            tmp_path,
            3,
            **{
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        ),
    )
    good = total - len(poison)
    wait_for(
        lambda: sum(len(v) for v in _written(tmp_path).values()) >= good,
        180,
        f"the {good} good records written",
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([dlq])
    dead: dict[int, dict[str, bytes]] = {}
    deadline = time.monotonic() + 120
    while len(dead) < len(poison) and time.monotonic() < deadline:
        for msg in consumer.consume(500, 1.0):
            if msg.error() is None:
                headers = dict(msg.headers() or [])
                dead[int(headers["__connect.errors.offset"])] = headers
    consumer.close()
    assert set(dead) == poison  # every poison record, by its offset in the topic
    headers = next(iter(dead.values()))
    assert headers["__connect.errors.topic"] == topic.encode()
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    counts = Counter(v for values in _written(tmp_path).values() for v in values)
    assert sorted(counts) == sorted(set(range(total)) - poison)
    assert max(counts.values()) == 1
    worker.http.delete("/connectors/share-poison")


def test_a_bad_group_type_is_refused_per_field(worker: RestWorker, tmp_path: Path) -> None:
    response = worker.http.put(
        "/connector-plugins/ShareLogSink/config/validate",
        json={
            "connector.class": SINK,
            "name": "x",
            "topics": "t",
            "dir": str(tmp_path),
            "consumer.group.type": "queue",
        },
    )
    if response.status_code == 404:  # alias not known: the class path
        response = worker.http.put(
            f"/connector-plugins/{SINK}/config/validate",
            json={
                "connector.class": SINK,
                "name": "x",
                "topics": "t",
                "dir": str(tmp_path),
                "consumer.group.type": "queue",
            },
        )
    assert response.status_code == 200, response.text
    errors = {
        c["value"]["name"]: c["value"]["errors"]
        for c in response.json()["configs"]
        if c["value"]["errors"]
    }
    assert list(errors) == ["consumer.group.type"], errors
    created = worker.http.put(
        "/connectors/bad-type/config",
        json={
            "connector.class": SINK,
            "topics": "t",
            "dir": str(tmp_path),
            "consumer.group.type": "q",
        },
    )
    assert created.status_code == 400
    assert "consumer.group.type" in created.json()["message"]
