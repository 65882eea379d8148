"""Spark DataFrame bridge throughput: read path vs a raw consume, write path vs the worker.

Setup (not timed): a broker (``--broker``, embedded by default), a 4-partition topic pre-filled
with N JSON-with-schema records (a 4-field struct, ~190 B each), a local SparkSession
(``local[4]``) with the bridge registered; one warm-up job per kind so Python workers are
running.

Read path, in the same run:

* raw: one confluent-kafka consumer ``assign()``-ed to the 4 partitions, ``consume(5000,
  0.2)`` to partition EOF, touching ``msg.value()`` (no decoding); its clock starts at the
  first batch received (the connection and first fetch are outside it, which favours it:
  the bridge's clock holds its whole Spark job, planning included);
* bridge, bytes: ``spark.read.format("connectrt")`` with ByteArrayConverter, forcing every
  row with ``sum(length(value))`` (Arrow record batches, transport only);
* bridge, typed: JsonConverter with schemas -> a struct column, ``sum(value.n)``.

Write path: M rows through the JDBC sink into a SQLite file,

* bridge: a cached DataFrame written with ``df.write.format("connectrt")`` (4 partitions,
  so 4 sink tasks on 4 Spark slots writing the same SQLite file);
* worker: the same sink in a standalone in-process worker (one task) reading the M records
  from a topic; the clock runs from the first row in the table to the M-th (group join left
  out).

Rounds (``--rounds``, at least 5 by default): in each, the three reads and then the two writes
(each write into a table of its own) in orders rotating each round; medians. Prints rows/s and
ratios; the RESULT line compares the bridge's bytes read (transport, no decoding) with the raw
consume, like with like. Asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import _common as c
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

TOPIC = c.topic("bridge-in")
SINK_TOPIC = c.topic("bridge-sink-in")
PARTITIONS = 4
ROW = {
    "type": "struct",
    "name": "Reading",
    "fields": [
        {"field": "n", "type": "int64", "optional": False},
        {"field": "sensor", "type": "string", "optional": False},
        {"field": "value", "type": "double", "optional": False},
        {"field": "ok", "type": "boolean", "optional": False},
    ],
}


def payload(i: int) -> bytes:
    value = {"n": i, "sensor": f"sensor-{i % 97}", "value": i * 0.5, "ok": i % 3 == 0}
    return json.dumps({"schema": ROW, "payload": value}).encode()


def prefill(bootstrap: str, topic: str, n: int) -> None:
    producer = Producer(c.producer_settings(bootstrap))
    for i in range(n):
        while True:
            try:
                producer.produce(topic, payload(i), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError("prefill not acknowledged")


def raw_read(bootstrap: str, n: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
        }
    )
    consumer.assign([KafkaTopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    t0 = 0.0  # from the first message: the connection and first fetch are before the clock
    count = nbytes = 0
    eof: set[int] = set()
    while len(eof) < PARTITIONS:
        msgs = consumer.consume(5000, 0.2)
        if not t0 and msgs:
            t0 = time.perf_counter()
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    eof.add(msg.partition())
                continue
            count += 1
            nbytes += len(msg.value())
    secs = time.perf_counter() - t0
    consumer.close()
    if count != n:
        raise RuntimeError(f"raw read {count} of {n}")
    return secs


def bridge_read(spark: object, bootstrap: str, n: int, typed: bool) -> float:
    reader = (
        spark.read.format("connectrt")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("key.converter", c.BYTES)
    )
    if typed:
        reader = reader.option("value.converter", c.JSON)
        expr = ["count(*) AS rows", "sum(value.n) AS total"]
    else:
        reader = reader.option("value.converter", c.BYTES)
        expr = ["count(*) AS rows", "sum(length(value)) AS total"]
    t0 = time.perf_counter()
    row = reader.load().selectExpr(*expr).collect()[0]
    secs = time.perf_counter() - t0
    if row["rows"] != n:
        raise RuntimeError(f"bridge read {row['rows']} of {n}")
    return secs


def table_count(db: Path, table: str) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet


def bridge_write(spark: object, db: Path, m: int, table: str) -> float:
    df = (
        spark.range(m)  # type: ignore[attr-defined]
        .selectExpr(
            "id AS n",
            "concat('sensor-', id % 97) AS sensor",
            "id * 0.5 AS value",
            "id % 3 = 0 AS ok",
        )
        .repartition(PARTITIONS)
        .cache()
    )
    df.count()
    t0 = time.perf_counter()
    (
        df.write.format("connectrt")
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", f"jdbc:sqlite:{db}")
        .option("topic", table)
        .option("auto.create", "true")
        .mode("append")
        .save()
    )
    secs = time.perf_counter() - t0
    df.unpersist()
    if table_count(db, table) != m:
        raise RuntimeError(f"bridge wrote {table_count(db, table)} of {m}")
    return secs


def worker_write(bootstrap: str, db: Path, m: int, table: str) -> float:
    props = c.worker_props(bootstrap, **{"value.converter": c.JSON})
    worker = c.make_worker(props)
    try:
        worker.start_connector(
            f"bench-jdbc-sink-{table}",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "tasks.max": "1",
                "topics": SINK_TOPIC,
                "connection.url": f"jdbc:sqlite:{db}",
                "table.name.format": table,
                "auto.create": "true",
            },
        )
        deadline = time.monotonic() + 600
        while table_count(db, table) == 0:
            if time.monotonic() > deadline:
                raise TimeoutError("the worker's JDBC sink wrote nothing")
            time.sleep(0.005)
        t0 = time.perf_counter()
        first = table_count(db, table)
        while (done := table_count(db, table)) < m:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the worker's JDBC sink wrote {done} of {m}")
            time.sleep(0.02)
        secs = time.perf_counter() - t0
        return secs * m / max(1, m - first)  # scale to all m rows
    finally:
        worker.stop()


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="records read")
    ap.add_argument("--rows", type=int, default=400_000, help="rows written")
    ap.add_argument("--rounds", type=int, default=5)
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    print(f"machine: {c.machine()}")
    c.print_broker(args.broker)
    with c.open_broker(args.broker) as broker, tempfile.TemporaryDirectory() as tmp:
        bootstrap = broker.bootstrap_servers
        c.create_topics(bootstrap, {TOPIC: PARTITIONS, SINK_TOPIC: 1})
        prefill(bootstrap, TOPIC, args.records)
        prefill_sink = Producer(c.producer_settings(bootstrap))
        for i in range(args.rows):
            while True:
                try:
                    prefill_sink.produce(SINK_TOPIC, payload(i))
                    break
                except BufferError:
                    prefill_sink.poll(0.05)
        prefill_sink.flush(60)
        del prefill_sink

        from connectrt.spark.datasource import register
        from connectrt.testing.spark import local_spark_session

        spark = local_spark_session("local[4]", app_name="bench-spark-bridge")
        register(spark)
        bridge_read(spark, bootstrap, args.records, typed=False)  # warm-up
        bridge_read(spark, bootstrap, args.records, typed=True)
        reads_t: dict[str, list[float]] = {"raw": [], "bytes": [], "typed": []}
        read_sides = {
            "raw": lambda: raw_read(bootstrap, args.records),
            "bytes": lambda: bridge_read(spark, bootstrap, args.records, typed=False),
            "typed": lambda: bridge_read(spark, bootstrap, args.records, typed=True),
        }
        db = Path(tmp) / "bench.db"
        bridge_write(spark, db, min(1000, args.rows), "warmup")
        writes_t: dict[str, list[float]] = {"bridge": [], "worker": []}
        for r in range(args.rounds):
            for side in c.rotated(list(read_sides), r):
                reads_t[side].append(c.window(read_sides[side]()))
            for side in c.rotated(list(writes_t), r):
                if side == "bridge":
                    writes_t[side].append(
                        c.window(bridge_write(spark, db, args.rows, f"bridge_out_{r}"))
                    )
                else:
                    writes_t[side].append(
                        c.window(worker_write(bootstrap, db, args.rows, f"worker_{r}"))
                    )
            print(
                f"  round {r}: read raw {c.rate(args.records, reads_t['raw'][-1]):,.0f}, bytes "
                f"{c.rate(args.records, reads_t['bytes'][-1]):,.0f}, typed "
                f"{c.rate(args.records, reads_t['typed'][-1]):,.0f} rows/s; write bridge "
                f"{c.rate(args.rows, writes_t['bridge'][-1]):,.0f}, worker "
                f"{c.rate(args.rows, writes_t['worker'][-1]):,.0f} rows/s",
                flush=True,
            )
        spark.stop()
        n = args.records
        med = statistics.median
        reads = c.report(
            f"read path, {n:,} records, 4 partitions, median of {args.rounds}",
            [
                ("raw consume (1 consumer)", n, med(reads_t["raw"])),
                ("bridge, bytes (Arrow)", n, med(reads_t["bytes"])),
                ("bridge, typed struct (Arrow)", n, med(reads_t["typed"])),
            ],
        )
        writes = c.report(
            f"write path, {args.rows:,} rows into SQLite through the JDBC sink, median",
            [
                ("bridge (4 Spark tasks)", args.rows, med(writes_t["bridge"])),
                ("standalone worker (1 task)", args.rows, med(writes_t["worker"])),
            ],
        )
    raw_rate = reads["raw consume (1 consumer)"]
    result = {
        "raw_read_rps": raw_rate,
        "bridge_bytes_rps": reads["bridge, bytes (Arrow)"],
        "bridge_typed_rps": reads["bridge, typed struct (Arrow)"],
        "bytes_vs_raw": reads["bridge, bytes (Arrow)"] / raw_rate,
        "typed_vs_raw": reads["bridge, typed struct (Arrow)"] / raw_rate,
        "bridge_write_rps": writes["bridge (4 Spark tasks)"],
        "worker_write_rps": writes["standalone worker (1 task)"],
    }
    result["write_ratio"] = result["bridge_write_rps"] / result["worker_write_rps"]
    print(
        f"\nratios: bytes/raw={result['bytes_vs_raw']:.2f} typed/raw={result['typed_vs_raw']:.2f}"
        f" bridge-write/worker-write={result['write_ratio']:.2f}"
    )
    return result


if __name__ == "__main__":
    figures = main()
    c.result("bench_spark_bridge", figures["bridge_bytes_rps"], figures["raw_read_rps"])
