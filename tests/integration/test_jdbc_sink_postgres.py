"""JdbcSinkTask in process against PostgreSQL: types, every write mode, hostile identifiers
(psycopg's ``%`` placeholders included), the identifier length limit and exactly-once offsets.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.jdbc.sink.task import JdbcSinkTask
from connectrt.api import ConnectError, RetriableError, TopicPartition
from connectrt.data import Schema, SchemaBuilder, Struct
from tests.unit.test_jdbc_sink import Context, Reporter, key, order, rec

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def pg(postgres: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    name = "sinkpg_" + "".join(ch for ch in request.node.name if ch.isalnum())[-30:].lower()
    url = postgres.create_database(name)
    engine = sa.create_engine(url)
    yield url, engine
    engine.dispose()


def _task(url: str, **props: str) -> tuple[JdbcSinkTask, Context]:
    config = {"name": "pg-sink", "connection.url": url, "auto.create": "true", **props}
    task = JdbcSinkTask()
    context = Context(config)
    task.initialize(context)
    task.start(config)
    return task, context


def _rows(engine: sa.Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def test_types_and_modes_on_postgres(pg: tuple[str, Any]) -> None:
    url, engine = pg
    task, _ = _task(
        url, **{"pk.mode": "record_key", "insert.mode": "upsert", "delete.enabled": "true"}
    )
    try:
        task.put([rec(order(i), i, k=key(i)) for i in range(4)])
        task.put([rec(order(1, "one"), 4, k=key(1)), rec(None, 5, k=key(2))])
    finally:
        task.stop()
    types = dict(
        _rows(
            engine,
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'orders'",
        )
    )
    assert types == {
        "id": "bigint",
        "name": "text",
        "amount": "numeric",
        "day": "date",
        "at": "timestamp without time zone",
        "ok": "boolean",
        "blob": "bytea",
        "ratio": "double precision",
    }
    got = _rows(engine, "SELECT id, name, amount, day, at, ok, ratio FROM orders ORDER BY id")
    assert got == [
        (
            0,
            "n0",
            decimal.Decimal("0.25"),
            dt.date(2024, 1, 1),
            dt.datetime(2024, 1, 1, 12),
            True,
            0.0,
        ),
        (
            1,
            "one",
            decimal.Decimal("1.25"),
            dt.date(2024, 1, 2),
            dt.datetime(2024, 1, 1, 12, 0, 1),
            False,
            0.25,
        ),
        (
            3,
            "n3",
            decimal.Decimal("3.25"),
            dt.date(2024, 1, 4),
            dt.datetime(2024, 1, 1, 12, 0, 3),
            False,
            0.75,
        ),
    ]
    task, _ = _task(url, **{"pk.mode": "record_value", "pk.fields": "id", "insert.mode": "update"})
    try:
        task.put([rec(order(3, "three"), 6), rec(order(8, "ghost"), 7)])
    finally:
        task.stop()
    assert _rows(engine, "SELECT id, name FROM orders ORDER BY id") == [
        (0, "n0"),
        (1, "one"),
        (3, "three"),
    ]


def test_hostile_names_and_identifier_limit_on_postgres(pg: tuple[str, Any]) -> None:
    url, engine = pg
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE keep (v INTEGER)"))
        conn.execute(sa.text("INSERT INTO keep VALUES (1)"))
    schema = (
        SchemaBuilder.struct()
        .field('a"b; DELETE FROM keep', Schema.INT32_SCHEMA)
        .field("100% (sure) %s %(x)s", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    value = Struct(schema).put('a"b; DELETE FROM keep', 5).put("100% (sure) %s %(x)s", "yes")
    topic = 'x"; DROP TABLE keep; --'
    task, _ = _task(
        url,
        **{
            "pk.mode": "record_value",
            "pk.fields": 'a"b; DELETE FROM keep',
            "insert.mode": "upsert",
        },
    )
    try:
        task.put([rec(value, 0, topic=topic), rec(value, 1, topic=topic)])
    finally:
        task.stop()
    task, _ = _task(url)
    try:
        with pytest.raises(ConnectError, match="more than the database allows \\(63\\)"):
            task.put([rec(order(1), 2, topic="t" * 70)])
    finally:
        task.stop()
    assert _rows(engine, "SELECT * FROM keep") == [(1,)]
    assert _rows(engine, 'SELECT * FROM "x""; DROP TABLE keep; --"') == [(5, "yes")]


def test_exactly_once_offsets_on_postgres(pg: tuple[str, Any]) -> None:
    url, engine = pg
    props = {"exactly.once.enabled": "true"}
    p0 = TopicPartition("orders", 0)
    task, _ = _task(url, **props)
    try:
        task.open([p0])
        task.put([rec(order(i), i) for i in range(5)])
    finally:
        task.stop()
    task, context = _task(url, **props)
    try:
        task.open([p0])
        assert context.rewinds == {p0: 5}
        task.put([rec(order(i), i) for i in range(3, 7)])
        assert task.pre_commit({p0: 7}) == {p0: 7}
    finally:
        task.stop()
    assert _rows(engine, "SELECT count(*), count(DISTINCT id) FROM orders") == [(7, 7)]
    assert _rows(
        engine, "SELECT connector, topic, kafka_partition, next_offset FROM __connect_offsets"
    ) == [("pg-sink", "orders", 0, 7)]


def test_copy_fast_path_writes_the_same_rows_with_offsets(pg: tuple[str, Any]) -> None:
    url, engine = pg
    props = {"postgresql.copy.enabled": "true", "exactly.once.enabled": "true"}
    task, _ = _task(url, **props)
    try:
        task.open([TopicPartition("orders", 0)])
        task.put([rec(order(i), i) for i in range(4)])
        task.put([rec(order(i), i) for i in range(2, 6)])  # 2, 3 already applied: skipped
    finally:
        task.stop()
    got = _rows(engine, "SELECT id, name, amount, day, at, ok, blob, ratio FROM orders ORDER BY id")
    assert len(got) == 6
    assert got[3] == (
        3,
        "n3",
        decimal.Decimal("3.25"),
        dt.date(2024, 1, 4),
        dt.datetime(2024, 1, 1, 12, 0, 3),
        False,
        b"\x03",
        0.75,
    )
    assert _rows(engine, "SELECT next_offset FROM __connect_offsets") == [(6,)]


def test_copy_errors_roll_back_and_lock_timeouts_are_retriable(pg: tuple[str, Any]) -> None:
    url, engine = pg
    with engine.begin() as conn:
        conn.execute(
            sa.text("CREATE TABLE orders (id BIGINT NOT NULL CHECK (id < 100), name TEXT)")
        )
    narrow = (
        SchemaBuilder.struct()
        .field("id", Schema.INT64_SCHEMA)
        .field("name", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    task, context = _task(
        f"{url}?options=-c%20lock_timeout%3D100",
        **{"postgresql.copy.enabled": "true", "exactly.once.enabled": "true"},
    )
    try:
        task.open([TopicPartition("orders", 0)])
        with pytest.raises(ConnectError, match="violates check constraint"):
            task.put([rec(Struct(narrow).put("id", i), i) for i in (1, 2, 500)])
        locker = engine.connect()
        tx = locker.begin()
        locker.execute(sa.text("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"))
        try:
            with pytest.raises(RetriableError, match="lock timeout"):
                task.put([rec(Struct(narrow).put("id", 1), 0)])
            assert context.timeouts
        finally:
            tx.rollback()
            locker.close()
        task.put([rec(Struct(narrow).put("id", 1), 0)])
    finally:
        task.stop()
    assert _rows(engine, "SELECT id FROM orders") == [(1,)]
    assert _rows(engine, "SELECT next_offset FROM __connect_offsets") == [(1,)]


@pytest.mark.parametrize("copy", ["false", "true"])
def test_rejected_rows_are_reported_one_by_one_with_offsets_on_postgres(
    pg: tuple[str, Any], copy: str
) -> None:
    """A duplicate key and a CHECK violation fail the batch (executemany or COPY); with a
    reporter the batch is rewritten row by row in savepoints, the two rows are reported and the
    rest lands with the exactly-once offsets in the same transaction."""
    url, engine = pg
    props = {
        "pk.mode": "record_value",
        "pk.fields": "id",
        "exactly.once.enabled": "true",
        "postgresql.copy.enabled": copy,
    }
    reporter = Reporter()
    config = {"name": "pg-sink", "connection.url": url, "auto.create": "true", **props}
    task = JdbcSinkTask()
    task.initialize(Context(config, reporter))
    task.start(config)
    try:
        task.open([TopicPartition("orders", 0)])
        task.put([rec(order(1), 0)])
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE orders ADD CONSTRAINT no_twos CHECK (id <> 2)"))
        task.put([rec(order(i), off) for off, i in ((1, 3), (2, 1), (3, 2), (4, 4))])
        task.put([rec(order(5), 5)])
    finally:
        task.stop()
    assert _rows(engine, "SELECT id FROM orders ORDER BY id") == [(1,), (3,), (4,), (5,)]
    errors = {r.kafka_offset: str(e) for r, e in reporter.reported}
    assert set(errors) == {2, 3}
    assert "duplicate key" in errors[2] and "no_twos" in errors[3]
    assert _rows(engine, "SELECT next_offset FROM __connect_offsets") == [(6,)]


def test_db_timezone_on_postgres(pg: tuple[str, Any]) -> None:
    """The session runs in db.timezone: a TIMESTAMP column gets the zone's wall-clock time,
    and a hostile zone name is a bound value, never SQL."""
    url, engine = pg
    task, _ = _task(url, **{"db.timezone": "America/New_York"})
    try:
        value = order(1)
        value.put("at", dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC))  # 08:00 EDT
        task.put([rec(value, 0)])
    finally:
        task.stop()
    assert _rows(engine, "SELECT at FROM orders") == [(dt.datetime(2024, 7, 1, 8, 0),)]
    with pytest.raises(Exception, match="Invalid time zone"):
        _task(url, **{"db.timezone": "UTC'; DROP TABLE orders; --"})
    assert _rows(engine, "SELECT count(*) FROM orders") == [(1,)]
