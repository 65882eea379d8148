"""JDBC source throughput: rows/s reading one table in each mode, vs a raw SQLAlchemy read.

For each database (a SQLite file; a private PostgreSQL server from ``connectrt.testing``) a
table ``bench_rows`` (id INTEGER PK, name TEXT, amount NUMERIC(10,2), updated TIMESTAMP,
flag BOOLEAN) is filled with N rows. Then, per mode (bulk, incrementing, timestamp,
timestamp+incrementing):

* connectrt: a started ``JdbcSourceTask`` (``batch.max.rows`` 5000) polled until it returned N
  records: query, fetch, per-column conversion, Struct and SourceRecord with its offset map;
* raw: the same SELECT (the querier's own statement and parameters, first query) executed with
  ``stream_results`` and drained with ``fetchmany(5000)``, rows touched but not converted.

No broker: this measures the connector, not the producer (bench_source.py covers that). Both
clocks start with a connection open and used (the task's ``start()`` opens one; the raw side
runs ``SELECT 1`` on its connection first). Alternating rounds (``--rounds``, at least 5 by
default, the order rotating), medians. Prints rows/s and the ratio; the RESULT line is SQLite
``bulk``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as c
import sqlalchemy as sa

from connectors.jdbc.source import JdbcSourceConnector
from connectors.jdbc.source.task import JdbcSourceTask
from connectrt.testing.contexts import RecordingConnectorContext, StandaloneSourceTaskContext

MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")
BATCH = 5000


def fill(engine: sa.Engine, rows: int) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE IF EXISTS bench_rows")
        conn.exec_driver_sql(
            "CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "amount NUMERIC(10,2) NOT NULL, updated TIMESTAMP NOT NULL, flag BOOLEAN NOT NULL)"
        )
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql(
                "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq "
                f"WHERE x < {rows}) INSERT INTO bench_rows SELECT x, 'name-' || x, "
                "(x % 100000) / 100.0, strftime('%Y-%m-%d %H:%M:%f', '2024-01-01', "
                "(x / 1000.0) || ' seconds'), x % 2 FROM seq"
            )
        else:
            conn.exec_driver_sql(
                "INSERT INTO bench_rows SELECT x, 'name-' || x, mod(x, 100000) / 100.0, "
                "timestamp '2024-01-01' + x * interval '1 millisecond', mod(x, 2) = 0 "
                f"FROM generate_series(1, {rows}) AS x"
            )


def start_task(config: dict[str, str]) -> JdbcSourceTask:
    connector = JdbcSourceConnector()
    connector.initialize(RecordingConnectorContext())
    connector.start(config)
    [task_config] = connector.task_configs(1)
    connector.stop()
    task = JdbcSourceTask()
    task.initialize(StandaloneSourceTaskContext(task_config))
    task.start(task_config)
    return task


def run_connectrt(config: dict[str, str], rows: int) -> float:
    task = start_task(config)
    try:
        got = 0
        t0 = time.perf_counter()
        while got < rows:
            got += len(task.poll() or [])
        return time.perf_counter() - t0
    finally:
        task.stop()


def run_raw(engine: sa.Engine, config: dict[str, str], rows: int) -> float:
    task = start_task(config)  # to borrow the querier's statement and first parameters
    querier = task._queriers[0]
    statement = querier.statement
    params: dict[str, Any] = {}
    if "incrementing" in config["mode"]:
        params["last_inc"] = -1
    if "timestamp" in config["mode"]:
        params["last_ts"] = dt.datetime(1970, 1, 1)
        params["upper"] = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    task.stop()
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1")).all()  # warm-up: the connection is open and used
        t0 = time.perf_counter()
        options = {"stream_results": True} if conn.dialect.supports_server_side_cursors else {}
        result = conn.execution_options(**options).execute(statement, params)
        got = 0
        while True:
            batch = result.fetchmany(BATCH)
            if not batch:
                break
            for row in batch:
                row[0]
            got += len(batch)
    elapsed = time.perf_counter() - t0
    if got != rows:
        raise RuntimeError(f"raw read {got} rows, expected {rows}")
    return elapsed


def bench_database(
    name: str, engine: sa.Engine, base: dict[str, str], rows: int, rounds: int
) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    fill(engine, rows)
    print(f"{name}: filled {rows:,} rows in {time.perf_counter() - t0:.1f} s", flush=True)
    results = []
    for mode in MODES:
        config = {
            **base,
            "mode": mode,
            "table.whitelist": "bench_rows",
            "incrementing.column.name": "id",
            "timestamp.column.name": "updated",
            "batch.max.rows": str(BATCH),
            "poll.interval.ms": "60000",
        }
        raws, ours_all = [], []
        for r in range(rounds):  # alternating rounds, median: the machine is shared
            for side in c.rotated(("raw", "connectrt"), r):
                if side == "raw":
                    raws.append(c.window(run_raw(engine, config, rows)))
                else:
                    ours_all.append(c.window(run_connectrt(config, rows)))
        raw, ours = statistics.median(raws), statistics.median(ours_all)
        result = {
            "database": name,
            "mode": mode,
            "connectrt_rows_per_s": rows / ours,
            "raw_rows_per_s": rows / raw,
        }
        print(
            f"{name:8s} {mode:24s} connectrt {rows / ours:>10,.0f} rows/s   "
            f"raw SQLAlchemy {rows / raw:>10,.0f} rows/s   ratio {raw / ours:.2f}",
            flush=True,
        )
        results.append(result)
    return results


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (median)")
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    c.add_broker_option(ap, used=False)
    args = ap.parse_args()
    c.setup_logging()
    print(
        f"bench_jdbc_source: {args.rows:,} rows per mode, {args.rounds} alternating rounds, order "
        f"rotating (medians); {c.machine()}",
        flush=True,
    )
    c.print_broker(None)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        engine = sa.create_engine(f"sqlite:///{path}")
        base = {"connection.url": f"jdbc:sqlite:{path}"}
        results += bench_database("sqlite", engine, base, args.rows, args.rounds)
        engine.dispose()
    if not args.no_postgres:
        from connectrt.testing.postgres import PostgresServer

        with PostgresServer() as server:
            url = server.create_database("bench")
            engine = sa.create_engine(url)
            base = {"connection.url": server.jdbc_url("bench"), "connection.user": server.user}
            results += bench_database("postgres", engine, base, args.rows, args.rounds)
            engine.dispose()
    print("\n== rows/s (medians)")
    for r in results:
        print(
            f"  {r['database']:8s} {r['mode']:24s} connectrt {r['connectrt_rows_per_s']:>10,.0f}"
            f"   raw {r['raw_rows_per_s']:>10,.0f}"
            f"   ratio {r['connectrt_rows_per_s'] / r['raw_rows_per_s']:.2f}"
        )
    first = results[0]  # SQLite, bulk
    return first["connectrt_rows_per_s"], first["raw_rows_per_s"]


if __name__ == "__main__":
    c.result("bench_jdbc_source", *main())
