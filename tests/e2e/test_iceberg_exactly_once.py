"""kill -9 of a standalone worker running the Iceberg sink: 0 lost, 0 duplicated in the table.

A 4-partition topic is drained by ``IcebergSinkConnector`` (two tasks, appends, a pyiceberg SQL
catalog on SQLite, a local warehouse) with each record's partition and offset copied into its
row. The worker (``connectrt standalone``, a real OS process) is killed with SIGKILL at random
points and restarted each time. At every kill the rows in the table equal the sum of the
offsets in its snapshot summary (rows and offsets commit in one snapshot, so they can never
disagree), and the consumer group's committed offsets never pass them. After every other kill
the consumer group is deleted before the restart, as if its commits were lost (the consumers
start from the earliest offsets):
only the seek to the tables' offsets and the skipping of what a snapshot holds keep the table
from getting every record again. At the end the table holds exactly one row per record.

The records are produced while the worker runs, spread over ``ICEBERG_EOS_SECONDS`` (default
20), so every kill lands while records are still arriving and being buffered. On a slow machine
the producer is held back instead (a :class:`Gate`): until the last kill it never gets more than
a tenth of the records past the next kill's target, so no kill can land after the last record. Size:
``ICEBERG_EOS_RECORDS`` records (default 20000) and ``ICEBERG_EOS_KILLS`` kills (default 2),
small enough for ``make test`` on two cores; the issue's figure is 200000 records, 5 kills::

    ICEBERG_EOS_RECORDS=200000 ICEBERG_EOS_KILLS=5 ICEBERG_EOS_SECONDS=60 \
        pytest tests/e2e/test_iceberg_exactly_once.py -s
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError
from sqlalchemy.exc import OperationalError

from connectors.iceberg.offsets import offsets_key
from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic
from tests.e2e.standalone import start_standalone

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECORDS = int(os.environ.get("ICEBERG_EOS_RECORDS", "20000"))
KILLS = int(os.environ.get("ICEBERG_EOS_KILLS", "2"))
SECONDS = float(os.environ.get("ICEBERG_EOS_SECONDS", "20"))
PARTITIONS = 4
SCHEMA = {
    "type": "struct",
    "name": "event",
    "optional": False,
    "fields": [{"field": "n", "type": "int64", "optional": False}],
}


class Gate:
    """How many records the producer thread may have produced so far; the test raises it.
    Thread-safe: the test thread calls :meth:`allow`, the producer thread :meth:`wait_below`."""

    def __init__(self, allowed: int) -> None:
        self._allowed = allowed
        self._changed = threading.Condition()

    def allow(self, allowed: int) -> None:
        with self._changed:
            self._allowed = max(self._allowed, allowed)
            self._changed.notify_all()

    def wait_below(self, index: int) -> None:
        """Block until record ``index`` may be produced."""
        with self._changed:
            self._changed.wait_for(lambda: index < self._allowed)


def _produce(bootstrap: str, topic: str, count: int, seconds: float, gate: Gate) -> None:
    """Produce ``count`` records evenly over about ``seconds`` (a live stream), never past what
    ``gate`` allows."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    prefix = json.dumps({"schema": SCHEMA, "payload": {"n": 0}})[: -len("0}}")]
    chunk = 500
    start = time.monotonic()
    for i in range(count):
        if i % chunk == 0:
            producer.poll(0)
            gate.wait_below(i + chunk - 1)
        while True:
            try:
                producer.produce(topic, f"{prefix}{i}}}}}".encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if i % chunk == chunk - 1:
            producer.poll(0)
            ahead = start + seconds * (i + 1) / count - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    assert producer.flush(60) == 0


def _write_configs(tmp: Path, bootstrap: str, topic: str) -> None:
    (tmp / "worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        f"offset.storage.topic=offsets-{topic}\n"
        "offset.storage.partitions=1\n"
        "offset.flush.interval.ms=1000\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        "listeners=http://127.0.0.1:0\n"
    )
    (tmp / "sink.properties").write_text(
        f"name=sink-{topic}\n"
        "connector.class=org.apache.iceberg.connect.IcebergSinkConnector\n"
        f"topics={topic}\n"
        "tasks.max=2\n"
        "iceberg.tables=db.events\n"
        "iceberg.tables.auto-create-enabled=true\n"
        "iceberg.catalog.type=sql\n"
        f"iceberg.catalog.uri=sqlite:///{tmp / 'catalog.db'}\n"
        f"iceberg.catalog.warehouse=file://{tmp / 'warehouse'}\n"
        "iceberg.control.commit.interval-ms=700\n"
        "transforms=coords\n"
        "transforms.coords.type=org.apache.kafka.connect.transforms.InsertField$Value\n"
        "transforms.coords.partition.field=kpartition\n"
        "transforms.coords.offset.field=koffset\n"
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _table(catalog: Catalog) -> pa.Table | None:
    try:
        return catalog.load_table("db.events").scan().to_arrow()
    except (NoSuchTableError, OperationalError):  # not created yet; the catalog busy
        return None


def _rows(catalog: Catalog) -> int:
    rows = _table(catalog)
    return 0 if rows is None else rows.num_rows


def _distinct(catalog: Catalog) -> int:
    rows = _table(catalog)
    if rows is None:
        return 0
    coords = pc.add(
        pc.multiply(rows.column("kpartition").cast(pa.int64()), 1 << 40), rows["koffset"]
    )
    return int(pc.count_distinct(coords).as_py())


def _stored(catalog: Catalog, topic: str) -> dict[int, int]:
    """The next offset per partition in the table's current snapshot summary."""
    try:
        snapshot = catalog.load_table("db.events").current_snapshot()
    except (NoSuchTableError, OperationalError):  # not created yet; the catalog busy
        return {}
    raw = snapshot.summary.get(offsets_key(topic, f"connect-sink-{topic}")) if snapshot else None
    return {int(p): o for p, o in json.loads(raw).items()} if raw else {}


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed(
            [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in committed}


def _rewind_group(bootstrap: str, group: str) -> None:
    """Delete the (stopped) connector's consumer group, as if its commits had been lost: the
    restarted tasks' consumers start from the earliest offsets, and only the tables' offsets
    can then prevent duplicates."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 60  # the killed member leaves after its session timeout
    while True:
        try:
            admin.delete_consumer_groups([group])[group].result(timeout=30)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _wait(
    predicate: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_kill_9_at_random_points_leaves_exactly_one_row_per_record(
    broker: EmbeddedBroker, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    step = 0.8 / KILLS
    fractions = [rnd.uniform(0.05 + i * step, 0.05 + (i + 1) * step) for i in range(KILLS)]
    bootstrap = broker.bootstrap_servers
    topic = unique_name("ice-eos")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    _write_configs(tmp_path, bootstrap, topic)
    targets = [int(RECORDS * fraction) for fraction in fractions]
    ahead = RECORDS // 10  # how far past the next kill's target the producer may get
    gate = Gate(targets[0] + ahead)
    producer = threading.Thread(
        target=_produce, args=(bootstrap, topic, RECORDS, SECONDS, gate), name="eos-producer"
    )
    catalog = load_catalog(
        "iceberg",
        type="sql",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=f"file://{tmp_path / 'warehouse'}",
    )
    group = f"connect-sink-{topic}"
    kills: list[tuple[int, dict[int, int], dict[int, int]]] = []
    started = time.monotonic()
    worker = start_standalone(tmp_path, "worker-0.log")
    producer.start()
    try:
        for i in range(KILLS):
            # At least one commit of the restarted worker: each kill interrupts a writing one.
            target = max(targets[i], kills[-1][0] + 1 if kills else 0)
            gate.allow(target + ahead)
            _wait(
                lambda t=target: sum(_stored(catalog, topic).values()) >= t,  # type: ignore[misc]
                240,
                f"{target} records committed to the table (a group join included)",
                worker,
            )
            time.sleep(rnd.uniform(0, 0.7))  # kill anywhere in the commit cycle
            _kill(worker)
            kills.append(
                (_rows(catalog), _stored(catalog, topic), _committed(bootstrap, group, topic))
            )
            if i % 2 == 0:
                _rewind_group(bootstrap, group)
                assert sum(_committed(bootstrap, group, topic).values()) == 0
            worker = start_standalone(tmp_path, f"worker-{i + 1}.log")
        gate.allow(RECORDS)
        _wait(
            lambda: sum(_stored(catalog, topic).values()) >= RECORDS,
            600,
            "every record committed to the table",
            worker,
        )
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
    finally:
        gate.allow(RECORDS)
        producer.join()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    elapsed = time.monotonic() - started
    total, distinct = _rows(catalog), _distinct(catalog)
    values = _table(catalog)
    assert values is not None
    print(f"\niceberg exactly-once, seed {seed}, {RECORDS} records, {KILLS} kills, {elapsed:.0f}s:")
    for i, (rows, stored, committed) in enumerate(kills, 1):
        print(
            f"  kill {i}: {rows} rows, {sum(stored.values())} in the snapshot offsets, "
            f"{sum(committed.values())} committed to Kafka"
            + ("; consumer group deleted before the restart" if i % 2 == 1 else "")
        )
    print(f"  end: {total} rows, {distinct} distinct (partition, offset)")
    for rows, stored, committed in kills:
        assert rows == sum(stored.values()), "rows and snapshot offsets disagree after a kill"
        assert rows < RECORDS, "a kill after the last record proves nothing"
        for p, offset in committed.items():
            assert offset <= stored.get(p, 0), "the consumer group got ahead of the table"
    assert total == RECORDS, f"{total - RECORDS} duplicated" if total > RECORDS else "lost"
    assert distinct == RECORDS
    assert int(pc.count_distinct(values.column("n")).as_py()) == RECORDS
    assert _stored(catalog, topic) == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
