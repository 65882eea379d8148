"""connectrt's PostgreSQL CDC source side by side with Debezium 3.6 in Kafka Connect.

Debezium 3.6.1's ``debezium-connector-postgres`` runs in a Kafka Connect 4.3.1 worker JVM (the
Kafka it is built for; on Connect 4.4 its task fails) from Maven jars
(:mod:`connectrt.testing.debezium`), connectrt's source in a connectrt worker; both read
the same PostgreSQL database (each with its own slot, publication and ``topic.prefix``) and write
to the same Apache Kafka broker (the session's when ``CONNECTRT_TEST_BROKER=kafka``, else one
started for this module). The workload (:mod:`connectrt.testing.debezium_workload`, which
``bench/compare_postgres_cdc.py`` runs at 100,000 rows and changes): a snapshot of its two
hand-written rows, then an insert, an update, a delete, a multi-row transaction and a column
added, on a table with numeric (with and without scale), timestamp with and without time zone,
date, uuid, jsonb, text[], bytea and an enum. Both topics are read with JsonConverter (schemas
on) and compared event by event, key and value, schema and payload, after replacing each prefix
by ``P``. Fields that cannot agree (processing times, the connector's version and name, the
snapshot's time, transaction and position, which belong to each connector's own slot) are left
out: a streamed change's commit time, txId, lsn and sequence must be equal; every other
difference must be one the guide lists as deliberate (:data:`DELIBERATE`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.debezium import debezium_connect
from connectrt.testing.debezium_workload import (
    HAND_EVENTS,
    apply_changes,
    compare_topics,
    create_items,
    side_by_side_config,
    topic_events,
)
from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.postgres import LOGICAL_REPLICATION, PostgresServer
from connectrt.testing.rest import start_rest_worker, wait_for
from tests.eos_support import is_apache_kafka
from tests.postgres_cdc_support import connect_db

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

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


def _count(bootstrap: str, topic: str) -> int:
    return sum(1 for _ in topic_events(bootstrap, topic))


def _deliberate(path: str) -> bool:
    return any(re.fullmatch(pattern, path) for pattern in DELIBERATE)


def test_events_match_debeziums_field_by_field(kafka: str, pg: PostgresServer) -> None:
    pg.create_database("side")
    db = connect_db(pg, "side")
    create_items(db, 2)
    topics = {p: f"{p}.public.items" for p in ("dbz", "crt")}
    for topic in topics.values():
        create_topic(kafka, topic)
    worker = start_rest_worker(kafka)
    try:
        with debezium_connect(kafka) as connect:
            connect.put_connector("debezium", side_by_side_config(pg, "side", "dbz"))
            response = worker.http.put(
                "/connectors/connectrt/config", json=side_by_side_config(pg, "side", "crt")
            )
            assert response.status_code == 201, response.text

            def snapshots_done() -> bool:
                return all(_count(kafka, t) >= 2 for t in topics.values())

            wait_for(snapshots_done, 120, f"both snapshots ({connect.status('debezium')})")
            assert apply_changes(db, 0, rows=2) == HAND_EVENTS - 2

            def all_events() -> bool:
                return all(_count(kafka, t) >= HAND_EVENTS for t in topics.values())

            wait_for(all_events, 120, f"every change in both topics ({connect.status('debezium')})")
    finally:
        worker.delete_connectors()
        worker.stop()
    found = compare_topics(
        topic_events(kafka, topics["dbz"]),
        topic_events(kafka, topics["crt"]),
        debezium_prefix="dbz",
        connectrt_prefix="crt",
    )
    assert found.debezium_events == found.connectrt_events == HAND_EVENTS, found
    print(f"Differences with Debezium ({len(found.differences)}):", *found.lines(), sep="\n")
    undocumented = [
        line
        for path, line in zip(found.differences, found.lines(), strict=True)
        if not _deliberate(path)
    ]
    assert not undocumented, "\n".join(undocumented)
