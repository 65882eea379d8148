"""Every JDBC source mode on a real SQLite file and on the real PostgreSQL server.

The tasks run directly (no broker): the connector lists the tables and builds task configs,
the tasks poll the database, and :class:`MemoryOffsets` plays the runtime's offset store, so
restarts resume from what "was committed". The worker path is in test_jdbc_source_worker.py.
"""

from __future__ import annotations

import datetime as dt
import decimal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.jdbc.source import JdbcSourceConnector
from connectrt.data import Schema, Type
from tests.jdbc_source_support import (
    DB_KINDS,
    Db,
    MemoryOffsets,
    create_items,
    drain,
    field_schema,
    insert,
    open_db,
    poll_until,
    start_tasks,
    started_connector,
    touch,
    value_schema,
    values,
)

UTC = dt.UTC


@pytest.fixture(params=DB_KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    yield from open_db(request, tmp_path)


@pytest.fixture
def items(db: Db) -> sa.Table:
    return create_items(db)


def config(db: Db, mode: str, **extra: str) -> dict[str, str]:
    base = {
        **db.config,
        "mode": mode,
        "topic.prefix": "db-",
        "poll.interval.ms": "50",
        "incrementing.column.name": "id",
        "timestamp.column.name": "updated",
    }
    base.update({k.replace("_", "."): v for k, v in extra.items()})
    return base


def test_bulk_rereads_the_whole_table(db: Db, items: sa.Table) -> None:
    insert(db, items, ["a", "b", "c"])
    [task] = start_tasks(config(db, "bulk"))
    try:
        first = poll_until(task, 3)
        assert values(first, "name") == ["a", "b", "c"]
        assert first[0].topic == "db-items" and first[0].source_partition is None
        insert(db, items, ["d"])
        second = poll_until(task, 4)
        assert sorted(values(second, "name")) == ["a", "b", "c", "d"]
    finally:
        task.stop()


def test_incrementing_reads_new_rows_but_not_updates(db: Db, items: sa.Table) -> None:
    insert(db, items, ["a", "b", "c"])
    offsets = MemoryOffsets()
    # No incrementing.column.name: inferred from the integer primary key.
    cfg = config(db, "incrementing", incrementing_column_name="")
    [task] = start_tasks(cfg, offsets)
    try:
        first = drain(task, offsets)
        assert values(first, "id") == [1, 2, 3]
        assert first[-1].source_offset == {"incrementing": 3}
        table_id = "items" if db.kind == "sqlite" else "public.items"
        assert first[-1].source_partition == {"protocol": "1", "table": table_id}
        touch(db, items, 2)
        insert(db, items, ["d"])
        assert values(drain(task, offsets, at_least=1), "id", "version") == [(4, 1)]
    finally:
        task.stop()


def test_timestamp_mode_reads_updates(db: Db, items: sa.Table) -> None:
    insert(db, items, ["a", "b", "c"])
    [task] = start_tasks(config(db, "timestamp"))
    try:
        first = drain(task)
        assert values(first, "id") == [1, 2, 3]
        assert set(first[-1].source_offset or {}) == {"timestamp", "timestamp_nanos"}
        touch(db, items, 2)
        assert values(drain(task, at_least=1), "id", "version") == [(2, 2)]
    finally:
        task.stop()


def test_timestamp_incrementing_reads_updates_and_equal_timestamps(db: Db, items: sa.Table) -> None:
    same = db.now() - dt.timedelta(seconds=3)
    with db.engine.begin() as c:  # five rows with one timestamp, read in batches of two
        c.execute(
            items.insert(), [{"name": f"r{i}", "version": 1, "updated": same} for i in range(5)]
        )
    offsets = MemoryOffsets()
    [task] = start_tasks(config(db, "timestamp+incrementing", batch_max_rows="2"), offsets)
    try:
        first = drain(task, offsets)
        assert values(first, "id") == [1, 2, 3, 4, 5]
        later = db.now() - dt.timedelta(seconds=1)
        touch(db, items, 1, later)
        insert(db, items, ["f"], later)  # same timestamp as the update, larger id
        assert values(drain(task, offsets, at_least=2), "id", "version") == [(1, 2), (6, 1)]
        offset = offsets.offsets([first[0].source_partition or {}])[0]
        assert offset is not None and offset["incrementing"] == 6
        assert set(offset) == {"incrementing", "timestamp", "timestamp_nanos"}
    finally:
        task.stop()


@pytest.mark.parametrize("mode", ["incrementing", "timestamp", "timestamp+incrementing"])
def test_restart_resumes_without_gaps_or_repeats(db: Db, items: sa.Table, mode: str) -> None:
    insert(db, items, [f"r{i}" for i in range(10)])
    offsets = MemoryOffsets()
    cfg = config(db, mode, batch_max_rows="4")
    [task] = start_tasks(cfg, offsets)
    try:
        first = task.poll() or []
        offsets.commit(first)  # only the first batch was acknowledged before the stop
    finally:
        task.stop()
    assert values(first, "id") == [1, 2, 3, 4]
    insert(db, items, ["late1", "late2"], db.now() - dt.timedelta(seconds=1))
    [task] = start_tasks(cfg, offsets)
    try:
        rest = drain(task, offsets)
    finally:
        task.stop()
    assert values(rest, "id") == list(range(5, 13))


def test_row_committed_late_within_the_delay_is_not_missed(db: Db, items: sa.Table) -> None:
    """Row A belongs to a transaction that began before row B's but committed after B was
    visible (simulated by its timestamp). With a delay covering the gap, both arrive, in
    timestamp order; without one, A is skipped (the Java connector's known pain)."""
    # The delay is what the assertion below has to work in: B stays inside it while the drain
    # runs (5 s, not 1 s: on a busy machine an insert and a drain can take over a second).
    [task] = start_tasks(config(db, "timestamp+incrementing", timestamp_delay_interval_ms="5000"))
    try:
        now = db.now()
        insert(db, items, ["B"], now - dt.timedelta(milliseconds=50))
        assert drain(task, quiet=0.2) == []  # B is still inside the delay window
        insert(db, items, ["A"], now - dt.timedelta(milliseconds=400))  # the late commit
        assert values(poll_until(task, 2), "name") == ["A", "B"]
    finally:
        task.stop()

    with db.engine.begin() as c:
        c.execute(items.delete())
    [task] = start_tasks(config(db, "timestamp+incrementing", timestamp_delay_interval_ms="0"))
    try:
        now = db.now()
        insert(db, items, ["D"], now - dt.timedelta(milliseconds=50))
        assert values(poll_until(task, 1), "name") == ["D"]
        insert(db, items, ["C"], now - dt.timedelta(milliseconds=400))
        assert drain(task, quiet=0.3) == [], "without a delay the late row is skipped"
    finally:
        task.stop()


@pytest.mark.postgres
@pytest.mark.integration
@pytest.mark.parametrize("db", [pytest.param("postgres")], indirect=True)
def test_postgres_transaction_committed_late(db: Db) -> None:
    """Real concurrent transactions: ``now()`` is the transaction start, so the first
    transaction's row carries the earlier timestamp although it commits last."""
    with db.engine.begin() as c:
        c.exec_driver_sql(
            "CREATE TABLE events (id SERIAL PRIMARY KEY, name TEXT NOT NULL, "
            "at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
    # 5 s of delay: 'fast' must stay inside it until 'slow' commits, on a busy machine too.
    cfg = config(
        db, "timestamp+incrementing", timestamp_column_name="at", timestamp_delay_interval_ms="5000"
    )
    [task] = start_tasks(cfg)
    slow = db.engine.connect()
    try:
        slow_tx = slow.begin()
        slow.exec_driver_sql("INSERT INTO events (name) VALUES ('slow')")
        threading.Event().wait(0.05)  # fast's now() comes after slow's (no synchronisation)
        with db.engine.begin() as c:
            c.exec_driver_sql("INSERT INTO events (name) VALUES ('fast')")
        assert drain(task, quiet=0.3) == []
        slow_tx.commit()  # committed after 'fast', within the delay
        got = poll_until(task, 2)
        assert values(got, "name") == ["slow", "fast"]
        assert field_schema(got[0], "at").name == "org.apache.kafka.connect.data.Timestamp"
    finally:
        slow.close()
        task.stop()


def test_query_mode_wraps_the_query_and_appends_the_mode_filter(db: Db, items: sa.Table) -> None:
    insert(db, items, ["a", "skip", "b"])
    cfg = config(
        db,
        "timestamp+incrementing",
        query="SELECT id, name, version, updated FROM items WHERE name <> 'skip'",
        topic_prefix="query-topic",
    )
    [task] = start_tasks(cfg)
    try:
        first = drain(task)
        assert values(first, "name") == ["a", "b"]
        assert first[0].topic == "query-topic"
        assert first[0].source_partition == {"query": "query"}
        assert value_schema(first[0]).name is None
        touch(db, items, 3)
        assert values(drain(task, at_least=1), "id", "version") == [(3, 2)]
    finally:
        task.stop()


def _type_rows(db: Db) -> tuple[sa.Table, dict[str, Any]]:
    md = sa.MetaData()
    table = sa.Table(
        "all_types",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("i16", sa.SmallInteger, nullable=False),
        sa.Column("i32", sa.Integer),
        sa.Column("i64", sa.BigInteger),
        sa.Column("f32", sa.REAL),
        sa.Column("f64", sa.Double),
        sa.Column("dec", sa.Numeric(10, 2)),
        sa.Column("day", sa.Date),
        sa.Column("tod", sa.Time),
        sa.Column("ts", sa.DateTime),
        sa.Column("tstz", sa.DateTime(timezone=True)),
        sa.Column("flag", sa.Boolean),
        sa.Column("txt", sa.Text),
        sa.Column("vc", sa.String(20)),
        sa.Column("bin", sa.LargeBinary),
    )
    md.create_all(db.engine)
    row: dict[str, Any] = {
        "id": 1,
        "i16": -12,
        "i32": 2_000_000_000,
        "i64": 9_000_000_000_000,
        "f32": 1.5,
        "f64": 2.25,
        "dec": decimal.Decimal("12.30"),
        "day": dt.date(2024, 2, 29),
        "tod": dt.time(10, 11, 12, 500000),
        "ts": dt.datetime(2024, 3, 1, 12, 0, 0, 123456),
        "tstz": dt.datetime(2024, 3, 1, 12, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "flag": True,
        "txt": "héllo",
        "vc": "abc",
        "bin": b"\x00\xffbytes",
    }
    with db.engine.connect() as c:
        if db.kind == "sqlite":  # bind as SQLite stores them (SQLAlchemy's text formats)
            raw = dict(row, dec=12.3, day="2024-02-29", tod="10:11:12.500000")
            raw["ts"] = "2024-03-01 12:00:00.123456"
            raw["tstz"] = "2024-03-01 10:00:00.000000"
            raw["flag"] = 1
            cols = ", ".join(row)
            c.execute(
                sa.text(
                    f"INSERT INTO all_types ({cols}) VALUES ({', '.join(':' + k for k in row)})"
                ),
                raw,
            )
        else:
            c.execute(table.insert(), [row])
        c.execute(sa.text("INSERT INTO all_types (id, i16) VALUES (2, 0)"))
        c.commit()
    return table, row


def test_type_mapping(db: Db) -> None:
    _type_rows(db)
    cfg = config(db, "bulk", table_whitelist="all_types")
    [task] = start_tasks(cfg)
    try:
        records = poll_until(task, 2)
    finally:
        task.stop()
    schema = value_schema(records[0])
    assert schema.name == "all_types"

    def kind(name: str) -> tuple[Type, str | None, bool]:
        field = field_schema(records[0], name)
        return field.type, field.name, field.optional

    f32 = Type.FLOAT64 if db.kind == "sqlite" else Type.FLOAT32  # SQLite REAL is 8 bytes
    ts_name = "org.apache.kafka.connect.data.Timestamp"
    assert kind("id") == (Type.INT32, None, False)
    assert kind("i16") == (Type.INT16, None, False)
    assert kind("i32") == (Type.INT32, None, True)
    assert kind("i64") == (Type.INT64, None, True)
    assert kind("f32") == (f32, None, True)
    assert kind("f64") == (Type.FLOAT64, None, True)
    assert kind("dec") == (Type.BYTES, "org.apache.kafka.connect.data.Decimal", True)
    assert field_schema(records[0], "dec").parameters == {"scale": "2"}
    assert kind("day") == (Type.INT32, "org.apache.kafka.connect.data.Date", True)
    assert kind("tod") == (Type.INT32, "org.apache.kafka.connect.data.Time", True)
    assert kind("ts") == (Type.INT64, ts_name, True)
    assert kind("tstz") == (Type.INT64, ts_name, True)
    assert kind("flag") == (Type.BOOLEAN, None, True)
    assert kind("txt") == (Type.STRING, None, True)
    assert kind("vc") == (Type.STRING, None, True)
    assert kind("bin") == (Type.BYTES, None, True)

    v = records[0].value
    assert (v["i16"], v["i32"], v["i64"]) == (-12, 2_000_000_000, 9_000_000_000_000)
    assert (v["f32"], v["f64"]) == (1.5, 2.25)
    dec = v["dec"]
    assert dec == decimal.Decimal("12.30") and dec.as_tuple().exponent == -2
    assert v["day"] == dt.date(2024, 2, 29)
    assert v["tod"] == dt.time(10, 11, 12, 500000)
    # Naive values are UTC for Connect (with db.timezone=UTC the source keeps them naive).
    ts, tstz = (x if x.tzinfo else x.replace(tzinfo=UTC) for x in (v["ts"], v["tstz"]))
    assert ts == dt.datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert tstz == dt.datetime(2024, 3, 1, 10, 0, 0, tzinfo=UTC)
    assert v["flag"] is True
    assert (v["txt"], v["vc"], v["bin"]) == ("héllo", "abc", b"\x00\xffbytes")
    empty = records[1].value
    assert empty["i16"] == 0 and all(empty[f] is None for f in ("i32", "dec", "ts", "bin"))
    records[0].value.validate()


def test_numeric_best_fit(db: Db) -> None:
    with db.engine.begin() as c:
        c.exec_driver_sql(
            "CREATE TABLE nums (id INTEGER PRIMARY KEY, n2 NUMERIC(2,0), n4 NUMERIC(4,0), "
            "n9 NUMERIC(9,0), n18 NUMERIC(18,0), f NUMERIC(8,3), big NUMERIC(30,4))"
        )
        c.exec_driver_sql(
            "INSERT INTO nums VALUES (1, 12, 1234, 123456789, 123456789012345678, 12.5, 7.25)"
        )
    [task] = start_tasks(config(db, "bulk", numeric_mapping="best_fit"))
    try:
        [record] = poll_until(task, 1)
    finally:
        task.stop()
    schema = value_schema(record)
    types = {f.name: f.schema.type for f in schema.fields}
    assert types == {
        "id": Type.INT32,
        "n2": Type.INT8,
        "n4": Type.INT16,
        "n9": Type.INT32,
        "n18": Type.INT64,
        "f": Type.FLOAT64,
        "big": Type.BYTES,
    }
    assert field_schema(record, "big").parameters == {"scale": "4"}
    v = record.value
    assert (v["n2"], v["n4"], v["n9"], v["n18"]) == (12, 1234, 123456789, 123456789012345678)
    assert v["f"] == 12.5 and v["big"] == decimal.Decimal("7.2500")
    assert field_schema(record, "n2") == Schema.OPTIONAL_INT8_SCHEMA


def test_several_timestamp_columns_are_coalesced(db: Db) -> None:
    md = sa.MetaData()
    table = sa.Table(
        "docs",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("modified", sa.DateTime, nullable=True),
        sa.Column("created", sa.DateTime, nullable=False),
    )
    md.create_all(db.engine)
    base = db.now() - dt.timedelta(seconds=10)
    with db.engine.begin() as c:
        c.execute(
            table.insert(),
            [
                {"id": 1, "modified": None, "created": base + dt.timedelta(seconds=3)},
                {"id": 2, "modified": base + dt.timedelta(seconds=1), "created": base},
                {"id": 3, "modified": None, "created": base + dt.timedelta(seconds=2)},
            ],
        )
    cfg = config(db, "timestamp", timestamp_column_name="modified,created")
    offsets = MemoryOffsets()
    [task] = start_tasks(cfg, offsets)
    try:
        assert values(drain(task, offsets), "id") == [2, 3, 1]  # ordered by COALESCE
        with db.engine.begin() as c:
            c.execute(table.update().where(table.c.id == 3).values(modified=db.now()))
        assert values(drain(task, offsets, quiet=0.4), "id") == [3]
    finally:
        task.stop()


def test_validation_reports_bad_columns_and_queries(db: Db, items: sa.Table) -> None:
    def errors(**extra: str) -> dict[str, list[str]]:
        result = JdbcSourceConnector().validate(config(db, "timestamp+incrementing", **extra))
        return {k: v.errors for k, v in result.items() if v.errors}

    assert errors() == {}
    assert (
        "column 'nope' not found"
        in errors(incrementing_column_name="nope")["incrementing.column.name"][0]
    )
    assert (
        "not a TIMESTAMP column" in errors(timestamp_column_name="name")["timestamp.column.name"][0]
    )
    failing = errors(query="SELECT * FROM missing_table", topic_prefix="q")
    assert "the query fails" in failing["query"][0] and "missing_table" in failing["query"][0]


@pytest.mark.postgres
@pytest.mark.integration
@pytest.mark.parametrize("db", [pytest.param("postgres")], indirect=True)
def test_postgres_schemas_pattern_and_qualified_names(db: Db) -> None:
    with db.engine.begin() as c:
        c.exec_driver_sql("CREATE SCHEMA sales")
        c.exec_driver_sql("CREATE TABLE sales.orders (id SERIAL PRIMARY KEY, what TEXT)")
        c.exec_driver_sql("CREATE TABLE public.orders (id SERIAL PRIMARY KEY, what TEXT)")
        c.exec_driver_sql("INSERT INTO sales.orders (what) VALUES ('sold')")
        c.exec_driver_sql("INSERT INTO public.orders (what) VALUES ('public')")
    for extra, expected in [
        ({}, ["public.orders", "sales.orders"]),
        ({"schema.pattern": "sal%"}, ["sales.orders"]),
        ({"table.whitelist": "sales.orders"}, ["sales.orders"]),
        ({"table.blacklist": "public.orders"}, ["sales.orders"]),
    ]:
        connector, _ = started_connector({**config(db, "incrementing"), **extra})
        try:
            assert [t.fqn for t in connector.tables()] == expected, extra
        finally:
            connector.stop()
    cfg = {**config(db, "incrementing"), "schema.pattern": "sales"}
    [task] = start_tasks(cfg)
    try:
        [record] = poll_until(task, 1)
    finally:
        task.stop()
    assert record.value["what"] == "sold" and record.topic == "db-orders"
    assert record.source_partition == {"protocol": "1", "table": "sales.orders"}
