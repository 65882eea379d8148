"""IcebergSinkTask against a real pyiceberg SQL catalog (SQLite) and a local warehouse.

The task is driven directly (``put``/``pre_commit``/``open``/``close`` as the runtime calls
them) with a recording context; the table is read back with pyiceberg. Covers auto-create with
typed columns, offsets in the snapshot summary and the seek on open, skipping what a snapshot
already holds, two tasks on one table keeping each other's offsets (with a commit race), upserts
with id columns, schema evolution, routing, the dead letter path and per-field validation.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog, load_catalog

from connectors.iceberg import IcebergSinkConnector, IcebergSinkTask
from connectors.iceberg.offsets import offsets_key
from connectrt.api import (
    ConfigError,
    ConnectError,
    ErrantRecordReporter,
    SinkRecord,
    SinkRecordBatch,
    TopicPartition,
)
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.testing.contexts import RecordingSinkTaskContext
from tests.docs_support import load_example

TOPIC = "orders"

V1 = (
    SchemaBuilder.struct()
    .name("order")
    .field("id", SchemaBuilder.int64())
    .field("name", SchemaBuilder.string().optional())
    .field("amount", Decimal.builder(2).optional())
    .field("at", Timestamp.builder().optional())
    .field("day", Date.builder().optional())
    .build()
)
V2 = (
    SchemaBuilder.struct()
    .name("order")
    .field("id", SchemaBuilder.int64())
    .field("name", SchemaBuilder.string().optional())
    .field("amount", Decimal.builder(2).optional())
    .field("at", Timestamp.builder().optional())
    .field("day", Date.builder().optional())
    .field("colour", SchemaBuilder.string().optional())
    .build()
)
AT = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)


def order(i: int, schema: Schema = V1, name: str | None = None, **extra: Any) -> Struct:
    s = (
        Struct(schema)
        .put("id", i)
        .put("name", name or f"n{i}")
        .put("amount", decimal.Decimal(i) + decimal.Decimal("0.25"))
        .put("at", AT + dt.timedelta(seconds=i))
        .put("day", dt.date(2024, 5, 1))
    )
    for k, v in extra.items():
        s.put(k, v)
    return s


def records(
    values: list[Any], partition: int = 0, first: int = 0, topic: str = TOPIC
) -> SinkRecordBatch:
    schemas = [v.schema if isinstance(v, Struct) else None for v in values]
    return SinkRecordBatch(
        SinkRecord(topic, partition, None, None, s, v, first + n)
        for n, (s, v) in enumerate(zip(schemas, values, strict=True))
    )


class ListReporter(ErrantRecordReporter):
    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> None:
        self.reported.append((record, error))


@pytest.fixture
def props(tmp_path: Path) -> dict[str, str]:
    return {
        "name": "ice",
        "iceberg.tables": "db.orders",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.type": "sql",
        "iceberg.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}",
        "iceberg.catalog.warehouse": f"file://{tmp_path / 'warehouse'}",
        "iceberg.control.commit.interval-ms": "1",
    }


@pytest.fixture
def catalog(props: dict[str, str]) -> Catalog:
    return load_catalog(
        "iceberg",  # the SQL catalog keeps tables per catalog name
        type="sql",
        uri=props["iceberg.catalog.uri"],
        warehouse=props["iceberg.catalog.warehouse"],
    )


class Tasks:
    """Started tasks, stopped at teardown."""

    def __init__(self) -> None:
        self.started: list[IcebergSinkTask] = []

    def start(
        self,
        props: dict[str, str],
        partitions: list[int],
        reporter: ErrantRecordReporter | None = None,
    ) -> tuple[IcebergSinkTask, RecordingSinkTaskContext]:
        task = IcebergSinkTask()
        context = RecordingSinkTaskContext(props, reporter)
        task.initialize(context)
        task.start(props)
        task.open([TopicPartition(TOPIC, p) for p in partitions])
        self.started.append(task)
        return task, context


@pytest.fixture
def tasks() -> Iterator[Tasks]:
    t = Tasks()
    yield t
    for task in t.started:
        task.stop()


def commit(task: IcebergSinkTask, partitions: list[int]) -> dict[TopicPartition, int]:
    """``pre_commit`` as the runtime calls it (the interval is 1 ms: it commits)."""
    return dict(task.pre_commit({TopicPartition(TOPIC, p): 10**9 for p in partitions}))


def summary_offsets(catalog: Catalog, table: str = "db.orders") -> dict[str, int]:
    snapshot = catalog.load_table(table).current_snapshot()
    assert snapshot is not None
    raw = snapshot.summary.get(offsets_key(TOPIC, "connect-ice"))
    return json.loads(raw) if raw else {}


def test_auto_create_writes_typed_columns_and_offsets_in_the_snapshot(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    task, _ = tasks.start(props, [0])
    task.put(records([order(i) for i in range(5)]))
    assert commit(task, [0]) == {TopicPartition(TOPIC, 0): 5}
    table = catalog.load_table("db.orders")
    arrow = table.scan().to_arrow().sort_by("id")
    assert arrow.num_rows == 5
    assert arrow.schema.field("id").type == pa.int64()
    assert not arrow.schema.field("id").nullable  # a required Connect field: required column
    assert arrow.schema.field("amount").type == pa.decimal128(38, 2)
    assert arrow.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert arrow.schema.field("day").type == pa.date32()
    row = arrow.slice(3, 1).to_pylist()[0]
    assert row["amount"] == decimal.Decimal("3.25")
    assert row["at"] == AT + dt.timedelta(seconds=3)
    assert row["day"] == dt.date(2024, 5, 1)
    assert summary_offsets(catalog) == {"0": 5}


def test_restart_seeks_to_the_table_offsets_and_skips_what_is_committed(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    task, _ = tasks.start(props, [0, 1])
    task.put(records([order(i) for i in range(4)], partition=0))
    task.put(records([order(i) for i in range(10, 13)], partition=1))
    commit(task, [0, 1])
    task.put(records([order(i) for i in range(4, 6)], partition=0, first=4))  # never committed
    task.stop()  # a crash: the buffered rows are lost, the offsets say where to resume
    again, context = tasks.start(props, [0, 1])
    assert context.rewinds == {TopicPartition(TOPIC, 0): 4, TopicPartition(TOPIC, 1): 3}
    # The consumer group lagged: the batch starts below the table's offset; only 4.. is new.
    again.put(records([order(i) for i in range(6)], partition=0))
    assert again.records_skipped_as_committed == 4
    assert commit(again, [0, 1]) == {TopicPartition(TOPIC, 0): 6, TopicPartition(TOPIC, 1): 3}
    ids = sorted(catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist())
    assert ids == [0, 1, 2, 3, 4, 5, 10, 11, 12]
    assert summary_offsets(catalog) == {"0": 6, "1": 3}


def test_two_tasks_keep_each_others_offsets_through_a_commit_race(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    a, _ = tasks.start(props, [0])
    b, _ = tasks.start(props, [1])
    a.put(records([order(i) for i in range(3)], partition=0))
    commit(a, [0])  # creates the table's first snapshot; b's table object is now stale
    b.put(records([order(i) for i in range(100, 105)], partition=1))
    a.put(records([order(3)], partition=0, first=3))
    commit(a, [0])
    commit(b, [1])  # loses the optimistic race once, reloads, merges a's offsets, commits
    assert summary_offsets(catalog) == {"0": 4, "1": 5}
    assert catalog.load_table("db.orders").scan().to_arrow().num_rows == 9
    a.stop()
    b.stop()
    # Restarted with the partitions swapped, each resumes where the other left off.
    _, c_context = tasks.start(props, [1])
    _, d_context = tasks.start(props, [0])
    assert c_context.rewinds == {TopicPartition(TOPIC, 1): 5}
    assert d_context.rewinds == {TopicPartition(TOPIC, 0): 4}


def test_a_partition_handed_over_in_a_rebalance_resumes_where_its_last_owner_committed(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    a, _ = tasks.start(props, [0])
    b, b_context = tasks.start(props, [1])
    b.put(records([order(i) for i in range(100, 102)], partition=1))
    commit(b, [1])
    a.put(records([order(i) for i in range(3)], partition=0))
    commit(a, [0])
    a.put(records([order(3)], partition=0, first=3))
    a.close([TopicPartition(TOPIC, 0)])  # commits what it buffered; b's table is now stale
    b.open([TopicPartition(TOPIC, 0)])
    assert b_context.rewinds[TopicPartition(TOPIC, 0)] == 4
    b.put(records([order(i) for i in range(6)], partition=0))  # from an older group offset
    commit(b, [0, 1])
    ids = sorted(catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist())
    assert ids == [0, 1, 2, 3, 4, 5, 100, 101]
    assert summary_offsets(catalog) == {"0": 6, "1": 2}


def test_a_partition_committed_by_another_writer_is_not_committed_again(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    a, _ = tasks.start(props, [0])
    b, _ = tasks.start(props, [0])  # a zombie: both think they own partition 0
    a.put(records([order(1)], partition=0))
    b.put(records([order(1)], partition=0))
    commit(a, [0])
    b.put(records([order(2)], partition=0, first=1))
    with pytest.raises(ConnectError, match="Another writer committed"):
        commit(b, [0])
    # b dropped what it buffered and took the table's offsets: delivered again (the runtime
    # rewinds after a failed commit), the record a wrote is skipped, the next one written.
    b.put(records([order(1), order(2)], partition=0))
    assert b.records_skipped_as_committed == 1
    commit(b, [0])
    assert sorted(catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist()) == [
        1,
        2,
    ]


def test_upserts_on_id_columns_keep_the_last_record_per_key(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    props = {**props, "iceberg.tables.default-id-columns": "id"}
    task, _ = tasks.start(props, [0])
    task.put(records([order(i, name=f"a{i}") for i in range(5)]))
    commit(task, [0])
    batch = [order(1, name="b1"), order(7, name="b7"), order(1, name="c1")]
    task.put(records(batch, first=5))
    commit(task, [0])
    table = catalog.load_table("db.orders")
    assert table.schema().identifier_field_names() == {"id"}
    rows = {r["id"]: r["name"] for r in table.scan().to_arrow().to_pylist()}
    assert rows == {0: "a0", 1: "c1", 2: "a2", 3: "a3", 4: "a4", 7: "b7"}
    # Upserting unchanged rows writes no data, yet the offsets still move forward.
    task.put(records([order(1, name="c1")], first=8))
    commit(task, [0])
    assert summary_offsets(catalog) == {"0": 9}


def test_schema_evolution_adds_columns_and_widens_types(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    props = {**props, "iceberg.tables.evolve-schema-enabled": "true"}
    narrow = SchemaBuilder.struct().field("id", SchemaBuilder.int32()).build()
    task, _ = tasks.start(props, [0])
    task.put(records([Struct(narrow).put("id", 1)]))
    commit(task, [0])
    task.put(records([order(2), order(3, V2, colour="red")], first=1))
    commit(task, [0])
    table = catalog.load_table("db.orders")
    schema = table.schema()
    assert str(schema.find_field("id").field_type) == "long"  # int widened to long
    assert not schema.find_field("colour").required
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["colour"]) for r in rows] == [
        (1, None, None),
        (2, "n2", None),
        (3, "n3", "red"),
    ]


def test_without_evolution_new_fields_are_dropped(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    task, _ = tasks.start(props, [0])
    task.put(records([order(1), order(2, V2, colour="red")]))
    commit(task, [0])
    table = catalog.load_table("db.orders")
    assert "colour" not in table.schema().column_names
    assert table.scan().to_arrow().num_rows == 2


def test_unwritable_records_go_to_the_reporter_and_the_rest_is_written(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    reporter = ListReporter()
    task, _ = tasks.start(props, [0], reporter)
    text = SchemaBuilder.struct().field("id", SchemaBuilder.string()).build()
    values: list[Any] = [order(1), "schemaless", order(2), Struct(text).put("id", "x"), None]
    task.put(records(values))
    assert commit(task, [0]) == {TopicPartition(TOPIC, 0): 5}
    ids = sorted(catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist())
    assert ids == [1, 2]  # the tombstone (offset 4) is skipped, not reported
    assert [r.kafka_offset for r, _ in reporter.reported] == [1, 3]
    assert "schema" in str(reporter.reported[0][1])
    assert "id" in str(reporter.reported[1][1])


def test_without_a_reporter_an_unwritable_record_fails_the_task(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    task, context = tasks.start(props, [0])
    task.put(records([order(0)]))
    commit(task, [0])
    task.put(records([order(1)], first=1))
    with pytest.raises(ConnectError, match="Cannot write record orders-0@3"):
        task.put(records([order(2), "schemaless"], first=2))
    # The failed put's buffered rows (and the earlier uncommitted ones) are dropped and the
    # consumer rewound: the close() of the failing task commits nothing that a restart would
    # write again.
    assert context.rewinds == {TopicPartition(TOPIC, 0): 1}
    task.close([TopicPartition(TOPIC, 0)])
    assert catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist() == [0]
    assert summary_offsets(catalog) == {"0": 1}


def test_a_missing_table_without_auto_create_fails_with_its_name(
    props: dict[str, str], tasks: Tasks
) -> None:
    props = {**props, "iceberg.tables.auto-create-enabled": "false"}
    with pytest.raises(ConnectError, match=r"Iceberg table db\.orders does not exist"):
        tasks.start(props, [0])


def test_routing_by_field_and_dynamic_tables(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    routed = {
        **props,
        "iceberg.tables": "db.small,db.big",
        "iceberg.tables.route-field": "name",
        "iceberg.table.db.small.route-regex": "s.*",  # Apache Iceberg's key
        "iceberg.tables.db.big.route-regex": "b.*",  # connectrt's earlier spelling
    }
    task, _ = tasks.start(routed, [0])
    task.put(records([order(1, name="s1"), order(2, name="b2"), order(3, name="x3")]))
    commit(task, [0])
    assert catalog.load_table("db.small").scan().to_arrow().column("id").to_pylist() == [1]
    assert catalog.load_table("db.big").scan().to_arrow().column("id").to_pylist() == [2]
    dynamic = {
        **props,
        "name": "dyn",
        "iceberg.tables": "",
        "iceberg.tables.dynamic-enabled": "true",
        "iceberg.tables.route-field": "name",
    }
    task, _ = tasks.start(dynamic, [0])
    task.put(records([order(1, name="db.One"), order(2, name="db.two")]))
    commit(task, [0])
    assert catalog.load_table("db.one").scan().to_arrow().column("id").to_pylist() == [1]
    assert catalog.load_table("db.two").scan().to_arrow().column("id").to_pylist() == [2]
    # A record naming no usable table goes to the dead letter queue, the others are written.
    reporter = ListReporter()
    task, _ = tasks.start(dynamic, [1], reporter)
    task.put(records([order(3, name="nonamespace"), order(4, name="db.two")], partition=1))
    commit(task, [1])
    assert [(r.kafka_offset, str(e)) for r, e in reporter.reported] == [
        (0, "Table name 'nonamespace' is not namespace.table")
    ]
    assert sorted(catalog.load_table("db.two").scan().to_arrow().column("id").to_pylist()) == [
        2,
        4,
    ]


def test_alter_offsets_moves_the_table_offsets(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    task, _ = tasks.start(props, [0, 1])
    task.put(records([order(i) for i in range(3)], partition=0))
    task.put(records([order(i) for i in range(3)], partition=1))
    commit(task, [0, 1])
    connector = IcebergSinkConnector()
    changes = {TopicPartition(TOPIC, 0): 1, TopicPartition(TOPIC, 1): None}
    assert connector.alter_offsets(props, changes)
    assert summary_offsets(catalog) == {"0": 1}


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"iceberg.tables": ""}, "iceberg.tables", "iceberg.tables.dynamic-enabled"),
        ({"iceberg.tables": "orders"}, "iceberg.tables", "not namespace.table"),
        (
            {"iceberg.tables.dynamic-enabled": "true"},
            "iceberg.tables.route-field",
            "needs a route field",
        ),
        ({"iceberg.control.commit.interval-ms": "0"}, "iceberg.control.commit.interval-ms", ""),
        ({"iceberg.tables.auto-create-enabled": "maybe"}, "iceberg.tables.auto-create-enabled", ""),
        ({"iceberg.catalog.type": "", "iceberg.catalog.uri": ""}, "iceberg.catalog.type", ""),
        (
            {"iceberg.tables.route-field": "k", "iceberg.tables.db.orders.route-regex": "(["},
            "iceberg.tables",
            "not a regular expression",
        ),
        (
            {"iceberg.tables.route-field": "k", "iceberg.table.db.orders.route-regex": "(["},
            "iceberg.tables",
            "iceberg.table.db.orders.route-regex: not a regular expression",
        ),
        (
            {"iceberg.tables.default-partition-by": "days(at), weeks(at)"},
            "iceberg.tables.default-partition-by",
            "unknown transform 'weeks'",
        ),
        (
            {"iceberg.tables.default-partition-by": "bucket(id)"},
            "iceberg.tables.default-partition-by",
            "takes a column and a number",
        ),
        (
            {"iceberg.tables.default-partition-by": "bucket(id, 0)"},
            "iceberg.tables.default-partition-by",
            "positive integer",
        ),
        (
            {"iceberg.tables.default-partition-by": "day(at"},
            "iceberg.tables.default-partition-by",
            "unbalanced parentheses",
        ),
        (
            {"iceberg.table.db.orders.partition-by": "id, id"},
            "iceberg.tables",
            "iceberg.table.db.orders.partition-by: invalid partition spec",
        ),
    ],
)
def test_invalid_configs_are_rejected_per_field(
    props: dict[str, str], change: dict[str, str], key: str, message: str
) -> None:
    result = IcebergSinkConnector().validate({**props, **change})
    errors = {name: v.errors for name, v in result.items() if v.errors}
    assert list(errors) == [key]
    assert message in " ".join(errors[key])
    with pytest.raises(ConfigError):
        IcebergSinkTask().start({**props, **change})


def test_a_catalog_that_cannot_be_opened_fails_the_connector_without_its_secrets(
    props: dict[str, str],
) -> None:
    bad = {
        **props,
        "iceberg.catalog.uri": "postgresql+psycopg://u:pw-s3cret@127.0.0.1:1/x",
        "iceberg.catalog.s3.secret-access-key": "key-s3cret",
    }
    with pytest.raises(ConnectError, match="Cannot open Iceberg catalog 'iceberg'") as info:
        IcebergSinkConnector().start(bad)
    assert "s3cret" not in str(info.value)


def test_the_guide_read_back_example_reads_what_the_task_wrote(
    props: dict[str, str], tasks: Tasks, capsys: pytest.CaptureFixture[str]
) -> None:
    task, _ = tasks.start(props, [0])
    task.put(records([order(i) for i in range(7)]))
    commit(task, [0])
    read_events = load_example("iceberg-read-back").read_events
    rows = read_events(
        props["iceberg.catalog.uri"], props["iceberg.catalog.warehouse"], "db.orders"
    )
    assert sorted(rows.column("id").to_pylist()) == list(range(7))
    assert rows.schema.field("amount").type == pa.decimal128(38, 2)
    assert "kafka.connect.offsets.orders.connect-ice': '{\"0\": 7}'" in capsys.readouterr().out


def test_catalog_secrets_are_hidden_in_what_the_worker_shows() -> None:
    from connectors.iceberg.config import CONFIG_DEF
    from connectrt.runtime.secrets.masking import mask

    shown = mask(
        {
            "iceberg.catalog.uri": "postgresql+psycopg://u:pw-s3cret@db/catalog",
            "iceberg.catalog.s3.secret-access-key": "s3cret",
            "iceberg.catalog.token": "s3cret",
            "iceberg.catalog.credential": "s3cret",
            "iceberg.catalog.s3.access-key-id": "AKIA1",
        },
        CONFIG_DEF,
    )
    assert "s3cret" not in json.dumps(shown)
    assert shown["iceberg.catalog.s3.access-key-id"] == "AKIA1"
    assert shown["iceberg.catalog.uri"] == "postgresql+psycopg://u:[hidden]@db/catalog"


def test_a_catalog_locked_by_another_writer_is_waited_for(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    import sqlite3
    import threading

    task, _ = tasks.start(props, [0])
    task.put(records([order(0)]))
    commit(task, [0])  # creates the table
    task.put(records([order(1)], first=1))
    path = props["iceberg.catalog.uri"].removeprefix("sqlite:///")
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the commit's UPDATE waits
    release = threading.Timer(7.0, blocker.rollback)  # past pysqlite's 5 s busy timeout
    release.start()
    try:
        assert commit(task, [0]) == {TopicPartition(TOPIC, 0): 2}
    finally:
        release.join()
        blocker.close()
    ids = sorted(catalog.load_table("db.orders").scan().to_arrow().column("id").to_pylist())
    assert ids == [0, 1]


def _spec(catalog: Catalog, table: str = "db.orders") -> list[tuple[str, str, str]]:
    loaded = catalog.load_table(table)
    schema = loaded.schema()
    return [
        (f.name, str(f.transform), schema.find_column_name(f.source_id) or "")
        for f in loaded.spec().fields
    ]


def test_auto_created_tables_get_the_partition_spec_and_rows_land_in_partitions(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    """``iceberg.tables.default-partition-by`` in Iceberg's syntax (commas inside parentheses
    do not split; Spark SQL's bucket(N, col) order is accepted): the created table has the
    spec, the data files are written per partition, and the rows read back whole."""
    partitioned = {
        **props,
        "iceberg.tables.default-partition-by": "days(at), bucket(4, id), truncate(name, 2), day",
    }
    task, _ = tasks.start(partitioned, [0])
    task.put(records([order(i, name=f"n{i % 3}") for i in range(6)]))
    commit(task, [0])
    assert _spec(catalog) == [
        ("at_day", "day", "at"),
        ("id_bucket", "bucket[4]", "id"),
        ("name_trunc", "truncate[2]", "name"),
        ("day", "identity", "day"),
    ]
    table = catalog.load_table("db.orders")
    files = [task.file.file_path for task in table.scan().plan_files()]
    assert all("/at_day=2024-05-01/" in f and "/name_trunc=n" in f for f in files), files
    assert len({f.split("/id_bucket=")[1].split("/")[0] for f in files}) > 1, files
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(6))
    assert summary_offsets(catalog) == {"0": 6}


def test_a_tables_own_partition_by_wins_and_existing_tables_keep_their_spec(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    own = {
        **props,
        "iceberg.tables": "db.orders,db.copy",
        "iceberg.tables.default-partition-by": "month(at)",
        "iceberg.table.db.copy.partition-by": "hour(at)",
    }
    task, _ = tasks.start(own, [0])
    task.put(records([order(i) for i in range(3)]))
    commit(task, [0])
    assert _spec(catalog) == [("at_month", "month", "at")]
    assert _spec(catalog, "db.copy") == [("at_hour", "hour", "at")]
    # Another spec later: the tables exist, so they are written as they are.
    other = {**own, "name": "ice2", "iceberg.tables.default-partition-by": "name"}
    task, _ = tasks.start(other, [1])
    task.put(records([order(i) for i in range(3, 5)], partition=1))
    commit(task, [1])
    assert _spec(catalog) == [("at_month", "month", "at")]
    assert catalog.load_table("db.orders").scan().to_arrow().num_rows == 5


@pytest.mark.parametrize(
    ("partition_by", "message"),
    [
        ("colour", "has no column 'colour' (its columns, from the first record: id, name"),
        ("day(name)", "column 'name' is string, which day does not take"),
    ],
)
def test_a_partition_spec_the_first_record_cannot_take_fails_the_task_creating_nothing(
    props: dict[str, str], catalog: Catalog, tasks: Tasks, partition_by: str, message: str
) -> None:
    """The spec is checked against the schema of the first record: a column it lacks or a
    transform its type cannot take fails the task with the key, the table and the term, and
    no table is created (nothing is committed: the records are consumed again after a fix)."""
    bad = {**props, "iceberg.table.db.orders.partition-by": partition_by}
    task, _ = tasks.start(bad, [0])
    with pytest.raises(ConnectError) as failure:
        task.put(records([order(1)]))
    text = str(failure.value)
    assert text.startswith("iceberg.table.db.orders.partition-by: cannot partition new table")
    assert message in text
    assert not catalog.table_exists("db.orders")


def test_per_table_keys_reach_dynamically_routed_tables_and_icebergs_spelling_wins(
    props: dict[str, str],
) -> None:
    from connectors.iceberg.config import parse_config
    from connectors.iceberg.partitioning import PartitionTerm

    config = parse_config(
        {
            **props,
            "iceberg.tables": "",
            "iceberg.tables.dynamic-enabled": "true",
            "iceberg.tables.route-field": "name",
            "iceberg.tables.default-partition-by": "day(at)",
            "iceberg.table.db.one.id-columns": "id",
            "iceberg.tables.db.one.id-columns": "name",  # the earlier spelling loses
            "iceberg.table.db.one.partition-by": "truncate(name, 3)",
        }
    )
    one, other = config.table_config("db.one"), config.table_config("db.other")
    assert one.id_columns == ("id",)
    assert one.partition_by == (PartitionTerm("name", "truncate", 3),)
    assert one.partition_key == "iceberg.table.db.one.partition-by"
    assert other.id_columns == () and other.partition_by == (PartitionTerm("at", "day"),)
    assert other.partition_key == "iceberg.tables.default-partition-by"


def test_schemaless_maps_create_a_table_with_inferred_column_types(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    """JsonConverter with schemas.enable=false gives maps: the table is created from the
    types Arrow infers from them (as Iceberg's connector infers them); a key that is null in
    every record has no type and is left out; a record whose type differs from the others
    (id a string) and a value that is no map go to the reporter, the rest is written."""
    reporter = ListReporter()
    task, _ = tasks.start(props, [0], reporter)
    values: list[Any] = [
        {"id": i, "name": f"n{i}", "amount": i + 0.5, "tags": ["a"], "inner": {"x": i}, "n": None}
        for i in range(3)
    ]
    values += [{"id": "three"}, ["not", "a", "map"], {"id": 5, "name": "n5"}]
    task.put(records(values))
    assert commit(task, [0]) == {TopicPartition(TOPIC, 0): 6}
    arrow = catalog.load_table("db.orders").scan().to_arrow().sort_by("id")
    types = {f.name: f.type for f in arrow.schema}
    assert list(types) == ["id", "name", "amount", "tags", "inner"]
    assert types["id"] == pa.int64() and types["amount"] == pa.float64()
    assert pa.types.is_large_list(types["tags"]) and pa.types.is_struct(types["inner"])
    assert arrow.column("id").to_pylist() == [0, 1, 2, 5]
    assert arrow.column("inner").to_pylist()[:3] == [{"x": 0}, {"x": 1}, {"x": 2}]
    assert arrow.column("amount").to_pylist()[3] is None
    assert [r.kafka_offset for r, _ in reporter.reported] == [3, 4]
    assert "must be a map" in str(reporter.reported[1][1])


def test_schemaless_maps_go_into_an_existing_table_cast_to_its_columns(
    props: dict[str, str], catalog: Catalog, tasks: Tasks
) -> None:
    """Maps written to a table created from schema'd records: values are cast to its column
    types (an int into a decimal column), keys it lacks are dropped without evolution and
    added as columns with it."""
    task, _ = tasks.start(props, [0])
    task.put(records([order(0)]))
    commit(task, [0])
    task.put(records([{"id": 1, "name": "m1", "amount": 7, "extra": True}], first=1))
    commit(task, [0])
    arrow = catalog.load_table("db.orders").scan().to_arrow().sort_by("id")
    assert "extra" not in arrow.schema.names
    assert arrow.column("amount").to_pylist()[1] == decimal.Decimal("7.00")
    evolving = {**props, "name": "ice2", "iceberg.tables.evolve-schema-enabled": "true"}
    task, _ = tasks.start(evolving, [1])
    task.put(records([{"id": 2, "extra": True}], partition=1))
    commit(task, [1])
    arrow = catalog.load_table("db.orders").scan().to_arrow().sort_by("id")
    assert arrow.column("extra").to_pylist() == [None, None, True]
