"""JDBC sink ``put()`` alone: ``JdbcSinkTask.put`` vs a hand-rolled SQLAlchemy ``executemany`` loop.

This times the sink task's ``put()`` called directly, in this process: no Kafka, no consumer, no
converter, no task runner. It is the database-writing half of a JDBC sink pipeline, not an
end-to-end figure (records from Kafka into the table); for the runtime's half, see
``bench_sink.py``.

Into a SQLite file and a private PostgreSQL server (``connectrt.testing.postgres``; skipped with
a note when its binaries are unavailable). N records with a 5-field ``Struct`` value (INT64 id,
STRING name, FLOAT64 amount, BOOLEAN flag, Timestamp at) are built once (untimed) and cut into
batches of 500 (the runtime's ``max.poll.records``). Then, in alternating rounds on a freshly
emptied table:

* raw: for each batch, ``with engine.begin(): conn.execute(insert(table), rows)`` where
  ``rows`` are the same values already as dicts (built untimed): the database's own cost;
* connectrt: ``task.put(batch)`` of the ``SinkRecord`` s (struct -> row dicts, timestamp
  adaptation, plan lookup, one transaction per put), table created by ``auto.create``.

Variants: ``insert``; ``upsert`` (pk.mode=record_value, raw side the dialect's
``INSERT ... ON CONFLICT DO UPDATE``); ``insert`` with ``exactly.once.enabled`` (raw side
without the offsets upsert, so the ratio shows its cost); on PostgreSQL also ``insert`` with
``postgresql.copy.enabled`` (COPY FROM STDIN; raw side still executemany INSERT). Prints the
median round's rows/s and the ratio (target >= 0.85). Also the sink's own per-record cost:
``put()`` with the database write replaced by a no-op (grouping, plan lookup, row dicts).
Each side first writes one warm-up row (table creation, statement compilation, the first
connection) and starts its clock once it is committed; rounds (``--rounds``, at least 5 by
default) alternate, the order rotating. The RESULT line is SQLite ``insert``. Asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c
import sqlalchemy as sa

from connectors.jdbc.sink.statements import upsert
from connectors.jdbc.sink.task import JdbcSinkTask
from connectrt.api import SinkRecord
from connectrt.data import Schema, SchemaBuilder, Struct, Timestamp
from connectrt.testing.contexts import RecordingSinkTaskContext

BATCH = 500
VALUE = (
    SchemaBuilder.struct()
    .name("event")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("amount", Schema.FLOAT64_SCHEMA)
    .field("flag", Schema.BOOLEAN_SCHEMA)
    .field("at", Timestamp.builder().build())
    .build()
)
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
VARIANTS: dict[str, dict[str, str]] = {
    "insert": {},
    "upsert": {"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"},
    "insert+exactly.once": {"exactly.once.enabled": "true"},
    "insert+copy": {"postgresql.copy.enabled": "true"},
}
POSTGRES_ONLY = {"insert+copy"}


def make_batches(n: int) -> tuple[list[list[SinkRecord]], list[list[dict[str, Any]]]]:
    records: list[list[SinkRecord]] = []
    rows: list[list[dict[str, Any]]] = []
    for start in range(0, n, BATCH):
        rb: list[SinkRecord] = []
        rw: list[dict[str, Any]] = []
        for i in range(start, min(n, start + BATCH)):
            at = EPOCH + dt.timedelta(milliseconds=i)
            s = Struct(VALUE)
            s.put("id", i).put("name", f"name-{i}").put("amount", i * 0.5).put("flag", i % 2 == 0)
            s.put("at", at)
            rb.append(SinkRecord("bench", i % 4, None, None, VALUE, s, i // 4))
            rw.append(
                {
                    "id": i,
                    "name": f"name-{i}",
                    "amount": i * 0.5,
                    "flag": i % 2 == 0,
                    "at": at.replace(tzinfo=None),
                }
            )
        records.append(rb)
        rows.append(rw)
    return records, rows


def _empty(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for table in ("events", "__connect_offsets"):
            if sa.inspect(conn).has_table(table):
                conn.execute(sa.text(f'DELETE FROM "{table}"'))


def run_sink(url: str, variant: dict[str, str], batches: list[list[SinkRecord]]) -> float:
    config = {
        "name": "bench-jdbc",
        "connection.url": url,
        "table.name.format": "events",
        "auto.create": "true",
        **variant,
    }
    task = JdbcSinkTask()
    task.initialize(RecordingSinkTaskContext(config))
    task.start(config)
    try:
        task.put(batches[0][:1])  # create the table and the plan outside the clock
        assert task._engine is not None
        _empty(task._engine)
        t0 = time.perf_counter()
        for batch in batches:
            task.put(batch)
        return time.perf_counter() - t0
    finally:
        task.stop()


def put_cost_us(url: str, batches: list[list[SinkRecord]]) -> float:
    """Microseconds per record of ``put()`` minus the database write (median of 5 passes)."""
    config = {"name": "bench-cpu", "connection.url": url, "table.name.format": "events_cpu"}
    task = JdbcSinkTask()
    task.initialize(RecordingSinkTaskContext({**config, "auto.create": "true"}))
    task.start({**config, "auto.create": "true"})
    try:
        task.put(batches[0][:1])
        task._write = lambda *args: None  # type: ignore[method-assign]
        n = sum(map(len, batches))
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            for batch in batches:
                task.put(batch)
            times.append(time.perf_counter() - t0)
        return statistics.median(times) / n * 1e6
    finally:
        task.stop()


def run_raw(url: str, variant: dict[str, str], rows: list[list[dict[str, Any]]]) -> float:
    engine = sa.create_engine(url)
    try:
        table = sa.Table("events", sa.MetaData(), autoload_with=engine)
        stmt: Any = sa.insert(table)
        if variant.get("insert.mode") == "upsert":
            cols = ("name", "amount", "flag", "at")
            stmt = upsert(table, engine.dialect.name, ("id",), cols)
        with engine.begin() as conn:  # warm-up row: the first connection, the statement
            conn.execute(stmt, rows[0][:1])
        _empty(engine)
        t0 = time.perf_counter()
        for batch in rows:
            with engine.begin() as conn:
                conn.execute(stmt, batch)
        return time.perf_counter() - t0
    finally:
        engine.dispose()


def bench_database(
    label: str, url: str, n: int, rounds: int, batches: Any, rows: Any
) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, variant in VARIANTS.items():
        if name in POSTGRES_ONLY and label != "postgresql":
            continue
        raw_t: list[float] = []
        sink_t: list[float] = []
        run_sink(url, variant, batches[:1])  # creates the table the raw side loads
        for r in range(rounds):
            for side in c.rotated(("sink", "raw"), r):
                if side == "sink":
                    sink_t.append(c.window(run_sink(url, variant, batches)))
                else:
                    raw_t.append(c.window(run_raw(url, variant, rows)))
            print(
                f"  {label} [{name}] round {r}: raw {c.rate(n, raw_t[-1]):,.0f} rows/s, "
                f"sink {c.rate(n, sink_t[-1]):,.0f} rows/s",
                flush=True,
            )
        rates = c.report(
            f"{label} [{name}]: rows/s (median of {rounds})",
            [
                ("raw executemany", n, statistics.median(raw_t)),
                ("JdbcSinkTask.put (alone)", n, statistics.median(sink_t)),
            ],
        )
        raw, sink = rates["raw executemany"], rates["JdbcSinkTask.put (alone)"]
        print(f"  ratio sink/raw = {sink / raw:.2f}  (target >= 0.85)")
        key = f"{label}_{name.replace('+', '_').replace('.', '_')}"
        out.update({f"{key}_raw": raw, f"{key}_sink": sink, f"{key}_ratio": sink / raw})
        _drop(url)
    return out


def _drop(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in ("events", "__connect_offsets"):
                conn.execute(sa.text(f'DROP TABLE IF EXISTS "{table}"'))
    finally:
        engine.dispose()


def _with_postgres(fn: Callable[[str], dict[str, float]]) -> dict[str, float]:
    from connectrt.testing.postgres import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer().start()
    except PostgresUnavailable as e:
        print(f"  PostgreSQL unavailable, skipped: {e}")
        return {}
    try:
        return fn(server.create_database("bench_jdbc_sink"))
    finally:
        server.stop()


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    c.add_broker_option(ap, used=False)
    args = ap.parse_args()
    c.setup_logging()
    n = args.records
    print(
        f"bench_jdbc_sink: put() alone (no Kafka, not end to end), {n:,} records (5-field "
        f"struct), batches of {BATCH}, {args.rounds} alternating rounds per variant, order "
        f"rotating (median reported); {c.machine()}"
    )
    c.print_broker(None)
    batches, rows = make_batches(n)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        cost = put_cost_us(url, batches)
        print(f"\n== put() without the database write: {cost:.2f} us/record")
        out["put_us_per_record"] = cost
        out.update(bench_database("sqlite", url, n, args.rounds, batches, rows))
    if not args.no_postgres:
        out.update(
            _with_postgres(
                lambda url: bench_database("postgresql", url, n, args.rounds, batches, rows)
            )
        )
    return out


if __name__ == "__main__":
    figures = main()
    c.result("bench_jdbc_sink", figures["sqlite_insert_sink"], figures["sqlite_insert_raw"])
