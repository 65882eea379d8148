"""JDBC source: config validation, failure paths, task splitting, table monitor, quoting, offsets.

Real SQLite files throughout (no broker). Modes on both databases are in
tests/integration/test_jdbc_source_modes.py.
"""

from __future__ import annotations

import datetime as dt
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.jdbc.source import JdbcSourceConnector, split_evenly
from connectors.jdbc.source.querier import offset_to_timestamp, timestamp_to_offset
from connectors.jdbc.source.tables import TableRef
from connectors.jdbc.source.task import JdbcSourceTask
from connectrt.api import ConfigError, ConnectError
from tests.jdbc_source_support import (
    MemoryOffsets,
    TaskContext,
    drain,
    poll_until,
    start_tasks,
    started_connector,
    values,
)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> tuple[str, sa.Engine]:
    path = tmp_path / "db.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        c.exec_driver_sql(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "updated DATETIME NOT NULL, maybe DATETIME, note TEXT)"
        )
        c.exec_driver_sql("CREATE TABLE nokey (a INTEGER, b TEXT)")
    return f"jdbc:sqlite:{path}", engine


def errors_of(config: dict[str, str]) -> dict[str, list[str]]:
    result = JdbcSourceConnector().validate(config)
    return {k: v.errors for k, v in result.items() if v.errors}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


# -- validation ------------------------------------------------------------------------------


def test_valid_config_has_no_errors(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    cfg = {"connection.url": url, "mode": "timestamp+incrementing", "table.whitelist": "items"}
    cfg["timestamp.column.name"] = "updated"
    assert errors_of(cfg) == {}


def test_static_errors_are_reported_per_field(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    assert "mode" in errors_of({"connection.url": url})
    both = errors_of(
        {"connection.url": url, "mode": "bulk", "table.whitelist": "a", "table.exclude.list": "b"}
    )
    assert "mutually exclusive" in both["table.whitelist"][0]
    assert "mutually exclusive" in both["table.blacklist"][0]
    query = errors_of(
        {"connection.url": url, "mode": "incrementing", "query": "SELECT 1", "table.whitelist": "a"}
    )
    assert "cannot be combined" in query["query"][0]
    assert "topic.prefix" in query and "incrementing.column.name" in query
    assert "timestamp.column.name" in errors_of({"connection.url": url, "mode": "timestamp"})
    assert "topic.prefix" in errors_of(
        {"connection.url": url, "mode": "bulk", "topic.prefix": "a b"}
    )
    assert "db.timezone" in errors_of(
        {"connection.url": url, "mode": "bulk", "db.timezone": "Mars/X"}
    )
    assert "connection.url" in errors_of({"connection.url": "jdbc:oracle:thin:@x", "mode": "bulk"})


def test_database_checks_name_the_bad_columns(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    base = {"connection.url": url, "table.whitelist": "items"}
    missing = errors_of({**base, "mode": "incrementing", "incrementing.column.name": "nope"})
    assert "column 'nope' not found in table items" in missing["incrementing.column.name"][0]
    not_int = errors_of({**base, "mode": "incrementing", "incrementing.column.name": "name"})
    assert "not an integer column" in not_int["incrementing.column.name"][0]
    ts = errors_of({**base, "mode": "timestamp", "timestamp.column.name": "updated,ghost"})
    assert "column 'ghost' not found" in ts["timestamp.column.name"][0]
    not_ts = errors_of({**base, "mode": "timestamp", "timestamp.column.name": "note"})
    assert "not a TIMESTAMP column" in not_ts["timestamp.column.name"][0]
    nullable = errors_of({**base, "mode": "timestamp", "timestamp.column.name": "maybe"})
    assert "nullable" in nullable["timestamp.column.name"][0]
    ok = {**base, "mode": "timestamp", "timestamp.column.name": "maybe"}
    assert errors_of({**ok, "validate.non.null": "false"}) == {}
    # Several timestamp columns: COALESCE(maybe, updated) is never null.
    assert errors_of({**ok, "timestamp.column.name": "maybe,updated"}) == {}


def test_incrementing_column_inferred_or_reported(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    assert (
        errors_of({"connection.url": url, "mode": "incrementing", "table.whitelist": "items"}) == {}
    )
    errors = errors_of({"connection.url": url, "mode": "incrementing", "table.whitelist": "nokey"})
    assert (
        "no single auto-increment or integer primary key" in errors["incrementing.column.name"][0]
    )


def test_query_errors(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    base = {"connection.url": url, "topic.prefix": "q", "mode": "incrementing"}
    missing_table = errors_of(
        {**base, "query": "SELECT * FROM ghosts", "incrementing.column.name": "id"}
    )
    assert "no such table: ghosts" in missing_table["query"][0]
    bad_column = errors_of(
        {**base, "query": "SELECT id, name FROM items", "incrementing.column.name": "idx"}
    )
    assert "column 'idx' not found in the query" in bad_column["incrementing.column.name"][0]


def test_missing_sqlite_file_is_a_clear_error(tmp_path: Path) -> None:
    url = f"jdbc:sqlite:{tmp_path / 'typo.db'}"
    errors = errors_of({"connection.url": url, "mode": "bulk"})
    assert "does not exist" in errors["connection.url"][0]
    with pytest.raises(ConnectError, match="does not exist"):
        started_connector({"connection.url": url, "mode": "bulk"})
    assert not (tmp_path / "typo.db").exists()


def test_unreachable_database_fails_start_with_redacted_url() -> None:
    url = f"postgresql://reader:s3cret-pw@127.0.0.1:{_closed_port()}/shop"
    cfg = {
        "connection.url": url,
        "mode": "bulk",
        "connection.attempts": "2",
        "connection.backoff.ms": "10",
    }
    assert errors_of(cfg) == {}, "an unreachable database is not a config error"
    with pytest.raises(ConnectError) as info:
        started_connector(cfg)
    message = str(info.value)
    assert "Cannot connect to postgresql+psycopg://reader:***@127.0.0.1" in message
    assert "after 2 attempt(s)" in message and "s3cret-pw" not in message


def test_connection_password_is_never_shown(sqlite_db: tuple[str, sa.Engine]) -> None:
    url = f"postgresql://reader@127.0.0.1:{_closed_port()}/shop"
    cfg = {"connection.url": url, "connection.password": "hunter2", "mode": "bulk"}
    cfg["connection.attempts"] = "1"
    result = JdbcSourceConnector().validate(cfg)
    assert str(result["connection.password"].value) == "[hidden]"
    with pytest.raises(ConnectError) as info:
        started_connector(cfg)
    assert "hunter2" not in str(info.value) and "***" in str(info.value)


def test_start_rejects_bad_columns(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    with pytest.raises(ConfigError, match="column 'nope' not found"):
        started_connector(
            {"connection.url": url, "mode": "incrementing", "incrementing.column.name": "nope"}
        )


# -- tables and tasks ------------------------------------------------------------------------


def test_split_evenly() -> None:
    tables = [TableRef(None, f"t{i}") for i in range(5)]
    groups = split_evenly(tables, 2)
    assert [len(g) for g in groups] == [3, 2]
    assert sorted(t for g in groups for t in g) == tables
    assert len(split_evenly(tables, 10)) == 5
    assert split_evenly([], 3) == []


def test_task_configs_split_tables_and_honour_lists(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        for i in range(5):
            c.exec_driver_sql(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY)")
        c.exec_driver_sql("CREATE VIEW v0 AS SELECT * FROM t0")
    url = f"jdbc:sqlite:{path}"
    connector, _ = started_connector({"connection.url": url, "mode": "bulk"})
    try:
        configs = connector.task_configs(2)
        assert len(configs) == 2
        assert [t.name for t in connector.tables()] == ["t0", "t1", "t2", "t3", "t4"]
    finally:
        connector.stop()
    for extra, expected in [
        ({"table.whitelist": "t1,t3"}, ["t1", "t3"]),
        ({"table.blacklist": "t0,t1,t2"}, ["t3", "t4"]),
        ({"table.include.list": "t4"}, ["t4"]),
        ({"table.types": "VIEW"}, ["v0"]),
    ]:
        connector, _ = started_connector({"connection.url": url, "mode": "bulk", **extra})
        try:
            assert [t.name for t in connector.tables()] == expected, extra
        finally:
            connector.stop()


def test_table_monitor_requests_reconfiguration(tmp_path: Path) -> None:
    path = tmp_path / "monitor.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE a (id INTEGER PRIMARY KEY)")
    cfg = {"connection.url": f"jdbc:sqlite:{path}", "mode": "bulk", "table.poll.interval.ms": "50"}
    connector, context = started_connector(cfg)
    try:
        assert len(connector.task_configs(4)) == 1
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE b (id INTEGER PRIMARY KEY)")
        deadline = time.monotonic() + 10
        while context.reconfigurations < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert context.reconfigurations == 1
        assert len(connector.task_configs(4)) == 2
        with engine.begin() as c:
            c.exec_driver_sql("DROP TABLE a")
        while context.reconfigurations < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert context.reconfigurations == 2
        assert [t.name for t in connector.tables()] == ["b"]
    finally:
        connector.stop()


def test_no_tables_means_no_tasks_until_one_appears(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, _ = sqlite_db
    connector, _ = started_connector(
        {"connection.url": url, "mode": "bulk", "table.whitelist": "later"}
    )
    try:
        assert connector.task_configs(3) == []
    finally:
        connector.stop()


def test_dropped_table_before_task_start_is_skipped(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, engine = sqlite_db
    with engine.begin() as c:
        c.exec_driver_sql("INSERT INTO items (name, updated) VALUES ('x', '2024-01-01 00:00:00')")
    connector, _ = started_connector({"connection.url": url, "mode": "bulk"})
    task_config = connector.task_configs(1)[0]
    connector.stop()
    with engine.begin() as c:
        c.exec_driver_sql("DROP TABLE nokey")

    task = JdbcSourceTask()
    task.initialize(TaskContext(task_config, MemoryOffsets()))
    task.start(task_config)
    try:
        assert values(poll_until(task, 1), "name") == ["x"]
    finally:
        task.stop()


# -- quoting ---------------------------------------------------------------------------------


def test_injection_shaped_names_are_quoted(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    table_name = 'x"; DROP TABLE victims; --'
    md = sa.MetaData()
    odd = sa.Table(
        table_name,
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("select", sa.Text),
        sa.Column("we'ird col", sa.Text),
    )
    victims = sa.Table("victims", md, sa.Column("id", sa.Integer, primary_key=True))
    md.create_all(engine)
    with engine.begin() as c:
        c.execute(odd.insert(), [{"select": "s", "we'ird col": "w"}])
    for quote in ("ALWAYS", "NEVER"):
        cfg = {
            "connection.url": f"jdbc:sqlite:{path}",
            "mode": "incrementing",
            "table.whitelist": table_name,
            "quote.sql.identifiers": quote,
            "topic.prefix": "p.",
        }
        [task] = start_tasks(cfg)
        try:
            [record] = poll_until(task, 1)
        finally:
            task.stop()
        assert record.value.to_dict() == {"id": 1, "select": "s", "we'ird col": "w"}
        assert record.topic == "p." + table_name
    assert sa.inspect(engine).has_table(victims.name)


# -- offsets ---------------------------------------------------------------------------------


def test_timestamp_offsets_use_javas_millis_and_nanos() -> None:
    ts = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    millis, nanos = timestamp_to_offset(ts)
    assert millis == int(ts.timestamp() * 1000) == 1714979289123
    assert nanos == 123456000
    assert offset_to_timestamp(millis, nanos) == ts
    assert offset_to_timestamp(millis, None) == ts.replace(microsecond=123000)
    before = dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=dt.UTC)
    assert offset_to_timestamp(*timestamp_to_offset(before)) == before


def test_resumes_from_confluent_offsets_including_legacy_partitions(
    sqlite_db: tuple[str, sa.Engine],
) -> None:
    url, engine = sqlite_db
    with engine.begin() as c:
        for i in range(1, 6):
            c.exec_driver_sql(
                "INSERT INTO items (name, updated) VALUES (?, ?)",
                (f"r{i}", f"2024-01-01 00:00:0{i}.000000"),
            )
    cfg = {"connection.url": url, "table.whitelist": "items", "poll.interval.ms": "50"}
    offsets = MemoryOffsets()
    offsets.put({"protocol": "1", "table": "items"}, {"incrementing": 3})
    [task] = start_tasks({**cfg, "mode": "incrementing"}, offsets)
    try:
        assert values(drain(task), "id") == [4, 5]
    finally:
        task.stop()
    # An offset written by an older Confluent version: legacy partition, ms + nanos.
    legacy = MemoryOffsets()
    legacy.put(
        {"table": "items"},
        {"timestamp": 1704067202000, "timestamp_nanos": 0, "incrementing": 2},
    )
    ts_cfg = {**cfg, "mode": "timestamp+incrementing", "timestamp.column.name": "updated"}
    [task] = start_tasks(ts_cfg, legacy)
    try:
        assert values(drain(task), "id") == [3, 4, 5]
    finally:
        task.stop()


def test_timestamp_initial_minus_one_skips_existing_rows(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, engine = sqlite_db
    with engine.begin() as c:
        c.exec_driver_sql("INSERT INTO items (name, updated) VALUES ('old', '2024-01-01 00:00:00')")
    cfg = {
        "connection.url": url,
        "mode": "timestamp",
        "table.whitelist": "items",
        "timestamp.column.name": "updated",
        "timestamp.initial": "-1",
        "poll.interval.ms": "20",
    }
    [task] = start_tasks(cfg)
    try:
        assert drain(task, quiet=0.1) == []
        fresh = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(milliseconds=1)
        with engine.begin() as c:
            c.exec_driver_sql(
                "INSERT INTO items (name, updated) VALUES ('new', ?)",
                (fresh.strftime("%Y-%m-%d %H:%M:%S.%f"),),
            )
        assert values(poll_until(task, 1), "name") == ["new"]
    finally:
        task.stop()


def test_sql_statement_shape(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, engine = sqlite_db
    cfg = {
        "connection.url": url,
        "mode": "timestamp+incrementing",
        "table.whitelist": "items",
        "timestamp.column.name": "maybe,updated",
    }
    [task] = start_tasks(cfg)
    try:
        querier = task._queriers[0]
        sql = str(querier.statement.compile(engine))
    finally:
        task.stop()
    assert 'FROM "items"' in sql
    assert 'coalesce("items"."maybe", "items"."updated") < ?' in sql
    assert '"items"."id" > ?' in sql and "ORDER BY coalesce" in sql


def test_db_timezone_reads_naive_timestamps_in_that_zone(sqlite_db: tuple[str, sa.Engine]) -> None:
    url, engine = sqlite_db
    with engine.begin() as c:
        for i, ts in enumerate(["2024-01-01 00:00:00.000000", "2024-07-01 00:00:00.000000"]):
            c.exec_driver_sql("INSERT INTO items (name, updated) VALUES (?, ?)", (f"r{i}", ts))
    cfg = {
        "connection.url": url,
        "mode": "timestamp",
        "table.whitelist": "items",
        "timestamp.column.name": "updated",
        "db.timezone": "America/New_York",
        "poll.interval.ms": "20",
    }
    offsets = MemoryOffsets()
    [task] = start_tasks(cfg, offsets)
    try:
        records = drain(task, offsets, quiet=0.1)
        stamps = [r.value["updated"].astimezone(dt.UTC) for r in records]
        assert stamps == [
            dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC),  # EST
            dt.datetime(2024, 7, 1, 4, tzinfo=dt.UTC),  # EDT
        ]
        assert records[-1].source_offset == {"timestamp": 1719806400000, "timestamp_nanos": 0}
    finally:
        task.stop()
    # The stored offset (UTC) is compared in New York wall time: nothing is read twice.
    [task] = start_tasks(cfg, offsets)
    try:
        assert drain(task, quiet=0.1) == []
    finally:
        task.stop()


def test_query_suffix_ends_every_generated_query(sqlite_db: tuple[str, sa.Engine]) -> None:
    """query.suffix (Confluent's key) is appended after ORDER BY: with LIMIT 2 each poll of the
    incrementing mode reads two more rows, in order, and the offsets carry on from there."""
    url, engine = sqlite_db
    with engine.begin() as c:
        for i in range(5):
            c.exec_driver_sql(
                "INSERT INTO items (name, updated) VALUES (?, '2024-01-01 00:00:00')", (f"r{i}",)
            )
    cfg = {
        "connection.url": url,
        "mode": "incrementing",
        "table.whitelist": "items",
        "query.suffix": "LIMIT 2;",
        "poll.interval.ms": "10",
    }
    offsets = MemoryOffsets()
    [task] = start_tasks(cfg, offsets)
    try:
        assert str(task._queriers[0].statement.compile(engine)).rstrip().endswith("LIMIT 2")
        batches: list[int] = []
        records: list[Any] = []
        while sum(batches) < 5:
            polled = task.poll()
            if polled:
                batches.append(len(polled))
                offsets.commit(polled)
                records = polled
        assert batches == [2, 2, 1]
        assert records[-1].source_offset == {"incrementing": 5}
    finally:
        task.stop()
