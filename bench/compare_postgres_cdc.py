"""PostgreSQL CDC: connectrt's source beside Debezium 3.6.1, snapshot and streaming rates.

Starts PostgreSQL (``wal_level=logical``), Apache Kafka 4.4, a connectrt worker and a Kafka
Connect worker running Debezium (:mod:`connectrt.testing.debezium`; needs Java 17 and Maven the
first time). A table of ``--rows`` rows (int key, text, numeric(10,2), timestamptz, jsonb) is
snapshotted by both connectors at once (each with its own slot and prefix), then ``--rows``
rows are updated in one statement and both stream the changes. The clocks run from the
connector's creation (snapshot, start-up included) and from the UPDATE's commit (streaming) to
the moment the topic's high watermark holds every record. Both run at the same time on the
same cores, so each figure is under the other's load. Finally ``--compare`` events of each
phase are compared field by field after JsonConverter (the fields that cannot agree left out,
as in tests/integration/test_postgres_cdc_vs_debezium.py).

Usage: ``python bench/compare_postgres_cdc.py [--rows 100000] [--compare 2000]``; prints each
phase's rates and their ratio. A one-run, side-by-side comparison (both connectors at once, no
warm-up, no rotated rounds), so it is not one of the ``bench_*.py`` benches and prints no
``RESULT`` line; it needs Java, Maven and PostgreSQL, which ``make bench`` does not.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import psycopg2
from confluent_kafka import Consumer, TopicPartition

from bench._common import machine
from connectrt.testing.debezium import debezium_connect, event_differences, normalize_event
from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from connectrt.testing.rest import start_rest_worker

JSON = "org.apache.kafka.connect.json.JsonConverter"


def _config(pg: PostgresServer, prefix: str) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": pg.user,
        "database.dbname": "bench",
        "topic.prefix": prefix,
        "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.items",
        "tombstones.on.delete": "false",
        "key.converter": JSON,
        "value.converter": JSON,
    }


def _high(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-cdc-watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def _read(bootstrap: str, topic: str, start: int, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-cdc-read", "enable.auto.commit": False}
    )
    out: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        while len(out) < count:
            msg = consumer.poll(10)
            if msg is None:
                break
            if msg.error():
                continue
            value = msg.value()
            out.append(json.loads(value) if value is not None else None)
    finally:
        consumer.close()
    return out


def _until(bootstrap: str, topics: dict[str, str], target: int, started: float) -> dict[str, float]:
    """Seconds from ``started`` until each topic holds ``target`` records."""
    done: dict[str, float] = {}
    deadline = time.monotonic() + 1800
    while len(done) < len(topics):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not every topic reached {target} records: {done}")
        for name, topic in topics.items():
            if name not in done and _high(bootstrap, topic) >= target:
                done[name] = time.monotonic() - started
        time.sleep(0.2)
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--compare", type=int, default=2000, help="events compared per phase")
    args = ap.parse_args()
    rows = args.rows
    print(machine())
    with PostgresServer(settings=LOGICAL_REPLICATION) as pg, KafkaBroker() as kafka:
        bootstrap = kafka.bootstrap_servers
        pg.create_database("bench")
        db = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user, dbname="bench")
        db.autocommit = True
        with db.cursor() as cur:
            cur.execute(
                "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, "
                "price numeric(10,2), at timestamptz, doc jsonb)"
            )
            cur.execute(
                "INSERT INTO items SELECT g, 'item ' || g, g / 100.0, "
                "'2024-01-01'::timestamptz + g * interval '1 second', "
                "jsonb_build_object('n', g) FROM generate_series(1, %s) g",
                (rows,),
            )
        topics = {"connectrt": "crt.public.items", "debezium": "dbz.public.items"}
        for topic in topics.values():
            create_topic(bootstrap, topic)
        worker = start_rest_worker(bootstrap)
        try:
            with debezium_connect(bootstrap) as connect:
                started = time.monotonic()
                connect.put_connector("debezium", _config(pg, "dbz"))
                worker.http.put("/connectors/connectrt/config", json=_config(pg, "crt"))
                snapshot = _until(bootstrap, topics, rows, started)
                with db.cursor() as cur:
                    cur.execute("UPDATE items SET price = price + 1, name = name || '!'")
                started = time.monotonic()
                stream = _until(bootstrap, topics, 2 * rows, started)
        finally:
            worker.delete_connectors()
            worker.stop()
        differences: dict[str, Any] = {}
        for phase, start in (("snapshot", 0), ("stream", rows)):
            dbz = _read(bootstrap, topics["debezium"], start, args.compare)
            crt = _read(bootstrap, topics["connectrt"], start, args.compare)
            for i, (a, b) in enumerate(zip(dbz, crt, strict=False)):
                left, right = normalize_event(a, "dbz"), normalize_event(b, "crt")
                for path, x, y in event_differences(left, right, f"{phase}[{i}]"):
                    differences.setdefault(path.split("]", 1)[1], (x, y))
    for phase, seconds in (("snapshot", snapshot), ("stream", stream)):
        crt_rate, dbz_rate = rows / seconds["connectrt"], rows / seconds["debezium"]
        print(
            f"{phase}: connectrt {seconds['connectrt']:.1f} s ({crt_rate:,.0f} rec/s), "
            f"Debezium {seconds['debezium']:.1f} s ({dbz_rate:,.0f} rec/s)"
        )
        print(f"{phase}: ratio connectrt/Debezium {crt_rate / dbz_rate:.2f}")
    print(f"compared {args.compare} events per phase: {len(differences)} differing fields")
    for path, (x, y) in differences.items():
        print(f"  {path}: debezium={x!r} connectrt={y!r}")


if __name__ == "__main__":
    main()
