"""kill -9 of a standalone worker running the JDBC sink in exactly-once insert mode: no duplicates.

A topic of 200k records (3 partitions) is drained by ``JdbcSinkConnector`` with
``insert.mode=insert``, ``pk.mode=none`` (so the table itself would accept duplicates) and
``exactly.once.enabled=true`` into PostgreSQL. The worker (``connectrt standalone``, a real OS
process) is killed with SIGKILL at three random points and restarted each time. At every kill:

* the rows in the table equal the offsets stored in the offsets table (rows and offsets commit
  in one transaction, so they can never disagree);
* "in flight" = rows written but not yet covered by the consumer group's committed offsets:
  exactly what an at-least-once sink would write again after the restart.

At the end the table holds exactly one row per record: 200k rows, 200k distinct
(partition, offset). The contrast run does the same with exactly-once off, one kill, and shows
the duplicates at-least-once delivery produces. Its bound comes from what was committed: below
each partition's committed offset at the kill every record has its row, and no row is added
after the kill (the restart resumes at the committed offsets, any later rebalance at offsets
committed later still), so every duplicate lies at or after the committed position.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic
from tests.e2e.standalone import start_standalone

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.postgres]

RECORDS = 200_000
PARTITIONS = 3
SCHEMA = {
    "type": "struct",
    "name": "event",
    "optional": False,
    "fields": [{"field": "n", "type": "int64", "optional": False}],
}


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    prefix = json.dumps({"schema": SCHEMA, "payload": {"n": 0}})[: -len("0}}")]
    for i in range(count):
        while True:
            try:
                producer.produce(topic, f"{prefix}{i}}}}}".encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def _write_configs(tmp: Path, bootstrap: str, topic: str, url: str, exactly_once: bool) -> None:
    (tmp / "worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        f"offset.storage.topic=offsets-{topic}\n"
        "offset.storage.partitions=1\n"
        "offset.flush.interval.ms=1500\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        "listeners=http://127.0.0.1:0\n"
    )
    (tmp / "sink.properties").write_text(
        f"name=sink-{topic}\n"
        "connector.class=io.confluent.connect.jdbc.JdbcSinkConnector\n"
        f"topics={topic}\n"
        f"connection.url={url}\n"
        "table.name.format=events\n"
        "auto.create=true\n"
        "insert.mode=insert\n"
        "pk.mode=none\n"
        f"exactly.once.enabled={str(exactly_once).lower()}\n"
        "transforms=coords\n"
        "transforms.coords.type=org.apache.kafka.connect.transforms.InsertField$Value\n"
        "transforms.coords.partition.field=kpartition\n"
        "transforms.coords.offset.field=koffset\n"
    )


def _scalar(engine: sa.Engine, sql: str) -> int:
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(sql)).scalar() or 0)
    except sa.exc.ProgrammingError:  # table not created yet
        return 0


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset per partition (0 where it committed none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed(
            [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in committed}


def _rows_below(engine: sa.Engine, committed: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Per partition: (rows, distinct offsets) of the records before its committed offset."""
    query = sa.text(
        "SELECT count(*), count(DISTINCT koffset) FROM events "
        "WHERE kpartition = :p AND koffset < :end"
    )
    below: dict[int, tuple[int, int]] = {}
    with engine.connect() as conn:
        for p, end in committed.items():
            rows, distinct = conn.execute(query, {"p": p, "end": end}).one()
            below[p] = (int(rows), int(distinct))
    return below


@dataclass
class Kill:
    """What the table and the consumer group held right after one kill -9."""

    rows: int
    committed: dict[int, int]  # the group's committed offset per partition
    stored: int  # sum of the offsets table (exactly-once), -1 otherwise
    below: dict[int, tuple[int, int]]  # _rows_below(committed)

    @property
    def in_flight(self) -> int:
        """Rows written but not covered by the committed offsets."""
        return self.rows - sum(self.committed.values())


def _wait(
    predicate: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _run(
    broker: EmbeddedBroker,
    postgres: Any,
    tmp_path: Path,
    topic: str,
    records: int,
    kill_fractions: list[float],
    exactly_once: bool,
) -> tuple[sa.Engine, list[Kill]]:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    _produce(bootstrap, topic, records)
    url = postgres.create_database(topic.replace("-", "_")[-40:])
    _write_configs(tmp_path, bootstrap, topic, url, exactly_once)
    engine = sa.create_engine(url)
    group = f"connect-sink-{topic}"
    kills: list[Kill] = []
    worker = start_standalone(tmp_path, "worker-0.log")
    try:
        for i, fraction in enumerate(kill_fractions):
            target = int(records * fraction)
            _wait(
                lambda t=target: (  # type: ignore[misc]
                    _scalar(engine, "SELECT count(*) FROM events") >= t
                    and sum(_committed(bootstrap, group, topic).values()) > 0
                ),
                180,
                f"{target} rows and a sink commit (a group join included)",
                worker,
            )
            _kill(worker)
            committed = _committed(bootstrap, group, topic)  # final: the worker is dead
            kills.append(
                Kill(
                    rows=_scalar(engine, "SELECT count(*) FROM events"),
                    committed=committed,
                    stored=(
                        _scalar(engine, "SELECT sum(next_offset) FROM __connect_offsets")
                        if exactly_once
                        else -1
                    ),
                    below=_rows_below(engine, committed),
                )
            )
            worker = start_standalone(tmp_path, f"worker-{i + 1}.log")
        _wait(
            lambda: (
                _scalar(engine, "SELECT count(DISTINCT (kpartition, koffset)) FROM events")
                >= records
            ),
            240,
            "every record",
            worker,
        )
        # Let the restarted worker commit and settle: late duplicates would show up now.
        _wait(
            lambda: sum(_committed(bootstrap, group, topic).values()) >= records,
            60,
            "the sink to commit every record (a group join after the restart included)",
            worker,
        )
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    return engine, kills


def test_kill_9_three_times_leaves_exactly_one_row_per_record(
    broker: EmbeddedBroker, postgres: Any, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    fractions = sorted(rnd.uniform(lo, lo + 0.2) for lo in (0.1, 0.4, 0.7))
    engine, kills = _run(
        broker, postgres, tmp_path, unique_name("eos"), RECORDS, fractions, exactly_once=True
    )
    try:
        total = _scalar(engine, "SELECT count(*) FROM events")
        distinct = _scalar(engine, "SELECT count(DISTINCT (kpartition, koffset)) FROM events")
        values = _scalar(engine, "SELECT count(DISTINCT n) FROM events")
    finally:
        engine.dispose()
    print(f"\nexactly-once, seed {seed}:")
    for i, k in enumerate(kills, 1):
        print(
            f"  kill {i}: {k.rows} rows in the table, {sum(k.committed.values())} committed to "
            f"Kafka, {k.in_flight} in flight (written, not committed to Kafka)"
        )
    print(f"  end: {total} rows, {distinct} distinct (partition, offset)")
    for k in kills:
        assert k.rows == k.stored, "rows and stored offsets disagree after a kill"
        assert k.in_flight >= 0
    assert sum(k.in_flight for k in kills) > 0, "no kill caught records in flight"
    assert total == RECORDS
    assert distinct == RECORDS
    assert values == RECORDS


def test_without_exactly_once_a_kill_duplicates_what_was_in_flight(
    broker: EmbeddedBroker, postgres: Any, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    records = 60_000
    engine, kills = _run(
        broker, postgres, tmp_path, unique_name("alo"), records, [0.5], exactly_once=False
    )
    (kill,) = kills
    try:
        total = _scalar(engine, "SELECT count(*) FROM events")
        distinct = _scalar(engine, "SELECT count(DISTINCT (kpartition, koffset)) FROM events")
        below_at_end = _rows_below(engine, kill.committed)
    finally:
        engine.dispose()
    duplicates = total - records
    print(
        f"\nat-least-once: {kill.in_flight} in flight at the kill, {duplicates} duplicates "
        f"after the restart ({total} rows for {records} records)"
    )
    assert distinct == records  # nothing lost
    assert sum(kill.committed.values()) > 0  # the kill waited for a commit
    for p, end in kill.committed.items():
        # Committed only what was written: every record before the offset has its row.
        assert kill.below[p][1] == end, f"partition {p}: committed beyond what was written"
    # The at-least-once bound: the restart (and any rebalance after it) resumed at or after
    # the committed offsets, so no row was added before them; every duplicate lies after.
    assert below_at_end == kill.below, f"rows added before the committed offsets {kill.committed}"
