"""The JDBC source follows a table's columns mid-stream (SQLite, PostgreSQL): a column added,
dropped or retyped between two queries changes the schema of the records that follow, from
the same offset (nothing skipped, nothing repeated)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from connectrt.api import SourceRecord
from connectrt.data import Schema
from tests.jdbc_source_support import DB_KINDS, Db, drain, open_db, start_tasks, values


@pytest.fixture(params=DB_KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    yield from open_db(request, tmp_path)


def test_columns_added_dropped_and_retyped_mid_stream(db: Db) -> None:
    engine = db.engine
    key = "INTEGER PRIMARY KEY" if db.kind == "sqlite" else "SERIAL PRIMARY KEY"
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE items (id {key}, name TEXT, qty INTEGER NOT NULL)")
        c.exec_driver_sql("INSERT INTO items (name, qty) VALUES ('a', 1), ('b', 2)")
    config = {
        **db.config,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": "t-",
        "poll.interval.ms": "10",
    }
    (task,) = start_tasks(config)
    try:
        first = drain(task)
        assert values(first, "id", "qty") == [(1, 1), (2, 2)]
        with engine.begin() as c:
            c.exec_driver_sql("ALTER TABLE items ADD COLUMN note TEXT")
            c.exec_driver_sql("INSERT INTO items (name, qty, note) VALUES ('c', 3, 'n')")
        added = drain(task)
        assert values(added, "id", "note") == [(3, "n")]
        schema = added[0].value_schema
        assert schema is not None and [f.name for f in schema.fields] == [
            "id",
            "name",
            "qty",
            "note",
        ]
        with engine.begin() as c:
            c.exec_driver_sql("ALTER TABLE items DROP COLUMN name")
            c.exec_driver_sql("INSERT INTO items (qty, note) VALUES (4, 'm')")
        dropped = drain(task)
        assert values(dropped, "id", "qty") == [(4, 4)]
        schema = dropped[0].value_schema
        assert schema is not None and [f.name for f in schema.fields] == ["id", "qty", "note"]
        with engine.begin() as c:
            if db.kind == "sqlite":  # SQLite retypes a column by rebuilding its table
                c.exec_driver_sql("ALTER TABLE items RENAME TO old_items")
                c.exec_driver_sql(
                    "CREATE TABLE items (id INTEGER PRIMARY KEY, qty TEXT NOT NULL, note TEXT)"
                )
                c.exec_driver_sql(
                    "INSERT INTO items SELECT id, CAST(qty AS TEXT), note FROM old_items"
                )
                c.exec_driver_sql("DROP TABLE old_items")
            else:
                c.exec_driver_sql("ALTER TABLE items ALTER COLUMN qty TYPE TEXT")
            c.exec_driver_sql("INSERT INTO items (qty, note) VALUES ('five', 'o')")
        retyped = drain(task)
        assert values(retyped, "id", "qty") == [(5, "five")]
        schema = retyped[0].value_schema
        assert schema is not None
        qty = schema.field("qty")
        assert qty is not None and qty.schema.type == Schema.STRING_SCHEMA.type
    finally:
        task.stop()


def test_a_sqlite_writer_is_not_kept_waiting_by_the_column_checks(tmp_path: Path) -> None:
    """The task queries a SQLite table back to back while a program commits one row at a time
    with a 2 s busy timeout: no commit waits that long (the columns are described only when the
    schema changed, on the query's own connection), every row is read, and a column added
    mid-run is still followed by the next query."""
    path = tmp_path / "busy.db"
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 2})
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE items (id INTEGER PRIMARY KEY, qty INTEGER NOT NULL)")
    config = {
        "connection.url": f"jdbc:sqlite:{path}",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": "t-",
        "poll.interval.ms": "1",
    }
    (task,) = start_tasks(config)
    read: list[SourceRecord] = []
    stop = threading.Event()

    def reading() -> None:
        while not stop.is_set():
            read.extend(task.poll() or [])

    reader = threading.Thread(target=reading, name="jdbc-source-poller", daemon=True)
    reader.start()
    try:
        for i in range(1, 301):
            with engine.begin() as c:
                if i == 151:
                    c.exec_driver_sql("ALTER TABLE items ADD COLUMN note TEXT")
                if i <= 150:
                    c.exec_driver_sql("INSERT INTO items (qty) VALUES (?)", (i,))
                else:
                    c.exec_driver_sql("INSERT INTO items (qty, note) VALUES (?, 'n')", (i,))
        deadline = time.monotonic() + 60
        while len(read) < 300 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        reader.join(30)
        task.stop()
        engine.dispose()
    assert values(read, "id") == list(range(1, 301))
    assert values(read[150:], "note") == ["n"] * 150
