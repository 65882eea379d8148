"""The Iceberg sink in a real worker on the embedded broker, into a pyiceberg SQL catalog on
SQLite with a local warehouse, read back with pyiceberg.

One worker runs, at once: a two-task connector writing a two-partition topic into one
auto-created table (both tasks' partitions must survive in the snapshot summary); an upsert
connector with id columns and schema evolution; and a connector whose unwritable records go to
the dead letter queue. The connector class is given under Apache Iceberg's name. Resuming after
restarts is shown by ``tests/e2e/test_iceberg_exactly_once.py`` (real worker processes killed
and restarted) and the task-level tests in ``tests/unit/test_iceberg_sink.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError
from sqlalchemy.exc import OperationalError

from connectors.iceberg.offsets import offsets_key
from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic

pytestmark = [pytest.mark.integration]

SINK = "org.apache.iceberg.connect.IcebergSinkConnector"
ID = {"field": "id", "type": "int64", "optional": False}
NAME = {"field": "name", "type": "string", "optional": True}
AT = {
    "field": "at",
    "type": "int64",
    "optional": True,
    "name": "org.apache.kafka.connect.data.Timestamp",
    "version": 1,
}
V1 = {"type": "struct", "name": "event", "optional": False, "fields": [ID, NAME, AT]}
V2 = {**V1, "fields": [*V1["fields"], {"field": "colour", "type": "string", "optional": True}]}


def value(i: int, name: str | None = None, schema: dict[str, Any] = V1, **extra: Any) -> bytes:
    payload = {"id": i, "name": name or f"n{i}", "at": 1_700_000_000_000 + i, **extra}
    return json.dumps({"schema": schema, "payload": payload}).encode()


def _rows(catalog: Catalog, table: str) -> pa.Table | None:
    try:
        return catalog.load_table(table).scan().to_arrow()
    except (NoSuchTableError, OperationalError):  # not created yet; the catalog busy
        return None


def _count(catalog: Catalog, table: str) -> int:
    rows = _rows(catalog, table)
    return -1 if rows is None else rows.num_rows


def _offsets(catalog: Catalog, table: str, topic: str, connector: str) -> dict[str, int]:
    try:
        snapshot = catalog.load_table(table).current_snapshot()
    except (NoSuchTableError, OperationalError):  # not created yet; the catalog busy
        return {}
    raw = snapshot.summary.get(offsets_key(topic, f"connect-{connector}")) if snapshot else None
    return json.loads(raw) if raw else {}


def _wait(
    harness: WorkerHarness, check: Callable[[], bool], what: str, shown: Callable[[], Any]
) -> None:
    """Wait (generously: three consumer groups join at once on a busy machine); on a timeout
    print the tasks' states, traces and counters, and ``shown()`` (what the check reads)."""
    try:
        harness.wait_until(check, 180, what)
    except TimeoutError:
        worker = harness.running
        for name in worker.connectors():
            print(name, [(s.state, (s.trace or "")[-800:]) for s in harness.task_states(name)])
            for index, handle in sorted(worker.runners(name).items()):
                m = handle.metrics
                print(
                    f"  task {index}: polled {m.records_polled}, put {m.records_put}, "
                    f"commits {m.offset_commits} ({m.offset_commit_failures} failed)"
                )
        print("the check read:", shown())
        raise


def test_tasks_upserts_evolution_and_dlq_through_the_worker(
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="connectors.iceberg")  # commits, races, a busy catalog
    bs = broker.bootstrap_servers
    appends, upserts, bad = unique_name("ice-app"), unique_name("ice-ups"), unique_name("ice-bad")
    dlq = unique_name("ice-dlq")
    create_topic(bs, appends, partitions=2)
    create_topic(bs, upserts, partitions=1)
    create_topic(bs, bad, partitions=1)
    create_topic(bs, dlq, partitions=1)
    uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", f"file://{tmp_path / 'warehouse'}"
    catalog = load_catalog("iceberg", type="sql", uri=uri, warehouse=warehouse)
    common = {
        "connector.class": SINK,
        "iceberg.catalog.type": "sql",
        "iceberg.catalog.uri": uri,
        "iceberg.catalog.warehouse": warehouse,
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.control.commit.interval-ms": "500",
    }
    # Keyed, so that both partitions get records (and both tasks work): unkeyed records
    # produced in a quick loop all stick to one partition (librdkafka's sticky partitioner).
    produce(bs, appends, (value(i) for i in range(100)), key=lambda n: b"%d" % n)
    produce(
        bs,
        upserts,
        [value(i % 5, f"v{i}") for i in range(20)]
        + [value(i, f"w{i}", V2, colour="red") for i in (1, 7)],
    )
    text = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "string"}]}
    odd = json.dumps({"schema": text, "payload": {"id": "x"}}).encode()
    schemaless = b'{"schema": null, "payload": 3}'
    produce(bs, bad, [value(1), odd, schemaless, value(2)])
    connectors = {
        appends: {"topics": appends, "tasks.max": "2", "iceberg.tables": "db.appends"},
        upserts: {
            "topics": upserts,
            "iceberg.tables": "db.upserts",
            "iceberg.tables.default-id-columns": "id",
            "iceberg.tables.evolve-schema-enabled": "true",
        },
        bad: {
            "topics": bad,
            "iceberg.tables": "db.bad",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    }
    harness = WorkerHarness(bs).start()
    try:
        for name, extra in connectors.items():
            harness.start_connector(name, {**common, **extra})
        _wait(
            harness,
            lambda: (
                _count(catalog, "db.appends") == 100
                and set(_offsets(catalog, "db.appends", appends, appends)) == {"0", "1"}
            ),
            "100 rows from two tasks, both partitions' offsets in the snapshot summary",
            lambda: (
                _count(catalog, "db.appends"),
                _offsets(catalog, "db.appends", appends, appends),
            ),
        )
        assert sum(_offsets(catalog, "db.appends", appends, appends).values()) == 100
        _wait(
            harness,
            lambda: _offsets(catalog, "db.upserts", upserts, upserts) == {"0": 22},
            "the upserts committed up to the last record",
            lambda: _offsets(catalog, "db.upserts", upserts, upserts),
        )
        _wait(
            harness,
            lambda: (
                _count(catalog, "db.bad") == 2 and sum(map(len, read_topic(bs, dlq).values())) == 2
            ),
            "the two good records in the table, the two bad ones in the dead letter queue",
            lambda: (_count(catalog, "db.bad"), sum(map(len, read_topic(bs, dlq).values()))),
        )
    finally:
        harness.stop()
    rows = _rows(catalog, "db.appends")
    assert rows is not None and rows.num_rows == 100
    assert pc.count_distinct(rows.column("id")).as_py() == 100
    assert rows.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert rows.schema.field("id").type == pa.int64()
    ups = _rows(catalog, "db.upserts")
    assert ups is not None
    got = sorted((r["id"], r["name"], r["colour"]) for r in ups.to_pylist())
    assert got == [
        (0, "v15", None),
        (1, "w1", "red"),
        (2, "v17", None),
        (3, "v18", None),
        (4, "v19", None),
        (7, "w7", "red"),
    ]
    dead = sorted(v or b"" for _, v in read_topic(bs, dlq)[0])
    assert dead == sorted([odd, schemaless])
