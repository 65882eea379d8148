"""End to end: DB table -> JDBC source (connectrt worker) -> Kafka -> Spark streaming
aggregation -> JDBC sink through the Spark bridge.

Run it from the repository (it needs the ``jdbc`` and ``spark`` extras)::

    python examples/spark_jdbc_pipeline.py --duration 30 --master "local[4]"

What happens:

1. an embedded broker starts (or ``--bootstrap`` names a running Kafka);
2. ``shop.db`` (SQLite) gets an ``orders`` table; a thread inserts orders while it runs;
3. a standalone connectrt worker in this process runs the JDBC source connector
   (``mode=incrementing`` on ``id``) into topic ``shop-orders`` (JSON with schemas);
4. Spark reads ``shop-orders`` with ``readStream.format("connectrt")`` (the Connect schema
   becomes a struct column), totals orders per customer and writes the running totals with
   ``writeStream.format("connectrt")`` through the JDBC sink (upsert on ``customer``) into
   ``totals.db``. Output mode ``complete``: Python data source writers take append and
   complete, not update; with upserts keyed by customer, complete rewrites each total;
5. at the end, the totals table is compared with the same aggregation run on ``shop.db``.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from connectrt.broker import EmbeddedBroker  # noqa: E402
from connectrt.process.assembly import WorkerProcess  # noqa: E402
from connectrt.spark.datasource import register  # noqa: E402
from connectrt.testing.spark import local_spark_session  # noqa: E402

CUSTOMERS = ["ada", "bob", "cleo", "dan", "eve"]
TOPIC = "shop-orders"


def create_orders(db: Path, n: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS orders ("
            "id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount_cents INTEGER NOT NULL)"
        )
        insert_orders(conn, n)


def insert_orders(conn: sqlite3.Connection, n: int) -> None:
    conn.executemany(
        "INSERT INTO orders (customer, amount_cents) VALUES (?, ?)",
        [(random.choice(CUSTOMERS), random.randint(100, 10_000)) for _ in range(n)],
    )
    conn.commit()


def keep_inserting(db: Path, stop: threading.Event) -> None:
    with sqlite3.connect(db) as conn:
        while not stop.wait(0.5):
            insert_orders(conn, 20)


def start_worker(bootstrap: str, db: Path, work: Path) -> tuple[WorkerProcess, Any, Any]:
    props = {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(work / "offsets.json"),
        "offset.flush.interval.ms": "1000",
        "listeners": "http://127.0.0.1:0",
    }
    source = {
        "name": "shop-orders-source",
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "tasks.max": "1",
        "connection.url": f"jdbc:sqlite:{db}",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "table.whitelist": "orders",
        "topic.prefix": "shop-",
        "poll.interval.ms": "200",
    }
    process = WorkerProcess.build(props, "standalone")
    stop = threading.Event()
    initial = [(source["name"], source, None)]
    thread = threading.Thread(target=process.run, args=(initial, stop), daemon=True)
    thread.start()
    while not process.herder.ready and thread.is_alive():
        time.sleep(0.05)
    return process, stop, thread


def wait_for_topic(process: WorkerProcess, timeout: float = 60) -> None:
    """Until the JDBC source has produced (Spark plans the schema from a first record)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            runners = process.herder.worker.runners("shop-orders-source")
        except Exception:  # not started yet
            runners = {}
        if sum(r.metrics.records_produced for r in runners.values()) > 0:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the JDBC source produced nothing to {TOPIC} in {timeout:.0f} s")


def start_query(spark: Any, bootstrap: str, totals_db: Path, checkpoint: Path) -> Any:
    orders = (
        spark.readStream.format("connectrt")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("key.converter", "org.apache.kafka.connect.storage.StringConverter")
        .option("value.converter", "org.apache.kafka.connect.json.JsonConverter")
        .option("value.converter.schemas.enable", "true")
        .load()
    )
    orders.createOrReplaceTempView("orders")
    totals = spark.sql(
        "SELECT value.customer AS customer, sum(value.amount_cents) AS cents, "
        "count(*) AS orders FROM orders GROUP BY value.customer"
    )
    return (
        totals.writeStream.outputMode("complete")
        .format("connectrt")
        .option("checkpointLocation", str(checkpoint))
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", f"jdbc:sqlite:{totals_db}")
        .option("topic", "customer_totals")
        .option("auto.create", "true")
        .option("insert.mode", "upsert")
        .option("pk.mode", "record_value")
        .option("pk.fields", "customer")
        .trigger(processingTime="2 seconds")
        .start()
    )


def compare(shop_db: Path, totals_db: Path) -> bool:
    with sqlite3.connect(shop_db) as conn:
        expected = {
            c: (n, s)
            for c, n, s in conn.execute(
                "SELECT customer, count(*), sum(amount_cents) FROM orders GROUP BY customer"
            )
        }
    with sqlite3.connect(totals_db) as conn:
        got = {
            c: (n, s)
            for c, n, s in conn.execute('SELECT customer, orders, cents FROM "customer_totals"')
        }
    print(f"{'customer':<10}{'orders':>8}{'total':>12}   source table (orders, cents)")
    for customer in sorted(expected):
        n, s = got.get(customer, (0, 0))
        print(f"{customer:<10}{n:>8}{s / 100:>12.2f}   {expected[customer]}")
    return got == expected


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", help="a running Kafka (default: an embedded broker)")
    ap.add_argument("--master", default="local[4]")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of new orders")
    ap.add_argument("--orders", type=int, default=500, help="orders in the table at start")
    ap.add_argument("--dir", help="working directory (default: a temporary one)")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="connectrt-spark-example-"))
    work.mkdir(parents=True, exist_ok=True)
    shop_db, totals_db = work / "shop.db", work / "totals.db"
    create_orders(shop_db, args.orders)

    broker = None if args.bootstrap else EmbeddedBroker().start()
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    process, worker_stop, worker = start_worker(bootstrap, shop_db, work)
    inserting = threading.Event()
    inserter = threading.Thread(target=keep_inserting, args=(shop_db, inserting), daemon=True)
    try:
        wait_for_topic(process)
        spark = local_spark_session(args.master, app_name="connectrt-example")
        register(spark)
        query = start_query(spark, bootstrap, totals_db, work / "checkpoint")
        inserter.start()
        print(f"streaming for {args.duration:.0f} s (work dir {work}) ...", flush=True)
        time.sleep(args.duration)
        inserting.set()
        inserter.join()
        time.sleep(3)  # the JDBC source's next poll picks up the last inserts
        query.processAllAvailable()
        query.stop()
        ok = compare(shop_db, totals_db)
        print("totals match the source table" if ok else "totals DIFFER from the source table")
        spark.stop()
        return 0 if ok else 1
    finally:
        inserting.set()
        worker_stop.set()
        worker.join(30)
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
