"""Faults of the PostgreSQL CDC source on a real PostgreSQL (wal_level=logical) and the test broker.

One server for the module (its own: a test here restarts it), and a second one left at
PostgreSQL's default ``wal_level`` (``replica``) for the one test that needs it (started only
when that test runs; initdb and start take about 2-6 s). A server restart while the connector
streams is survived: the task reconnects to its slot with a bounded backoff and nothing is
lost. ``wal_level`` not ``logical``, a user without the REPLICATION attribute, a column of a
type the connector cannot map and a slot dropped while streaming each fail the connector with
a message naming the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConfigError
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from tests.postgres_cdc_support import cdc_config, connect_db

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer(settings=LOGICAL_REPLICATION) as server:
        yield server


@pytest.fixture(scope="module")
def replica_pg() -> Iterator[PostgresServer]:
    """A server at PostgreSQL's default wal_level (replica): no logical decoding."""
    with PostgresServer() as server:
        yield server


def _values(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """The value payloads (tombstones left out) in topic order."""
    out = []
    for records in read_topic(bootstrap, topic).values():
        for _key, value in records:
            if value is not None:
                out.append(json.loads(value)["payload"])
    return out


def test_a_server_restart_mid_stream_is_survived_without_loss(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    bootstrap = broker.bootstrap_servers
    pg.create_database("restarted")
    db = connect_db(pg, "restarted")
    with db.cursor() as cur:
        cur.execute("CREATE TABLE n (id int PRIMARY KEY)")
    prefix = unique_name("restart")
    topic = f"{prefix}.public.n"
    create_topic(bootstrap, topic)
    inserted = 0

    def insert(count: int) -> None:
        nonlocal inserted
        with db.cursor() as cur:
            for _ in range(count):
                cur.execute("INSERT INTO n VALUES (%s)", (inserted,))
                inserted += 1

    def ids() -> list[int]:
        return [v["after"]["id"] for v in _values(bootstrap, topic) if v["op"] == "c"]

    config = cdc_config(pg, "restarted", prefix, **{"retriable.restart.connector.wait.ms": "2000"})
    with WorkerHarness(bootstrap) as harness:
        harness.start_connector("cdc", config)
        harness.wait_for_tasks("cdc", State.RUNNING, 1, timeout=60)
        harness.wait_until(lambda: _slot_active(pg), 60, "the task to stream from its slot")
        insert(100)
        harness.wait_until(lambda: len(ids()) >= 50, 60, "the first changes")
        insert(100)  # in flight while the server goes down
        db.close()
        pg.restart()  # fast shutdown: every connection, the walsender's too, is terminated
        db = connect_db(pg, "restarted")
        insert(100)  # after the restart, before the task has reconnected (or just after)
        harness.wait_until(
            lambda: set(ids()) >= set(range(inserted)), 90, "every row after the restart"
        )
        harness.wait_for_tasks("cdc", State.RUNNING, 1, timeout=10)
    seen = ids()
    assert set(seen) == set(range(inserted)), "rows lost"
    # The task resumed after the newest record it had handled: nothing is sent twice.
    assert len(seen) == len(set(seen)), len(seen) - len(set(seen))
    db.close()


def _slot_active(pg: PostgresServer) -> bool:
    conn = connect_db(pg, "postgres")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT bool_or(active) FROM pg_replication_slots")
            row = cur.fetchone()
        return bool(row and row[0])
    finally:
        conn.close()


def test_a_user_without_replication_fails_naming_the_grant(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    pg.create_database("norepl")
    db = connect_db(pg, "norepl")
    with db.cursor() as cur:
        cur.execute("CREATE ROLE reader LOGIN")  # no REPLICATION, not a superuser
        cur.execute("CREATE TABLE t (id int PRIMARY KEY)")
    db.close()
    config = cdc_config(pg, "norepl", unique_name("norepl"), **{"database.user": "reader"})
    # Checked when the config is validated (as PUT /connectors/<name>/config does: 400).
    with WorkerHarness(broker.bootstrap_servers) as harness, pytest.raises(ConfigError) as failure:
        harness.start_connector("cdc", config)
    text = str(failure.value)
    assert "database.user: user 'reader' may not stream changes" in text, text
    assert 'ALTER ROLE "reader" WITH REPLICATION' in text, text


def test_wal_level_not_logical_fails_naming_the_setting_and_the_restart(
    broker: EmbeddedBroker, replica_pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    replica_pg.create_database("replica")
    config = cdc_config(replica_pg, "replica", unique_name("replica"))
    # Checked when the config is validated (as PUT /connectors/<name>/config does: 400).
    with WorkerHarness(broker.bootstrap_servers) as harness, pytest.raises(ConfigError) as failure:
        harness.start_connector("cdc", config)
    text = str(failure.value)
    assert "database.hostname: PostgreSQL at 127.0.0.1:" in text, text
    assert "has wal_level 'replica'" in text, text
    assert "set wal_level = logical in postgresql.conf" in text, text
    assert "restart the server" in text, text


def test_a_column_of_an_unsupported_type_fails_naming_table_column_and_type(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    pg.create_database("composite")
    db = connect_db(pg, "composite")
    with db.cursor() as cur:
        cur.execute("CREATE TYPE pair AS (a int, b text)")
        cur.execute("CREATE TABLE odd (id int PRIMARY KEY, p pair)")
        cur.execute("INSERT INTO odd VALUES (1, ROW(1, 'x'))")
    db.close()
    config = cdc_config(pg, "composite", unique_name("composite"))
    with WorkerHarness(broker.bootstrap_servers) as harness:
        harness.start_connector("cdc", config)
        (task,) = harness.wait_for_tasks("cdc", State.FAILED, 1, timeout=60)
    trace = task.trace or ""
    assert "column 'p' of table public.odd" in trace, trace
    assert "composite type 'pair'" in trace, trace
    assert "table.exclude.list" in trace, trace


def test_a_slot_dropped_while_streaming_fails_the_task_naming_the_fix(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    """Someone drops the connector's slot under it (terminating its walsender first, as
    PostgreSQL requires for an active slot): the changes since the last commit may be gone, so
    the task must not create a new slot and carry on; it fails, saying how to start over."""
    bootstrap = broker.bootstrap_servers
    pg.create_database("dropped")
    db = connect_db(pg, "dropped")
    db.autocommit = True
    with db.cursor() as cur:
        cur.execute("CREATE TABLE d (id int PRIMARY KEY)")
    prefix = unique_name("dropped")
    slot = "slot_dropped"  # cdc_config names the slot after the database
    topic = f"{prefix}.public.d"
    create_topic(bootstrap, topic)
    config = cdc_config(pg, "dropped", prefix)
    with WorkerHarness(bootstrap) as harness:
        harness.start_connector("cdc", config)
        harness.wait_for_tasks("cdc", State.RUNNING, 1, timeout=60)
        harness.wait_until(lambda: _slot_active(pg), 60, "the task to stream from its slot")
        with db.cursor() as cur:
            cur.execute("INSERT INTO d SELECT generate_series(1, 20)")
        harness.wait_until(
            lambda: len(_values(bootstrap, topic)) >= 20, 60, "the 20 rows before the drop"
        )

        def drop_slot() -> bool:
            with db.cursor() as cur:
                cur.execute(
                    "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                    "WHERE slot_name = %s AND active_pid IS NOT NULL",
                    (slot,),
                )
                try:
                    cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                except Exception:  # still active: the walsender had not exited yet
                    return False
            return True

        harness.wait_until(drop_slot, 30, "the slot to be dropped")
        (task,) = harness.wait_for_tasks("cdc", State.FAILED, 1, timeout=90)
    trace = task.trace or ""
    assert f"replication slot '{slot}'" in trace, trace
    assert "offsets" in trace, trace  # the fix: delete the connector's offsets, snapshot anew
    with db.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        (count,) = cur.fetchone()
    assert count == 0, "the failed task created a new slot and would have skipped changes"
    db.close()


def test_a_primary_key_update_is_a_delete_a_tombstone_and_a_create(
    broker: EmbeddedBroker, pg: PostgresServer, unique_name: Callable[[str], str]
) -> None:
    """As Debezium writes it: the old key's delete (and tombstone), then the new key's create;
    under REPLICA IDENTITY DEFAULT (pgoutput sends the old key) and FULL (the old row)."""
    bootstrap = broker.bootstrap_servers
    pg.create_database("rekeyed")
    db = connect_db(pg, "rekeyed")
    with db.cursor() as cur:
        cur.execute("CREATE TABLE k (id int PRIMARY KEY, name text)")
    prefix = unique_name("rekey")
    topic = f"{prefix}.public.k"
    create_topic(bootstrap, topic)

    def events() -> list[tuple[Any, Any]]:
        out = []
        for records in read_topic(bootstrap, topic).values():
            for key, value in records:
                k = json.loads(key)["payload"] if key is not None else None
                v = json.loads(value)["payload"] if value is not None else None
                out.append((k, v))
        return out

    with WorkerHarness(bootstrap) as harness:
        harness.start_connector("cdc", cdc_config(pg, "rekeyed", prefix))
        harness.wait_until(lambda: _slot_active(pg), 60, "the task to stream from its slot")
        with db.cursor() as cur:
            cur.execute("INSERT INTO k VALUES (1, 'a')")
            cur.execute("UPDATE k SET id = 2 WHERE id = 1")  # DEFAULT: the old key is sent
            cur.execute("UPDATE k SET name = 'b' WHERE id = 2")  # key unchanged: an update
            cur.execute("ALTER TABLE k REPLICA IDENTITY FULL")
            cur.execute("UPDATE k SET id = 3, name = 'c' WHERE id = 2")
        harness.wait_until(lambda: len(events()) >= 8, 60, "the changes")
    got = events()
    shape = [(k, None if v is None else v["op"]) for k, v in got]
    assert shape == [
        ({"id": 1}, "c"),
        ({"id": 1}, "d"),
        ({"id": 1}, None),
        ({"id": 2}, "c"),
        ({"id": 2}, "u"),
        ({"id": 2}, "d"),
        ({"id": 2}, None),
        ({"id": 3}, "c"),
    ], shape
    values = [v for _, v in got]
    assert values[1]["before"]["id"] == 1 and values[1]["after"] is None
    assert values[3]["before"] is None and values[3]["after"] == {"id": 2, "name": "a"}
    assert values[5]["before"] == {"id": 2, "name": "b"}  # FULL: the whole old row
    assert values[7]["after"] == {"id": 3, "name": "c"}
    # One transaction each: the delete and the create share the update's source position.
    assert values[1]["source"]["lsn"] == values[3]["source"]["lsn"]
    assert values[1]["source"]["txId"] == values[3]["source"]["txId"]
    db.close()
