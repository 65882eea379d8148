"""What the PostgreSQL CDC test modules share: a connection to a database of the test server and
the connector's config for it (each module keeps its own module-scoped server)."""

from __future__ import annotations

from typing import Any

import psycopg2

from connectrt.testing.postgres import PostgresServer

CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def connect_db(pg: PostgresServer, db: str) -> Any:
    """An autocommit psycopg2 connection to database ``db`` of ``pg``."""
    conn = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user, dbname=db)
    conn.autocommit = True
    return conn


def cdc_config(pg: PostgresServer, db: str, prefix: str, **extra: str) -> dict[str, str]:
    """The connector's config for database ``db`` (slot and publication named after it, topics
    under ``prefix``, JSON keys and values), with ``extra`` keys added."""
    return {
        "connector.class": CONNECTOR,
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": pg.user,
        "database.dbname": db,
        "topic.prefix": prefix,
        "slot.name": f"slot_{db}",
        "publication.name": f"pub_{db}",
        "poll.interval.ms": "100",
        "key.converter": JSON,
        "value.converter": JSON,
        **extra,
    }
