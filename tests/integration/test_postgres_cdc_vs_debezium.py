"""connectrt's PostgreSQL CDC source side by side with Debezium 3.6 in Kafka Connect.

Debezium 3.6.1's ``debezium-connector-postgres`` runs in a Kafka Connect 4.3.1 worker JVM (the
Kafka it is built for; on Connect 4.4 its task fails) from Maven jars
(:mod:`connectrt.testing.debezium`), connectrt's source in a connectrt worker; both read
the same PostgreSQL database (each with its own slot, publication and ``topic.prefix``) and write
to the same Apache Kafka broker (the session's when ``CONNECTRT_TEST_BROKER=kafka``, else one
started for this module). The workload: a snapshot of two rows, then an insert, an update, a
delete, a multi-row transaction and a column added, on a table with numeric (with and without
scale), timestamp with and without time zone, date, uuid, jsonb, text[], bytea and an enum.
Both topics are read with JsonConverter (schemas on) and compared event by event, key and value,
schema and payload, after replacing each prefix by ``P``. Fields that cannot agree (processing
times, the connector's version and name, the snapshot's time, transaction and position, which
belong to each connector's own slot) are left out: a streamed change's commit time, txId, lsn and
sequence must be equal; every other difference must be one the guide
lists as deliberate (:data:`DELIBERATE`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.debezium import debezium_connect, event_differences, normalize_event
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from connectrt.testing.rest import start_rest_worker, wait_for
from tests.eos_support import is_apache_kafka

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"
EVENTS = 10  # r r c u d tombstone c c u c

# Differences the guide (docs/connectors/postgres-cdc.md, "Compared with Debezium") explains:
# path pattern -> why.
DELIBERATE: dict[str, str] = {}


@pytest.fixture(scope="module")
def kafka(broker: EmbeddedBroker) -> Iterator[str]:
    if is_apache_kafka(broker):
        yield broker.bootstrap_servers
        return
    with KafkaBroker() as own:
        yield own.bootstrap_servers


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer(settings=LOGICAL_REPLICATION) as server:
        yield server


def _config(pg: PostgresServer, prefix: str) -> dict[str, str]:
    return {
        "connector.class": CONNECTOR,
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": pg.user,
        "database.dbname": "side",
        "topic.prefix": prefix,
        "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.items",
        "key.converter": JSON,
        "value.converter": JSON,
    }


def _events(bootstrap: str, topic: str) -> list[tuple[Any, Any]]:
    out = []
    for records in read_topic(bootstrap, topic).values():
        for key, value in records:
            out.append(
                (
                    json.loads(key) if key is not None else None,
                    json.loads(value) if value is not None else None,
                )
            )
    return out


def _deliberate(path: str) -> bool:
    return any(re.fullmatch(pattern, path) for pattern in DELIBERATE)


def test_events_match_debeziums_field_by_field(kafka: str, pg: PostgresServer) -> None:
    pg.create_database("side")
    db = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user, dbname="side")
    db.autocommit = True
    with db.cursor() as cur:
        cur.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
        cur.execute(
            "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), "
            "amount numeric, seen timestamp, seen3 timestamp(3), at timestamptz, day date, "
            "u uuid, doc jsonb, tags text[], raw bytea, feel mood, small smallint, "
            "big bigint, f float8, ok boolean)"
        )
        cur.execute(
            "INSERT INTO items VALUES (1, 'one', 1.50, 3.14159, '2024-01-02 03:04:05.123456', "
            "'2024-01-02 03:04:05.123', '2024-01-02 03:04:05.5+02', '2024-01-02', "
            "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', '{a,\"b c\",NULL}', "
            "'\\x0102ff', 'happy', 7, 9000000000, 2.5, true), "
            "(2, 'two', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL, NULL, NULL)"
        )
    topics = {p: f"{p}.public.items" for p in ("dbz", "crt")}
    for topic in topics.values():
        create_topic(kafka, topic)
    worker = start_rest_worker(kafka)
    try:
        with debezium_connect(kafka) as connect:
            connect.put_connector("debezium", _config(pg, "dbz"))
            response = worker.http.put("/connectors/connectrt/config", json=_config(pg, "crt"))
            assert response.status_code == 201, response.text

            def snapshots_done() -> bool:
                return all(len(_events(kafka, t)) >= 2 for t in topics.values())

            wait_for(snapshots_done, 120, f"both snapshots ({connect.status('debezium')})")
            with db.cursor() as cur:
                cur.execute(
                    "INSERT INTO items VALUES (3, 'three', -12.05, -0.000123, "
                    "'1969-12-31 23:59:59.999999', '2030-06-01 00:00:00', "
                    "'2030-06-01 12:00:00-07', '1960-02-29', "
                    "'00000000-0000-0000-0000-000000000001', '[]', '{}', '\\x', 'sad', "
                    "-1, -2, -0.5, false)"
                )
                cur.execute("UPDATE items SET name = 'uno', feel = 'ok' WHERE id = 1")
                cur.execute("DELETE FROM items WHERE id = 2")
                cur.execute("BEGIN")
                cur.execute("INSERT INTO items (id, name) VALUES (4, 'four'), (5, 'five')")
                cur.execute("UPDATE items SET price = 7 WHERE id = 3")
                cur.execute("COMMIT")
                cur.execute("ALTER TABLE items ADD COLUMN extra int")
                cur.execute("INSERT INTO items (id, name, extra) VALUES (6, 'six', 42)")

            def all_events() -> bool:
                return all(len(_events(kafka, t)) >= EVENTS for t in topics.values())

            wait_for(all_events, 120, f"every change in both topics ({connect.status('debezium')})")
    finally:
        worker.delete_connectors()
        worker.stop()
    dbz = _events(kafka, topics["dbz"])
    crt = _events(kafka, topics["crt"])
    assert len(dbz) == len(crt) == EVENTS, (len(dbz), len(crt))
    found: dict[str, tuple[Any, Any]] = {}
    for i, ((dk, dv), (ck, cv)) in enumerate(zip(dbz, crt, strict=True)):
        for part, a, b in (("key", dk, ck), ("value", dv, cv)):
            for path, x, y in event_differences(
                normalize_event(a, "dbz"), normalize_event(b, "crt"), f"[{i}].{part}"
            ):
                general = re.sub(r"^\[\d+\]", "", path)
                found.setdefault(general, (x, y))
    undocumented = {p: v for p, v in found.items() if not _deliberate(p)}
    report = "\n".join(f"{p}: debezium={x!r} connectrt={y!r}" for p, (x, y) in found.items())
    print(f"Differences with Debezium ({len(found)}):\n{report}")
    assert not undocumented, "\n".join(
        f"{p}: debezium={x!r} connectrt={y!r}" for p, (x, y) in undocumented.items()
    )
