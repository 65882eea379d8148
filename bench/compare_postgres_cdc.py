"""PostgreSQL CDC: connectrt's source beside Debezium 3.6.1, every event compared, both timed.

Starts PostgreSQL 15 (``wal_level=logical``), one Apache Kafka 4.4 broker, a connectrt worker
(in this process) and a Kafka Connect 4.3.1 worker running Debezium
(:mod:`connectrt.testing.debezium`; Java 17 and Maven the first time). The workload is the
side-by-side test's (:mod:`connectrt.testing.debezium_workload`) at the issue's size: the
``items`` table (numeric, timestamp with and without time zone, date, uuid, jsonb, text[],
bytea, an enum, ...) with ``--rows`` rows, then about ``--changes`` inserts, updates and deletes
in multi-row transactions of 1,000, with a column added half-way.

Each round copies a template database and runs the two sides **one after the other** on it, in
an order that rotates every round: each side's connector snapshots the table into its own topic
(the clock runs from the connector's creation, start-up included, until the topic holds every
row) and is deleted; the changes are then made once (both slots keep their WAL); each side's
connector is created again under the same name (it resumes from its stored offset) and streams
every change (clock from the creation to the last record). So every figure is one side alone
on the machine, and both topics hold the same WAL's events. A first round on a small table is
the warm-up (both JVMs and this process past start-up and JIT), not timed. The first timed
round's two topics are then compared event by event, key and value, schema and payload, after
JsonConverter (:func:`~connectrt.testing.debezium_workload.compare_topics`: the fields that
cannot agree between two connectors left out, as in the side-by-side test), and every
differing path is printed.

Usage: ``python bench/compare_postgres_cdc.py [--rows 100000] [--changes 100000] [--rounds 2]``.
Prints each round's times and rates, the medians per phase, and ends with ``RESULT
compare_postgres_cdc connectrt=.. baseline=.. ratio=..`` (records of both phases over the
median round's snapshot plus streaming time; baseline = Debezium). Not run by ``make bench``
(``run_all.py`` runs the ``bench_*.py`` scripts): it needs Java, Maven and PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg2
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench._common import format_result, machine, rotated
from connectrt.testing.debezium import DEBEZIUM_VERSION, debezium_connect
from connectrt.testing.debezium_workload import (
    Comparison,
    apply_changes,
    compare_topics,
    create_items,
    side_by_side_config,
    topic_events,
)
from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from connectrt.testing.rest import start_rest_worker

PHASE_TIMEOUT = 1800.0


@dataclass
class Side:
    """One connector runtime: how to create and delete a connector on it."""

    name: str
    short: str
    url: str
    times: dict[str, list[float]] = field(default_factory=lambda: {"snapshot": [], "stream": []})

    def put(self, connector: str, config: dict[str, str]) -> None:
        response = httpx.put(f"{self.url}/connectors/{connector}/config", json=config, timeout=60)
        if response.status_code not in (200, 201):
            raise RuntimeError(f"{self.name}: PUT {connector}: {response.text}")

    def delete(self, connector: str) -> None:
        response = httpx.delete(f"{self.url}/connectors/{connector}", timeout=60)
        if response.status_code not in (204, 404):
            raise RuntimeError(f"{self.name}: DELETE {connector}: {response.text}")
        _wait(
            lambda: connector not in httpx.get(f"{self.url}/connectors", timeout=30).json(),
            60,
            f"{self.name} to delete {connector}",
        )

    def status(self, connector: str) -> str:
        return httpx.get(f"{self.url}/connectors/{connector}/status", timeout=30).text


def connect_db(pg: PostgresServer, db: str) -> Any:
    """An autocommit connection to database ``db``."""
    conn = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user, dbname=db)
    conn.autocommit = True
    return conn


def _wait(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


class Watermarks:
    """High watermarks of one-partition topics, for the clocks (one thread). When the broker
    does not answer in time (on a loaded machine it sometimes does not for seconds, and a
    consumer once never answered again after its partition's leader moved) the answer is -1
    and the next question goes through a new consumer."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap
        self._consumer: Consumer | None = None

    def high(self, topic: str) -> int:
        if self._consumer is None:
            self._consumer = Consumer(
                {"bootstrap.servers": self._bootstrap, "group.id": "bench-cdc-watermarks"}
            )
        try:
            return int(
                self._consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
            )
        except KafkaException as e:
            print(f"!! watermark of {topic}: {e}; asking again", flush=True)
            self._consumer = None
            return -1


def _high(watch: Watermarks, topic: str) -> int:
    return watch.high(topic)


def _slot_inactive(pg: PostgresServer, slot: str) -> bool:
    conn = connect_db(pg, "postgres")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
        return row is not None and not row[0]
    finally:
        conn.close()


def _phase(
    side: Side, pg: PostgresServer, db: str, watch: Watermarks, target: int, connector: str
) -> tuple[float, float]:
    """Create ``connector`` on ``side`` for database ``db``, wait until its topic holds
    ``target`` records, delete it and wait until its slot is released. Returns (seconds to the
    first new record, seconds to the last), both from the creation."""
    prefix = f"{side.short}_{db}"
    topic = f"{prefix}.public.items"
    seen = [-1]

    def answered() -> bool:
        seen[0] = _high(watch, topic)
        return seen[0] >= 0

    _wait(answered, 300, f"the broker to answer for {topic}")
    before = seen[0]
    started = time.monotonic()
    side.put(connector, side_by_side_config(pg, db, prefix))
    first: list[float] = []

    def done() -> bool:
        high = _high(watch, topic)
        if high > before and not first:
            first.append(time.monotonic() - started)
        return high >= target

    _wait(done, PHASE_TIMEOUT, f"{topic} to hold {target} records ({side.status(connector)})", 0.05)
    seconds = time.monotonic() - started
    side.delete(connector)
    if (high := _high(watch, topic)) != target:
        print(f"!! {topic} holds {high} records, {target} expected", flush=True)
    _wait(lambda: _slot_inactive(pg, f"{prefix}_slot"), 120, f"{side.name} to release its slot")
    return (first[0] if first else seconds), seconds


def _round(
    index: int,
    sides: list[Side],
    pg: PostgresServer,
    bootstrap: str,
    watch: Watermarks,
    template: str,
    rows: int,
    changes: int,
) -> tuple[str, int]:
    """One round on a copy of ``template``; returns the database's name and the records each
    topic got from the changes."""
    db = f"round{index}"
    conn = connect_db(pg, "postgres")
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{db}" TEMPLATE "{template}"')
    conn.close()
    timed = index > 0
    label = f"round {index}" if timed else "warm-up"
    order = rotated(sides, index)
    for side in order:
        create_topic(bootstrap, f"{side.short}_{db}.public.items")
    for side in order:
        first, seconds = _phase(side, pg, db, watch, rows, f"cdc-{db}")
        print(
            f"{label} {side.name:9} snapshot  {rows:>7} records {seconds:6.1f} s "
            f"({rows / seconds:8,.0f} rec/s; first record after {first:.1f} s)",
            flush=True,
        )
        if timed:
            side.times["snapshot"].append(seconds)
    conn = connect_db(pg, db)
    made = time.monotonic()
    records = apply_changes(conn, changes, rows=rows)
    conn.close()
    print(f"{label} changes made: {records} records in {time.monotonic() - made:.1f} s", flush=True)
    for side in order:
        first, seconds = _phase(side, pg, db, watch, rows + records, f"cdc-{db}")
        print(
            f"{label} {side.name:9} streaming {records:>7} records {seconds:6.1f} s "
            f"({records / seconds:8,.0f} rec/s; first record after {first:.1f} s)",
            flush=True,
        )
        if timed:
            side.times["stream"].append(seconds)
    return db, records


def _drop_topics(bootstrap: str, topics: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(topics).values():
        future.result(60)


def _compare(bootstrap: str, db: str, expected: int) -> Comparison:
    """Compare the two topics of round ``db`` event by event and print every difference."""
    started = time.monotonic()
    comparison = compare_topics(
        topic_events(bootstrap, f"dbz_{db}.public.items"),
        topic_events(bootstrap, f"crt_{db}.public.items"),
        debezium_prefix=f"dbz_{db}",
        connectrt_prefix=f"crt_{db}",
    )
    print(
        f"compared {db} in {time.monotonic() - started:.0f} s: Debezium "
        f"{comparison.debezium_events} events, connectrt {comparison.connectrt_events} "
        f"(expected {expected} each): {len(comparison.differences)} differing paths",
        flush=True,
    )
    for line in comparison.lines():
        print(f"  {line}", flush=True)
    return comparison


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="rows of the snapshot")
    ap.add_argument("--changes", type=int, default=100_000, help="row changes streamed")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds (each side once each)")
    ap.add_argument(
        "--warmup-rows", type=int, default=5_000, help="rows and changes of the warm-up"
    )
    args = ap.parse_args()
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    print(f"Debezium {DEBEZIUM_VERSION} on Kafka Connect 4.3.1 vs connectrt, Apache Kafka 4.4")
    with PostgresServer(settings=LOGICAL_REPLICATION) as pg, KafkaBroker() as kafka:
        bootstrap = kafka.bootstrap_servers
        for template, size in (("warm", args.warmup_rows), ("tpl", args.rows)):
            pg.create_database(template)
            conn = connect_db(pg, template)
            create_items(conn, size)
            conn.close()
        watch = Watermarks(bootstrap)
        worker = start_rest_worker(bootstrap)
        try:
            with debezium_connect(bootstrap) as connect:
                sides = [
                    Side("connectrt", "crt", worker.url),
                    Side("debezium", "dbz", connect.url),
                ]
                _round(0, sides, pg, bootstrap, watch, "warm", args.warmup_rows, args.warmup_rows)
                compared: Comparison | None = None
                for index in range(1, args.rounds + 1):
                    db, records = _round(
                        index, sides, pg, bootstrap, watch, "tpl", args.rows, args.changes
                    )
                    print(f"load average after round {index}: {os.getloadavg()}", flush=True)
                    if compared is None:  # every event of the first timed round
                        compared = _compare(bootstrap, db, args.rows + records)
                    _drop_topics(bootstrap, [f"{s.short}_{db}.public.items" for s in sides])
        finally:
            worker.delete_connectors()
            worker.stop()
    records = args.rows + records
    totals: dict[str, float] = {}
    for phase, n in (("snapshot", args.rows), ("stream", records - args.rows)):
        rates = {s.name: n / statistics.median(s.times[phase]) for s in sides}
        print(
            f"{phase}: median of {args.rounds} rounds: connectrt {rates['connectrt']:,.0f} rec/s, "
            f"Debezium {rates['debezium']:,.0f} rec/s, ratio "
            f"{rates['connectrt'] / rates['debezium']:.2f}"
        )
    for s in sides:
        totals[s.name] = records / statistics.median(
            a + b for a, b in zip(s.times["snapshot"], s.times["stream"], strict=True)
        )
    print(f"load average at end: {os.getloadavg()}")
    print(format_result("compare_postgres_cdc", totals["connectrt"], totals["debezium"]))


if __name__ == "__main__":
    main()
