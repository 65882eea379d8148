"""JdbcSinkTask used directly with in-process records on real SQLite files (no broker).

Covers every insert mode and pk mode, auto.create/auto.evolve (and the incompatible changes
that must fail naming table and column), deletes, schemaless maps, quoting of hostile names,
the exactly-once offsets (rewind on open, skip of applied records, pre_commit), transient
error retries and the failure paths (bad URL, missing table, unmappable records).
"""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.jdbc.sink import JdbcSinkConnector
from connectors.jdbc.sink.task import JdbcSinkTask
from connectrt.api import (
    ConfigError,
    ConnectError,
    ErrantRecordReporter,
    RetriableError,
    SinkRecord,
    TopicPartition,
)
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.testing.contexts import RecordingSinkTaskContext as Context

# --- test doubles -----------------------------------------------------------------------------


class Reporter(ErrantRecordReporter):
    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> None:
        self.reported.append((record, error))


VALUE = (
    SchemaBuilder.struct()
    .name("order")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.OPTIONAL_STRING_SCHEMA)
    .field("amount", Decimal.builder(2).optional().build())
    .field("day", Date.builder().optional().build())
    .field("at", Timestamp.builder().optional().build())
    .field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA)
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("ratio", Schema.OPTIONAL_FLOAT64_SCHEMA)
    .build()
)
KEY = SchemaBuilder.struct().name("key").field("id", Schema.INT64_SCHEMA).build()


def order(i: int, name: str | None = None, schema: Schema = VALUE) -> Struct:
    s = Struct(schema)
    for f in schema.fields:
        value: Any = {
            "id": i,
            "name": name if name is not None else f"n{i}",
            "amount": decimal.Decimal(f"{i}.25"),
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "at": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
            "ok": i % 2 == 0,
            "blob": bytes([i % 256]),
            "ratio": i / 4,
        }.get(f.name)
        if value is not None:
            s.put(f.name, value)
    return s


def key(i: int) -> Struct:
    return Struct(KEY).put("id", i)


def rec(
    value: Any,
    offset: int,
    *,
    topic: str = "orders",
    partition: int = 0,
    k: Any = None,
    key_schema: Schema | None = None,
    value_schema: Schema | None = VALUE,
) -> SinkRecord:
    if isinstance(k, Struct):
        key_schema = k.schema
    if value_schema is VALUE:
        vs = value.schema if isinstance(value, Struct) else None
    else:
        vs = value_schema
    return SinkRecord(topic, partition, key_schema, k, vs, value, offset)


def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sink.db'}"


def make_task(
    tmp_path: Path, reporter: Reporter | None = None, **props: str
) -> tuple[JdbcSinkTask, Context]:
    config = {
        "name": "jdbc-sink",
        "connection.url": db_url(tmp_path),
        "auto.create": "true",
        "retry.backoff.ms": "10",
        **props,
    }
    task = JdbcSinkTask()
    context = Context(config, reporter)
    task.initialize(context)
    task.start(config)
    return task, context


def rows(tmp_path: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(tmp_path / "sink.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def tasks() -> Any:
    started: list[JdbcSinkTask] = []
    yield started
    for t in started:
        t.stop()


# --- insert modes and pk modes ----------------------------------------------------------------


def test_insert_auto_creates_the_table_with_mapped_types(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path)
    tasks.append(task)
    task.put([rec(order(i), i) for i in range(5)])
    engine = sa.create_engine(db_url(tmp_path))
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns("orders")}
    engine.dispose()
    assert list(columns) == ["id", "name", "amount", "day", "at", "ok", "blob", "ratio"]
    assert str(columns["amount"]["type"]) == "NUMERIC(38, 2)"
    assert str(columns["day"]["type"]) == "DATE"
    assert str(columns["at"]["type"]) == "DATETIME"
    assert str(columns["id"]["type"]) == "BIGINT"
    assert columns["id"]["nullable"] is False and columns["name"]["nullable"] is True
    got = rows(
        tmp_path, "SELECT id, name, amount, day, at, ok, blob, ratio FROM orders ORDER BY id"
    )
    assert got[3] == (3, "n3", 3.25, "2024-01-04", "2024-01-01 12:00:03.000000", 0, b"\x03", 0.75)
    assert len(got) == 5


def test_insert_with_kafka_pk_rejects_a_replay_and_upsert_absorbs_it(
    tmp_path: Path, tasks: list
) -> None:
    task, _ = make_task(tmp_path, **{"pk.mode": "kafka"})
    tasks.append(task)
    task.put([rec(order(i), i) for i in range(3)])
    assert rows(
        tmp_path,
        "SELECT __connect_topic, __connect_partition, __connect_offset, id FROM orders ORDER BY 3",
    ) == [("orders", 0, i, i) for i in range(3)]
    with pytest.raises(ConnectError, match="UNIQUE constraint failed"):
        task.put([rec(order(2), 2)])
    task.stop()
    task, _ = make_task(tmp_path, **{"pk.mode": "kafka", "insert.mode": "upsert"})
    tasks.append(task)
    task.put([rec(order(2, "again"), 2), rec(order(3), 3)])
    assert rows(tmp_path, "SELECT __connect_offset, name FROM orders ORDER BY 1") == [
        (0, "n0"),
        (1, "n1"),
        (2, "again"),
        (3, "n3"),
    ]


def test_upsert_by_record_key_updates_existing_rows(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"pk.mode": "record_key", "insert.mode": "upsert"})
    tasks.append(task)
    task.put([rec(order(i), i, k=key(i)) for i in range(4)])
    task.put([rec(order(1, "one"), 4, k=key(1)), rec(order(9), 5, k=key(9))])
    assert rows(tmp_path, "SELECT id, name FROM orders ORDER BY id") == [
        (0, "n0"),
        (1, "one"),
        (2, "n2"),
        (3, "n3"),
        (9, "n9"),
    ]


def test_update_mode_changes_only_existing_rows(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"pk.mode": "record_value", "pk.fields": "id"})
    tasks.append(task)
    task.put([rec(order(i), i) for i in range(3)])
    task.stop()
    task, _ = make_task(
        tmp_path, **{"pk.mode": "record_value", "pk.fields": "id", "insert.mode": "update"}
    )
    tasks.append(task)
    task.put([rec(order(1, "upd"), 3), rec(order(7, "ghost"), 4)])
    assert rows(tmp_path, "SELECT id, name FROM orders ORDER BY id") == [
        (0, "n0"),
        (1, "upd"),
        (2, "n2"),
    ]


def test_primitive_key_and_whitelist(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(
        tmp_path,
        **{
            "pk.mode": "record_key",
            "pk.fields": "order_key",
            "fields.whitelist": "name,ratio",
            "insert.mode": "upsert",
        },
    )
    tasks.append(task)
    task.put(
        [rec(order(i), i, k=f"k{i}", key_schema=Schema.STRING_SCHEMA) for i in range(2)]
        + [rec(order(0, "zero"), 2, k="k0", key_schema=Schema.STRING_SCHEMA)]
    )
    assert rows(tmp_path, "SELECT * FROM orders ORDER BY 1") == [
        ("k0", "zero", 0.0),
        ("k1", "n1", 0.25),
    ]


def test_record_key_with_several_pk_fields_of_a_struct_key(tmp_path: Path, tasks: list) -> None:
    ks = (
        SchemaBuilder.struct()
        .field("region", Schema.STRING_SCHEMA)
        .field("id", Schema.INT64_SCHEMA)
        .build()
    )
    task, _ = make_task(tmp_path, **{"pk.mode": "record_key", "insert.mode": "upsert"})
    tasks.append(task)
    batch = [
        rec(order(i), i, k=Struct(ks).put("region", r).put("id", i))
        for i, r in enumerate(["eu", "us", "eu"])
    ]
    task.put(batch)
    pk = rows(tmp_path, "SELECT name FROM pragma_table_info('orders') WHERE pk > 0 ORDER BY pk")
    assert pk == [("region",), ("id",)]
    assert rows(tmp_path, "SELECT count(*) FROM orders") == [(3,)]


# --- deletes ----------------------------------------------------------------------------------


def test_tombstones_delete_by_key(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(
        tmp_path, **{"pk.mode": "record_key", "insert.mode": "upsert", "delete.enabled": "true"}
    )
    tasks.append(task)
    task.put(
        [rec(order(i), i, k=key(i)) for i in range(4)]
        + [rec(None, 4, k=key(1)), rec(None, 5, k=key(3)), rec(order(3, "back"), 6, k=key(3))]
    )
    assert rows(tmp_path, "SELECT id, name FROM orders ORDER BY id") == [
        (0, "n0"),
        (2, "n2"),
        (3, "back"),
    ]


def test_delete_enabled_requires_record_key_mode(tmp_path: Path) -> None:
    config = {"connection.url": db_url(tmp_path), "delete.enabled": "true", "pk.mode": "kafka"}
    result = JdbcSinkConnector().validate(config)
    assert result["delete.enabled"].errors == [
        "Primary key mode must be 'record_key' when delete support is enabled"
    ]
    with pytest.raises(ConfigError, match="Primary key mode must be 'record_key'"):
        JdbcSinkConnector().start(config)


def test_exactly_once_is_refused_in_a_share_group(tmp_path: Path) -> None:
    """Exactly once rewinds the consumer to the database's offsets: a share group (issue 37)
    owns no partitions and cannot seek, so the combination is an error on exactly.once.enabled
    at validation and at start; a classic group (or no exactly once) is fine."""
    config = {
        "connection.url": db_url(tmp_path),
        "exactly.once.enabled": "true",
        "consumer.group.type": "Share",
    }
    errors = {k: v.errors for k, v in JdbcSinkConnector().validate(config).items() if v.errors}
    assert list(errors) == ["exactly.once.enabled"]
    assert "consumer.group.type=share" in errors["exactly.once.enabled"][0]
    with pytest.raises(ConfigError, match=r"cannot be used with consumer\.group\.type=share"):
        JdbcSinkConnector().start(config)
    for ok in (
        {**config, "consumer.group.type": "classic"},
        {**config, "exactly.once.enabled": "false"},
    ):
        assert not any(v.errors for v in JdbcSinkConnector().validate(ok).values())


def test_tombstone_without_delete_enabled_is_an_unwritable_record(
    tmp_path: Path, tasks: list
) -> None:
    reporter = Reporter()
    task, _ = make_task(tmp_path, reporter, **{"pk.mode": "record_key"})
    tasks.append(task)
    task.put([rec(order(1), 0, k=key(1)), rec(None, 1, k=key(1)), rec(order(2), 2, k=key(2))])
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(1,), (2,)]
    assert [r.kafka_offset for r, _ in reporter.reported] == [1]


# --- auto.evolve ------------------------------------------------------------------------------


def _extended(extra: Schema, name: str = "extra") -> Schema:
    builder = SchemaBuilder.struct().name("order")
    for f in VALUE.fields:
        builder.field(f.name, f.schema)
    return builder.field(name, extra).build()


def test_auto_evolve_adds_nullable_columns(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"auto.evolve": "true"})
    tasks.append(task)
    task.put([rec(order(1), 0)])
    wider = _extended(Schema.OPTIONAL_STRING_SCHEMA)
    with_default = _extended(SchemaBuilder.int32().default_value(7).build(), "level")
    task.put(
        [rec(order(2, schema=wider).put("extra", "x"), 1), rec(order(3, schema=with_default), 2)]
    )
    assert rows(tmp_path, "SELECT id, extra, level FROM orders ORDER BY id") == [
        (1, None, None),
        (2, "x", None),
        (3, None, 7),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (Schema.STRING_SCHEMA, "new field 'extra' is required and has no default"),
        (None, "column 'name' has type TEXT but the record field is INT64"),
    ],
)
def test_incompatible_evolution_fails_naming_table_and_column(
    tmp_path: Path, tasks: list, extra: Schema | None, message: str
) -> None:
    task, _ = make_task(tmp_path, **{"auto.evolve": "true"})
    tasks.append(task)
    task.put([rec(order(1), 0)])
    if extra is not None:
        changed = _extended(extra)
        value = order(2, schema=changed).put("extra", "x")
    else:
        changed = (
            SchemaBuilder.struct()
            .name("order")
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.INT64_SCHEMA)
            .build()
        )
        value = Struct(changed).put("id", 2).put("name", 5)
    with pytest.raises(ConnectError, match=r"(?i)table 'orders'") as err:
        task.put([rec(value, 1)])
    assert message in str(err.value)
    assert rows(tmp_path, "SELECT count(*) FROM orders") == [(1,)]


def test_missing_column_without_auto_evolve_fails(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path)
    tasks.append(task)
    task.put([rec(order(1), 0)])
    wider = _extended(Schema.OPTIONAL_STRING_SCHEMA)
    with pytest.raises(
        ConnectError, match=r"missing column\(s\) extra and auto.evolve is disabled"
    ):
        task.put([rec(order(2, schema=wider), 1)])


# --- failure paths ----------------------------------------------------------------------------


def test_missing_table_without_auto_create_fails(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"auto.create": "false"})
    tasks.append(task)
    with pytest.raises(
        ConnectError, match=r"Table 'orders' is missing and auto\.create is disabled"
    ):
        task.put([rec(order(1), 0)])


def test_db_timezone_writes_timestamps_as_wall_clock_time_in_that_zone(
    tmp_path: Path, tasks: list
) -> None:
    task, _ = make_task(tmp_path, **{"db.timezone": "Europe/Paris"})
    tasks.append(task)
    winter = order(1)  # at = 2024-01-01 12:00:01 UTC: 13:00:01 in Paris (UTC+1)
    summer = order(2)
    summer.put("at", dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC))  # 14:00 (UTC+2)
    task.put([rec(winter, 0), rec(summer, 1)])
    assert rows(tmp_path, "SELECT id, at FROM orders ORDER BY id") == [
        (1, "2024-01-01 13:00:01.000000"),
        (2, "2024-07-01 14:00:00.000000"),
    ]


def test_invalid_db_timezone_is_a_per_field_error() -> None:
    config = {"connection.url": "sqlite://", "topics": "t", "db.timezone": "Mars/Olympus"}
    errors = {name: v.errors for name, v in JdbcSinkConnector().validate(config).items()}
    assert errors["db.timezone"] == ["Invalid time zone: Mars/Olympus"]
    with pytest.raises(ConfigError, match="Invalid time zone: Mars/Olympus"):
        JdbcSinkTask().start(config)


def test_bad_urls_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Unsupported JDBC URL scheme 'jdbc:oracle:'"):
        JdbcSinkConnector().start({"connection.url": "jdbc:oracle:thin:@h:1521:x"})
    missing_dir = tmp_path / "no" / "such" / "dir" / "x.db"
    with pytest.raises(ConnectError, match=r"Could not connect to sqlite:///.*unable to open"):
        JdbcSinkConnector().start(
            {"connection.url": f"sqlite:///{missing_dir}", "connection.attempts": "1"}
        )
    with pytest.raises(ConnectError, match=r"Could not connect to .*\*\*\*.*after 2 attempt"):
        JdbcSinkConnector().start(
            {
                "connection.url": "jdbc:postgresql://127.0.0.1:1/db?user=u&password=hunter2",
                "connection.attempts": "2",
                "connection.backoff.ms": "10",
            }
        )


def test_password_never_appears_in_the_connection_error() -> None:
    with pytest.raises(ConnectError) as err:
        JdbcSinkConnector().start(
            {
                "connection.url": "postgresql://127.0.0.1:1/db",
                "connection.user": "u",
                "connection.password": "s3cr3t-pw",
                "connection.attempts": "1",
            }
        )
    assert "s3cr3t-pw" not in str(err.value)


def test_schemaless_maps_need_an_existing_table(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path)
    tasks.append(task)
    with pytest.raises(ConnectError, match="the record has no schema to create it from"):
        task.put([rec({"id": 1, "name": "a"}, 0)])
    con = sqlite3.connect(tmp_path / "sink.db")
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    task.stop()
    task, _ = make_task(tmp_path)
    tasks.append(task)
    task.put([rec({"id": 1, "name": "a"}, 0), rec({"name": "b", "id": 2}, 1)])
    assert rows(tmp_path, "SELECT id, name FROM orders ORDER BY id") == [(1, "a"), (2, "b")]
    with pytest.raises(ConnectError, match="Table 'orders' has no column\\(s\\) colour"):
        task.put([rec({"id": 3, "colour": "red"}, 2)])


def test_unmappable_records_go_to_the_reporter(tmp_path: Path, tasks: list) -> None:
    reporter = Reporter()
    task, _ = make_task(tmp_path, reporter)
    tasks.append(task)
    nested = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("inner", KEY).build()
    bad = Struct(nested).put("id", 1).put("inner", key(1))
    task.put(
        [
            rec(order(1), 0),
            rec(bad, 1),
            rec("just text", 2, value_schema=Schema.STRING_SCHEMA),
            rec(order(2), 3),
        ]
    )
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(1,), (2,)]
    errors = {r.kafka_offset: str(e) for r, e in reporter.reported}
    assert "Field 'inner' has type STRUCT" in errors[1]
    assert "the value is STRING" in errors[2]


class RaisingReporter(Reporter):
    """Fails on its first report, as a worker would when the dead letter queue is down."""

    def report(self, record: SinkRecord, error: BaseException) -> None:
        super().report(record, error)
        raise RuntimeError("dead letter queue unavailable")


def _no_twos(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "sink.db")
    con.execute(
        "CREATE TRIGGER no_twos BEFORE INSERT ON orders WHEN NEW.id = 2 "
        "BEGIN SELECT RAISE(ABORT, 'no twos'); END"
    )
    con.commit()
    con.close()


def test_rows_the_database_rejects_go_to_the_reporter_and_the_rest_is_written(
    tmp_path: Path, tasks: list
) -> None:
    """A duplicate key and a row a trigger refuses fail the batch's executemany; with a
    reporter the batch is written row by row in savepoints: exactly those two are reported."""
    reporter = Reporter()
    task, _ = make_task(tmp_path, reporter, **{"pk.mode": "record_value", "pk.fields": "id"})
    tasks.append(task)
    task.put([rec(order(1), 0)])
    _no_twos(tmp_path)
    task.put([rec(order(i), i) for i in (3, 1, 2, 4)])  # offsets 3, 1 (duplicate id), 2, 4
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(1,), (3,), (4,)]
    errors = {r.kafka_offset: str(e) for r, e in reporter.reported}
    assert set(errors) == {1, 2}
    assert "UNIQUE constraint failed" in errors[1] and "no twos" in errors[2]
    assert all(e.startswith("The database rejected it") for e in errors.values())
    task.put([rec(order(5), 5)])  # the task goes on
    assert rows(tmp_path, "SELECT count(*) FROM orders") == [(4,)]


def test_rejected_rows_without_a_reporter_fail_the_task_and_write_nothing(
    tmp_path: Path, tasks: list
) -> None:
    task, _ = make_task(tmp_path, **{"pk.mode": "record_value", "pk.fields": "id"})
    tasks.append(task)
    task.put([rec(order(1), 0)])
    with pytest.raises(ConnectError, match="UNIQUE constraint failed"):
        task.put([rec(order(3), 1), rec(order(1), 2)])
    assert rows(tmp_path, "SELECT id FROM orders") == [(1,)]


def test_row_by_row_retry_keeps_exactly_once_offsets_in_the_same_transaction(
    tmp_path: Path, tasks: list
) -> None:
    props = {"exactly.once.enabled": "true", "pk.mode": "record_value", "pk.fields": "id"}
    reporter = Reporter()
    task, _ = make_task(tmp_path, reporter, **props)
    tasks.append(task)
    task.open([TopicPartition("orders", 0)])
    task.put([rec(order(0), 0)])
    _no_twos(tmp_path)
    task.put([rec(order(1), 1), rec(order(2), 2), rec(order(3), 3)])
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(0,), (1,), (3,)]
    assert rows(tmp_path, "SELECT next_offset FROM __connect_offsets") == [(4,)]
    assert [r.kafka_offset for r, _ in reporter.reported] == [2]
    # A failure during the row-by-row pass (the reporter raises) rolls back its rows and
    # offsets together: nothing of the batch is in the database.
    task.stop()
    task, _ = make_task(tmp_path, RaisingReporter(), **props)
    tasks.append(task)
    task.open([TopicPartition("orders", 0)])
    with pytest.raises(RuntimeError, match="dead letter queue unavailable"):
        task.put([rec(order(5), 4), rec(order(2), 5), rec(order(6), 6)])
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(0,), (1,), (3,)]
    assert rows(tmp_path, "SELECT next_offset FROM __connect_offsets") == [(4,)]


def test_hostile_topic_and_field_names_are_quoted(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"table.name.format": "t_${topic}"})
    tasks.append(task)
    topic = 'x"; DROP TABLE keep; --'
    schema = (
        SchemaBuilder.struct()
        .field('a"b; DELETE FROM keep', Schema.INT32_SCHEMA)
        .field("100% (sure)", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    con = sqlite3.connect(tmp_path / "sink.db")
    con.execute("CREATE TABLE keep (v INTEGER)")
    con.execute("INSERT INTO keep VALUES (1)")
    con.commit()
    con.close()
    value = Struct(schema).put('a"b; DELETE FROM keep', 5).put("100% (sure)", "yes")
    task.put([rec(value, 0, topic=topic)])
    assert rows(tmp_path, "SELECT * FROM keep") == [(1,)]
    assert rows(tmp_path, 'SELECT * FROM "t_x""; DROP TABLE keep; --"') == [(5, "yes")]


def test_quote_never_still_writes(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"quote.sql.identifiers": "never"})
    tasks.append(task)
    task.put([rec(order(i), i) for i in range(2)])
    assert rows(tmp_path, "SELECT count(*) FROM orders") == [(2,)]


# --- transient errors -------------------------------------------------------------------------


def test_locked_database_is_retried_then_fails_after_max_retries(
    tmp_path: Path, tasks: list
) -> None:
    task, context = make_task(tmp_path, **{"max.retries": "2", "retry.backoff.ms": "25"})
    tasks.append(task)
    task.put([rec(order(0), 0)])
    engine = task._engine
    assert engine is not None
    sa.event.listen(engine, "connect", lambda c, _: c.execute("PRAGMA busy_timeout = 50"))
    engine.dispose()  # new connections get the short busy timeout
    locker = sqlite3.connect(tmp_path / "sink.db", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    batch = [rec(order(i), i) for i in range(1, 4)]
    try:
        for _ in range(2):
            with pytest.raises(RetriableError, match="database is locked"):
                task.put(batch)
        assert context.timeouts == [25, 25]
        with pytest.raises(ConnectError, match="failed after 2 retries: database is locked"):
            task.put(batch)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    task.put(batch)  # lock gone: the redelivered batch goes through once; budget restored
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [(0,), (1,), (2,), (3,)]
    assert task._retries_left == 2


# --- exactly once -----------------------------------------------------------------------------


def test_exactly_once_stores_offsets_with_rows_and_rewinds_on_open(
    tmp_path: Path, tasks: list
) -> None:
    props = {"exactly.once.enabled": "true", "exactly.once.offsets.table": "offs"}
    task, _ = make_task(tmp_path, **props)
    tasks.append(task)
    p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    task.open([p0, p1])
    task.put([rec(order(i), i) for i in range(3)] + [rec(order(10), 5, partition=1)])
    assert rows(
        tmp_path, "SELECT connector, topic, kafka_partition, next_offset FROM offs ORDER BY 3"
    ) == [("jdbc-sink", "orders", 0, 3), ("jdbc-sink", "orders", 1, 6)]
    assert task.pre_commit({p0: 3, p1: 6}) == {p0: 3, p1: 6}
    task.stop()  # "crash": Kafka never saw a commit

    task, context = make_task(tmp_path, **props)
    tasks.append(task)
    task.open([p0, p1])
    assert context.rewinds == {p0: 3, p1: 6}
    # Redelivery from an older position (e.g. the records were already in flight):
    # only records at or after the stored offsets are written.
    task.put([rec(order(i), i) for i in range(1, 5)] + [rec(order(11), 6, partition=1)])
    assert task.records_skipped_as_applied == 2
    assert rows(tmp_path, "SELECT id FROM orders ORDER BY id") == [
        (i,) for i in (0, 1, 2, 3, 4, 10, 11)
    ]
    assert task.pre_commit({p0: 5, p1: 7}) == {p0: 5, p1: 7}
    task.close([p1])
    assert task.pre_commit({p0: 5, p1: 7}) == {p0: 5}


def test_exactly_once_rolls_back_rows_and_offsets_together(tmp_path: Path, tasks: list) -> None:
    task, _ = make_task(tmp_path, **{"exactly.once.enabled": "true", "pk.mode": "kafka"})
    tasks.append(task)
    task.open([TopicPartition("orders", 0)])
    task.put([rec(order(0), 0)])
    con = sqlite3.connect(tmp_path / "sink.db")
    con.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON orders WHEN NEW.id = 2 "
        "BEGIN SELECT RAISE(ABORT, 'no twos'); END"
    )
    con.commit()
    con.close()
    with pytest.raises(ConnectError, match="no twos"):
        task.put([rec(order(1), 1), rec(order(2), 2)])
    assert rows(tmp_path, "SELECT next_offset FROM __connect_offsets") == [(1,)]
    assert rows(tmp_path, "SELECT id FROM orders") == [(0,)]


def test_alter_offsets_updates_the_offsets_table(tmp_path: Path, tasks: list) -> None:
    props = {
        "name": "jdbc-sink",
        "connection.url": db_url(tmp_path),
        "exactly.once.enabled": "true",
    }
    task, _ = make_task(tmp_path, **{"exactly.once.enabled": "true"})
    tasks.append(task)
    task.put([rec(order(i), i, partition=i % 2) for i in range(4)])
    p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    assert JdbcSinkConnector().alter_offsets(props, {p0: 1, p1: None}) is True
    assert rows(tmp_path, "SELECT kafka_partition, next_offset FROM __connect_offsets") == [(0, 1)]


def test_copy_needs_insert_mode_and_is_ignored_off_postgres(tmp_path: Path, tasks: list) -> None:
    config = {
        "connection.url": db_url(tmp_path),
        "postgresql.copy.enabled": "true",
        "insert.mode": "upsert",
        "pk.mode": "kafka",
    }
    assert JdbcSinkConnector().validate(config)["postgresql.copy.enabled"].errors == [
        "postgresql.copy.enabled needs insert.mode=insert"
    ]
    task, _ = make_task(tmp_path, **{"postgresql.copy.enabled": "true"})
    tasks.append(task)
    task.put([rec(order(i), i) for i in range(3)])  # SQLite: plain INSERT
    assert rows(tmp_path, "SELECT count(*) FROM orders") == [(3,)]
