"""BatchingSinkTask on the real worker and broker: every record written once, offsets committed.

The sink (``tests.plugins.batching_file_sink``) appends each batch to a file and fsyncs it.
With transient write failures (in ``put`` and in ``pre_commit``) every record lands exactly
once; after a task failure the committed offsets cover only records already in the file, and
the restarted task completes the file, writing only records at or after the offsets committed
when it failed (those may come twice; nothing before them may, whatever rebalances follow).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, produce

pytestmark = pytest.mark.integration

CONNECTOR = "tests.plugins.batching_file_sink.BatchingFileSink"
PARTITIONS = 3


def _written(path: Path) -> Counter[tuple[int, int]]:
    if not path.exists():
        return Counter()
    lines = path.read_text(encoding="utf-8").splitlines()
    return Counter((d["p"], d["o"]) for d in map(json.loads, lines))


def _committed(bootstrap: str, name: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"connect-{name}"})
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: max(tp.offset, 0) for tp in consumer.committed(tps, timeout=10)}
    finally:
        consumer.close()


def _end_offsets(written: Counter[tuple[int, int]]) -> dict[int, int]:
    ends = dict.fromkeys(range(PARTITIONS), 0)
    for p, o in written:
        ends[p] = max(ends[p], o + 1)
    return ends


def _fill(broker: EmbeddedBroker, topic: str, n: int) -> None:
    create_topic(broker.bootstrap_servers, topic, partitions=PARTITIONS)
    produce(broker.bootstrap_servers, topic, (f"r{i}" for i in range(n)), key=lambda i: b"%d" % i)


def test_every_record_written_once_despite_transient_failures(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, name, n = unique_name("batching"), unique_name("batching-sink"), 3000
    _fill(broker, topic, n)
    out = tmp_path / "out.jsonl"
    config = {
        "connector.class": CONNECTOR,
        "topics": topic,
        "file": str(out),
        "batch.size": "64",
        "consumer.override.max.poll.records": "30",
        "fail.retriable.every": "5",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(name, config)
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics(name).values()) >= n,
            timeout=90,
            what="all records committed",
        )
        retries = sum(m.retries for m in h.metrics(name).values())
    written = _written(out)
    assert sum(written.values()) == n, "records lost or written twice"
    assert set(written.values()) == {1}
    assert _committed(broker.bootstrap_servers, name, topic) == _end_offsets(written)
    assert retries > 0, "the retriable failures in put() were exercised"


def test_a_failed_task_commits_only_written_records_and_its_restart_completes(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, name, n = unique_name("batching-crash"), unique_name("batching-crash-sink"), 2000
    _fill(broker, topic, n)
    out = tmp_path / "out.jsonl"
    config = {
        "connector.class": CONNECTOR,
        "topics": topic,
        "file": str(out),
        "batch.size": "100",
        "consumer.override.max.poll.records": "40",
        "write.delay.ms": "30",
        "fail.fatal.after": "900",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    with WorkerHarness(broker.bootstrap_servers, {"offset.flush.interval.ms": "50"}) as h:
        h.start_connector(name, config)
        h.wait_for_tasks(name, State.FAILED, timeout=180)  # a join, 900 records at 30 ms a batch
        at_failure = _written(out)
        committed = _committed(broker.bootstrap_servers, name, topic)
        assert 0 < sum(committed.values()) < n, "commits happened before the failure"
        for p, end in committed.items():
            unwritten = [o for o in range(end) if (p, o) not in at_failure]
            assert unwritten == [], f"partition {p}: committed unwritten offsets"
        h.running.restart_task(name, 0)
        h.wait_for_tasks(name, State.RUNNING, timeout=60)
        h.wait_until(
            lambda: (
                sum(_written(out).values()) >= n
                and sum(_committed(broker.bootstrap_servers, name, topic).values()) == n
            ),
            timeout=90,
            what="the restarted task wrote and committed everything",
        )
    written = _written(out)
    assert len(written) == n, "every record written"
    # Every write after the failure (first or again) starts from what was committed then: the
    # restarted task resumes at the committed offsets, and any later rebalance at offsets
    # committed later still.
    after_failure = written - at_failure
    below = sorted((p, o) for p, o in after_failure if o < committed[p])
    assert below == [], f"written again after the failure below the committed offsets {committed}"
