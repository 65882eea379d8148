"""The PostgreSQL CDC source on a real PostgreSQL (wal_level=logical) and the test broker.

One server for the module. An in-process worker: the snapshot, then inserts, updates, deletes
and a multi-row transaction arrive as Debezium's envelopes (JSON with schemas), with
tombstones, REPLICA IDENTITY FULL ``before`` images and the slot confirmed only up to committed
offsets; a missing publication with autocreate disabled fails the task naming the fix. A
``connectrt worker`` process killed with SIGKILL while streaming: nothing is lost after the
restart, and the duplicates are bounded by what was not committed.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic
from connectrt.testing.metrics import scrape
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from connectrt.testing.rest import start_rest_worker, wait_for
from tests.postgres_cdc_support import cdc_config, connect_db

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer(settings=LOGICAL_REPLICATION) as server:
        yield server


def _events(bootstrap: str, topic: str) -> list[tuple[Any, Any]]:
    """(key payload, value payload or None for a tombstone) in topic order."""
    out = []
    for records in read_topic(bootstrap, topic).values():
        for key, value in records:
            k = json.loads(key) if key is not None else None
            v = json.loads(value) if value is not None else None
            out.append((k, v))
    return out


def _ops(events: list[tuple[Any, Any]]) -> list[str]:
    return ["tombstone" if v is None else v["payload"]["op"] for _, v in events]


def test_snapshot_then_changes_arrive_as_debezium_envelopes(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    pg.create_database("shop")
    db = connect_db(pg, "shop")
    with db.cursor() as cur:
        cur.execute(
            "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), "
            "made date, seen timestamp, at timestamptz, u uuid, doc jsonb, raw bytea)"
        )
        cur.execute("CREATE TABLE skipped (id int PRIMARY KEY)")
        cur.execute(
            "INSERT INTO items VALUES (1, 'one', 1.50, '2024-01-02', "
            "'2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+02', "
            "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": 1}', '\\x0102'), "
            "(2, 'two', NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
        )
    prefix = unique_name("cdc")
    topic = f"{prefix}.public.items"
    create_topic(broker.bootstrap_servers, topic)
    config = cdc_config(pg, "shop", prefix, **{"table.include.list": "public.items"})
    with WorkerHarness(broker.bootstrap_servers) as harness:
        harness.start_connector("cdc", config)
        harness.wait_for_tasks("cdc", State.RUNNING, 1, timeout=60)
        harness.wait_until(
            lambda: len(_events(broker.bootstrap_servers, topic)) >= 2, 60, "the snapshot"
        )
        with db.cursor() as cur:
            cur.execute("INSERT INTO items (id, name) VALUES (3, 'three')")
            cur.execute("UPDATE items SET name = 'uno' WHERE id = 1")
            cur.execute("DELETE FROM items WHERE id = 2")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO items (id, name) VALUES (4, 'four'), (5, 'five')")
            cur.execute("UPDATE items SET price = 7 WHERE id = 3")
            cur.execute("COMMIT")
            cur.execute("ALTER TABLE items REPLICA IDENTITY FULL")
            cur.execute("UPDATE items SET name = 'cinq' WHERE id = 5")
            cur.execute("INSERT INTO skipped VALUES (1)")
        harness.wait_until(
            lambda: len(_events(broker.bootstrap_servers, topic)) >= 10, 60, "the changes"
        )
        # The slot is confirmed only up to what the committed offsets cover, and eventually
        # up to the last transaction (its commit LSN: sent again and skipped after a restart).
        with db.cursor() as cur:
            cur.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
            (now,) = cur.fetchone()

        def confirmed() -> int:
            with db.cursor() as cur:
                cur.execute(
                    "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
                    "WHERE slot_name = 'slot_shop'"
                )
                return int(cur.fetchone()[0])

        events = _events(broker.bootstrap_servers, topic)
        last_commit = events[-1][1]["payload"]["source"]["lsn"]
        harness.wait_until(lambda: confirmed() >= last_commit, 60, "the slot's confirmation")
        assert confirmed() <= int(now)
    assert _ops(events) == ["r", "r", "c", "u", "d", "tombstone", "c", "c", "u", "u"]
    first_key, first = events[0]
    assert first_key["payload"] == {"id": 1}
    assert first_key["schema"]["name"] == f"{topic}.Key"
    schema = first["schema"]
    assert schema["name"] == f"{topic}.Envelope"
    assert [f["field"] for f in schema["fields"]][:5] == [
        "before", "after", "source", "transaction", "op"
    ]  # fmt: skip
    row = {f["field"]: f for f in schema["fields"][1]["fields"]}
    assert row["made"]["name"] == "io.debezium.time.Date"
    assert row["seen"]["name"] == "io.debezium.time.MicroTimestamp"
    assert row["at"]["name"] == "io.debezium.time.ZonedTimestamp"
    assert row["u"]["name"] == "io.debezium.data.Uuid"
    assert row["doc"]["name"] == "io.debezium.data.Json"
    assert row["price"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert row["price"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert row["raw"]["type"] == "bytes" and row["name"]["optional"] is False
    payload = first["payload"]
    assert payload["before"] is None
    assert payload["after"] == {
        "id": 1,
        "name": "one",
        "price": "AJY=",  # 150 unscaled, base64 as Kafka's JsonConverter writes it
        "made": 19724,
        "seen": 1704164645123456,
        "at": "2024-01-02T01:04:05.000000Z",
        "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "doc": '{"k": 1}',
        "raw": "AQI=",
    }
    source = payload["source"]
    assert source["snapshot"] == "first" and events[1][1]["payload"]["source"]["snapshot"] == "last"
    assert {k: source[k] for k in ("connector", "name", "db", "schema", "table")} == {
        "connector": "postgresql",
        "name": prefix,
        "db": "shop",
        "schema": "public",
        "table": "items",
    }
    assert isinstance(source["lsn"], int) and isinstance(source["txId"], int)
    values = [v["payload"] if v else None for _, v in events]
    assert values[3]["before"] is None and values[3]["after"]["name"] == "uno"  # DEFAULT
    assert values[4]["before"]["id"] == 2 and values[4]["after"] is None
    assert values[4]["before"]["name"] == ""  # not sent under DEFAULT: Debezium's zero value
    assert events[5][0]["payload"] == {"id": 2}
    tx = {values[i]["source"]["txId"] for i in (6, 7, 8)}
    assert len(tx) == 1 and values[6]["source"]["snapshot"] == "false"
    assert values[9]["before"]["name"] == "five" and values[9]["after"]["name"] == "cinq"  # FULL


def test_missing_publication_with_autocreate_disabled_fails_naming_the_fix(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    pg.create_database("nopub")
    prefix = unique_name("nopub")
    config = cdc_config(pg, "nopub", prefix, **{"publication.autocreate.mode": "disabled"})
    with WorkerHarness(broker.bootstrap_servers) as harness:
        harness.start_connector("cdc", config)
        (task,) = harness.wait_for_tasks("cdc", State.FAILED, 1, timeout=60)
    assert "publication 'pub_nopub' does not exist" in (task.trace or "")
    assert "CREATE PUBLICATION" in (task.trace or "")


def _slot_lag(db: Any, slot: str) -> int:
    """WAL bytes the slot keeps, counted to the insert position: the test server runs with
    ``synchronous_commit=off``, so the write position (``pg_current_wal_lsn``) may trail a
    committed transaction's WAL by megabytes for a moment."""
    with db.cursor() as cur:
        cur.execute(
            "SELECT pg_current_wal_insert_lsn() - confirmed_flush_lsn FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
        )
        return int(cur.fetchone()[0])


def test_heartbeats_keep_an_idle_slot_from_pinning_wal_and_its_lag_is_in_metrics(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    """The captured table is idle while another table of the database is written: the slot
    keeps that WAL (slot-lag-bytes in /metrics shows it) until a heartbeat confirms the slot
    past it (and the metric follows).

    The WAL kept is written just after a change of the captured table: the task confirms the
    slot at that change's transaction, and only a heartbeat written after it moves the slot
    further. (Once a heartbeat is confirmed and nothing was streamed since, psycopg2 also
    confirms the server's keepalive positions with its status updates, every 10 s: an idle slot
    is released without waiting for the next heartbeat, so WAL written right after a heartbeat
    may never be seen kept.) A heartbeat that lands between the change and the metric showing
    the WAL kept is not a failure: the round is played again, up to three times."""
    pg.create_database("idle")
    db = connect_db(pg, "idle")
    with db.cursor() as cur:
        cur.execute("CREATE TABLE watched (id int PRIMARY KEY)")
        cur.execute("CREATE TABLE busy (id serial PRIMARY KEY, pad text)")
    prefix = unique_name("hb")
    heartbeats = f"__debezium-heartbeat.{prefix}"
    watched_topic = f"{prefix}.public.watched"
    create_topic(broker.bootstrap_servers, heartbeats)
    create_topic(broker.bootstrap_servers, watched_topic)
    config = cdc_config(
        pg,
        "idle",
        prefix,
        **{"table.include.list": "public.watched", "heartbeat.interval.ms": "12000"},
    )
    worker = start_rest_worker(broker.bootstrap_servers)
    try:
        assert worker.http.put("/connectors/cdc/config", json=config).status_code == 201

        def lag_metric() -> float:
            samples = scrape(worker.http)
            value = samples.value(
                "connectrt_plugin_slot_lag_bytes", connector="cdc", task=0, slot="slot_idle"
            )
            return math.inf if value is None else value

        def beats() -> int:
            return len(_events(broker.bootstrap_servers, heartbeats))

        wait_for(lambda: _streaming(db, "slot_idle"), 60, "the task to stream from its slot")
        # A heartbeat is written as streaming starts, the next 12 s later. Each round starts
        # just after a heartbeat was seen, so the next one is seconds away.
        rounds: list[str] = []
        shown: list[float] = []

        def lag_shown_or_released() -> bool:
            shown.append(lag_metric())
            return (math.isfinite(shown[-1]) and shown[-1] > 2_000_000) or (
                _slot_lag(db, "slot_idle") < 2_000_000
            )

        seen = 0
        for change in (1, 2, 3):
            if rounds:  # not a stale reading of the round before
                wait_for(lambda: lag_metric() < 2_000_000, 60, "slot-lag-bytes to follow")
            wait_for(lambda: beats() > seen, 60, "a heartbeat")  # noqa: B023
            seen = beats()
            shown.clear()
            with db.cursor() as cur:
                cur.execute("INSERT INTO watched VALUES (%s)", (change,))
                # About 3 MB of WAL that holds no change of `watched`, after that change.
                cur.execute(
                    "INSERT INTO busy (pad) SELECT repeat('x', 1000) FROM generate_series(1, 4000)"
                )
            written = _slot_lag(db, "slot_idle")
            if written > 2_000_000:
                wait_for(lag_shown_or_released, 60, "slot-lag-bytes to show the WAL kept")
                if shown[-1] > 2_000_000:
                    break
            # The slot let the WAL go before /metrics showed it: only a heartbeat written after
            # the change may have done that.
            now = beats()
            rounds.append(f"slot lag {written} B, slot-lag-bytes read {shown[-3:]}, {now} beats")
            assert now > seen, (
                f"the slot was confirmed past WAL kept after a change without a heartbeat: "
                f"slot lag {written} B just after the change and the WAL, now "
                f"{_slot_lag(db, 'slot_idle')} B, slot-lag-bytes read {shown[:3]} ... "
                f"{shown[-3:]}, {now} heartbeats, {seen} before the change"
            )
        else:
            raise AssertionError(f"a heartbeat landed in every round: {rounds}")
        wait_for(
            lambda: _slot_lag(db, "slot_idle") < 1_000_000,
            60,
            "a heartbeat to confirm the slot past the busy table's WAL",
        )
        assert beats() > seen, "the slot was confirmed past the busy table's WAL by no heartbeat"
        wait_for(
            lambda: lag_metric() < 1_000_000,
            60,
            "slot-lag-bytes in /metrics to follow the slot",
        )
        with db.cursor() as cur:
            cur.execute("INSERT INTO watched VALUES (100)")
        wait_for(
            lambda: any(
                k["payload"] == {"id": 100}
                for k, _ in _events(broker.bootstrap_servers, watched_topic)
            ),
            60,
            "the change of the watched table after the heartbeats",
        )
    finally:
        worker.delete_connectors()
        worker.stop()
    beats_written = _events(broker.bootstrap_servers, heartbeats)
    assert len(beats_written) >= 2, beats_written
    key, value = beats_written[-1]
    assert key["schema"]["name"] == "io.debezium.connector.common.ServerNameKey"
    assert key["payload"] == {"serverName": prefix}
    assert value["schema"]["name"] == "io.debezium.connector.common.Heartbeat"
    assert isinstance(value["payload"]["ts_ms"], int)
    watched = _events(broker.bootstrap_servers, watched_topic)
    changes = [*range(1, len(rounds) + 2), 100]
    assert [(k["payload"], v["payload"]["op"]) for k, v in watched] == [
        ({"id": i}, "c") for i in changes
    ]


def _streaming(db: Any, slot: str) -> bool:
    with db.cursor() as cur:
        cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        row = cur.fetchone()
    return bool(row and row[0])


class _Worker:
    """A ``connectrt worker`` subprocess on a properties file."""

    def __init__(self, props: Path, log: Path, url: str) -> None:
        self.props, self.log, self.url = props, log, url
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "connectrt.cli", "worker", str(self.props)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/connectors", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


@pytest.mark.slow
def test_kill_9_while_streaming_loses_nothing(
    broker: EmbeddedBroker, pg: PostgresServer, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    pg.create_database("killed")
    db = connect_db(pg, "killed")
    with db.cursor() as cur:
        cur.execute("CREATE TABLE n (id int PRIMARY KEY)")
    run = uuid.uuid4().hex[:8]
    prefix = f"kill-{run}"
    topic = f"{prefix}.public.n"
    create_topic(bootstrap, topic)
    url = f"http://127.0.0.1:{free_port()}"
    props = tmp_path / "worker.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"key.converter={JSON}\nvalue.converter={JSON}\n"
        f"group.id=cdc-{run}\nconfig.storage.topic=configs-{run}\n"
        f"status.storage.topic=status-{run}\noffset.storage.topic=offsets-{run}\n"
        "offset.flush.interval.ms=300\n"
        f"listeners={url}\n"
    )
    worker = _Worker(props, tmp_path / "worker.log", url)
    inserted = 0

    def insert(count: int) -> None:
        nonlocal inserted
        with db.cursor() as cur:
            for _ in range(count):
                cur.execute("INSERT INTO n VALUES (%s)", (inserted,))
                inserted += 1

    def ids() -> list[int]:
        return [v["payload"]["after"]["id"] for _, v in _events(bootstrap, topic) if v]

    worker.start()
    try:
        _wait(worker.ready, "the worker's REST API")
        response = httpx.put(
            f"{url}/connectors/cdc/config", json=cdc_config(pg, "killed", prefix), timeout=30
        )
        assert response.status_code == 201, response.text
        insert(200)
        _wait(lambda: len(ids()) >= 100, "the first changes")
        insert(100)  # in flight while the worker dies
        worker.kill9()
        insert(100)  # while no worker runs
        worker.start()
        _wait(worker.ready, "the restarted worker's REST API")
        _wait(lambda: set(ids()) >= set(range(inserted)), "every row after the restart", 120)
    finally:
        worker.stop()
    seen = ids()
    assert set(seen) == set(range(inserted)), "rows lost"
    duplicates = len(seen) - len(set(seen))
    print(f"{inserted} rows, {duplicates} duplicates after kill -9")
    # What was re-read is at most what had not been committed when the worker died.
    assert duplicates <= 300, duplicates
