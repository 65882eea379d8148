"""The side-by-side workload of connectrt's PostgreSQL CDC source and Debezium, at any size.

Shared by ``tests/integration/test_postgres_cdc_vs_debezium.py`` (a few events) and
``bench/compare_postgres_cdc.py`` (the issue's 100,000-row snapshot and 100,000 changes), so the
two run the same table, the same changes and the same comparison.

:func:`create_items` makes the enum and the ``items`` table (numeric with and without scale,
timestamp with and without time zone and with a precision, date, uuid, jsonb, text[], bytea, an
enum, integers, float8, boolean) with two hand-written rows (edge values and all NULLs) plus
generated rows. :func:`apply_changes` inserts, updates and deletes: a hand-written sequence
(single-row changes, one multi-row transaction, a column added), then as many generated changes
as asked, in multi-row transactions of mixed inserts, updates and deletes, with the column added
half-way. :func:`side_by_side_config` is the connector config both sides run (the same
``connector.class``: connectrt registers Debezium's). :func:`topic_events` reads a topic's events
in order, :func:`compare_topics` compares two topics' events field by field after
:func:`~connectrt.testing.debezium.normalize_json` and lists every differing path.

Nothing here is thread-safe; the database calls take a psycopg2 connection in autocommit mode.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from connectrt.testing.debezium import event_differences, normalize_json
from connectrt.testing.postgres import PostgresServer

__all__ = [
    "HAND_EVENTS",
    "Comparison",
    "Difference",
    "apply_changes",
    "compare_topics",
    "create_items",
    "side_by_side_config",
    "topic_events",
]

CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"

HAND_EVENTS = 10
"""Records of the hand-written part alone (``create_items(2)``, ``apply_changes(0)``):
r r c u d tombstone c c u c."""

_COLUMNS = (
    "id, name, price, amount, seen, seen3, at, day, u, doc, tags, raw, feel, small, big, f, ok"
)

# Row ``g`` of the generated rows: every type with varied values, some NULLs, negative numbers,
# dates before 1970, fractions of seconds, quotes and commas in arrays (``%%``: run with
# parameters, so psycopg2 substitutes ``%s``).
_GENERATED = (
    "SELECT g, 'item ' || g, "
    "CASE WHEN g %% 11 = 0 THEN NULL ELSE ((g %% 2000000) - 1000000) / 100.0 END, "
    "CASE WHEN g %% 13 = 0 THEN NULL ELSE round((g - 50000) / 7.0, g %% 6) END, "
    "'1969-12-31 23:59:59'::timestamp + g * interval '1.000001 second', "
    "('2024-01-01'::timestamp + g * interval '0.1234 second')::timestamp(3), "
    "CASE WHEN g %% 17 = 0 THEN NULL "
    "ELSE '2024-01-01 00:00:00+02'::timestamptz + g * interval '61.5 second' END, "
    "'1950-01-01'::date + (g %% 40000), "
    "md5(g::text)::uuid, "
    "jsonb_build_object('n', g, 'half', g / 2.0, 'tags', jsonb_build_array('a', g %% 3), "
    "'nested', jsonb_build_object('even', g %% 2 = 0)), "
    "ARRAY['t' || (g %% 10), CASE WHEN g %% 4 = 0 THEN NULL ELSE 'x \"y\"' END, 'z,w'], "
    "CASE WHEN g %% 9 = 0 THEN NULL ELSE decode(md5(g::text), 'hex') END, "
    "(ARRAY['sad', 'ok', 'happy']::mood[])[g %% 3 + 1], "
    "(g %% 65536 - 32768)::smallint, "
    "g::bigint * 1000003 - 5000000000, "
    "CASE WHEN g %% 19 = 0 THEN NULL ELSE (g / 7.0)::float8 END, "
    "CASE WHEN g %% 23 = 0 THEN NULL ELSE g %% 2 = 0 END "
    "FROM generate_series(%s, %s) g"
)
_FIRST_GENERATED = 10  # ids 1-6 are the hand-written rows'
_FIRST_INSERTED = 10_000_000  # ids of rows the generated changes insert
_BATCH = 1000  # generated changes per transaction


def side_by_side_config(pg: PostgresServer, db: str, prefix: str, **extra: str) -> dict[str, str]:
    """The connector config for either side: database ``db`` of ``pg``, its own slot and
    publication named after ``prefix``, table ``public.items``, JsonConverter keys and values."""
    return {
        "connector.class": CONNECTOR,
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": pg.user,
        "database.dbname": db,
        "topic.prefix": prefix,
        "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.items",
        "key.converter": JSON,
        "value.converter": JSON,
        **extra,
    }


def create_items(conn: Any, rows: int) -> None:
    """Create the ``mood`` enum and the ``items`` table with ``rows`` rows (at least 2: the
    hand-written ones, ids 1 and 2; then generated ids from 10)."""
    if rows < 2:
        raise ValueError("the table starts with at least the two hand-written rows")
    with conn.cursor() as cur:
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
        if rows > 2:
            cur.execute(
                f"INSERT INTO items ({_COLUMNS}) {_GENERATED}",
                (_FIRST_GENERATED, _FIRST_GENERATED + rows - 3),
            )


@dataclass
class _Cursor:
    """Where the generated changes are: updates walk up the generated rows, deletes walk down
    from their end, inserts take new ids."""

    update: int
    delete: int
    insert: int = _FIRST_INSERTED
    records: int = 0
    changes: int = 0
    batch: int = 0

    def count(self, cur: Any, per_row: int = 1) -> None:
        self.changes += cur.rowcount
        self.records += cur.rowcount * per_row


def _generated_changes(cur: Any, at: _Cursor, changes: int, *, extra: bool) -> None:
    """About ``changes`` generated row changes (stops at or just past it), ``_BATCH`` per
    transaction: half updates, three tenths inserts, a fifth deletes (each delete is followed
    by its tombstone)."""
    target = at.changes + changes
    while at.changes < target:
        before = at.changes
        n = min(_BATCH, target - at.changes)
        updates, inserts = n // 2, n * 3 // 10
        deletes = n - updates - inserts
        if at.update + updates > at.delete - deletes:  # the regions met: update from the start
            at.update = _FIRST_GENERATED
            deletes, inserts = 0, n - updates
        at.batch += 1
        cur.execute("BEGIN")
        cur.execute(
            "UPDATE items SET name = name || '+', price = price + 1, "
            "seen = seen + interval '1 hour', at = at + interval '1 day', "
            "doc = doc || jsonb_build_object('v', %s), tags = array_append(tags, 'u'), "
            "feel = 'happy'" + (", extra = id %% 1000" if extra else "") + " "
            "WHERE id BETWEEN %s AND %s",
            (at.batch, at.update, at.update + updates - 1),
        )
        at.count(cur)
        at.update += updates
        if inserts:
            cur.execute(
                f"INSERT INTO items ({_COLUMNS}) {_GENERATED}",
                (at.insert, at.insert + inserts - 1),
            )
            at.count(cur)
            at.insert += inserts
        if deletes:
            cur.execute(
                "DELETE FROM items WHERE id BETWEEN %s AND %s", (at.delete - deletes + 1, at.delete)
            )
            at.count(cur, per_row=2)
            at.delete -= deletes
        cur.execute("COMMIT")
        if at.changes == before:
            raise RuntimeError(f"batch {at.batch} of generated changes changed no row")


def apply_changes(conn: Any, changes: int, *, rows: int) -> int:
    """Change the table ``create_items(conn, rows)`` made: the hand-written sequence (an insert,
    an update, a delete, a multi-row transaction), about ``changes`` generated changes with the
    column ``extra`` added half-way (after the hand-written changes when ``changes`` is 0) and
    a row inserted with it. Returns the number of records both topics get for them (a delete
    counts two: the delete and its tombstone)."""
    at = _Cursor(update=_FIRST_GENERATED, delete=_FIRST_GENERATED + rows - 3)
    with conn.cursor() as cur:
        cur.execute(
            "INSERT INTO items VALUES (3, 'three', -12.05, -0.000123, "
            "'1969-12-31 23:59:59.999999', '2030-06-01 00:00:00', "
            "'2030-06-01 12:00:00-07', '1960-02-29', "
            "'00000000-0000-0000-0000-000000000001', '[]', '{}', '\\x', 'sad', "
            "-1, -2, -0.5, false)"
        )
        cur.execute("UPDATE items SET name = 'uno', feel = 'ok', amount = -1.280 WHERE id = 1")
        cur.execute("DELETE FROM items WHERE id = 2")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO items (id, name) VALUES (4, 'four'), (5, 'five')")
        cur.execute("UPDATE items SET price = 7 WHERE id = 3")
        cur.execute("COMMIT")
        records = 8  # c u d tombstone c c u, and the insert of id 6 below
        _generated_changes(cur, at, changes // 2, extra=False)
        cur.execute("ALTER TABLE items ADD COLUMN extra int")
        cur.execute("INSERT INTO items (id, name, extra) VALUES (6, 'six', 42)")
        _generated_changes(cur, at, changes - changes // 2, extra=True)
    return records + at.records


def topic_events(
    bootstrap: str, topic: str, *, timeout: float = 60.0
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Every record of one-partition ``topic`` up to its end, in order, as (key, value) bytes
    (None for a null key or a tombstone). Raises ``TimeoutError`` when no record arrives for
    ``timeout`` seconds before the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"side-by-side-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, -2)])
        quiet_since = time.monotonic()
        while True:
            # A short wait per call: consume() waits for a full batch, not for the end.
            batch = consumer.consume(5000, 0.5)
            if batch:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > timeout:
                raise TimeoutError(f"reading {topic}: nothing for {timeout:g} s before its end")
            for msg in batch:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return
                    raise RuntimeError(f"reading {topic}: {error}")
                yield msg.key(), msg.value()
    finally:
        consumer.close()


@dataclass
class Difference:
    """One differing path (``.key...`` or ``.value...``, event index left out): how many events
    differ there and the first of them (its index and both values)."""

    path: str
    count: int
    first: int
    debezium: Any
    connectrt: Any


@dataclass
class Comparison:
    """Two topics compared: events of each side and every differing path."""

    debezium_events: int = 0
    connectrt_events: int = 0
    differences: dict[str, Difference] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A readable listing: one line per differing path."""
        return [
            f"{d.path}: {d.count} events, first #{d.first}: "
            f"debezium={d.debezium!r} connectrt={d.connectrt!r}"
            for d in self.differences.values()
        ]


def compare_topics(
    debezium: Iterable[tuple[bytes | None, bytes | None]],
    connectrt: Iterable[tuple[bytes | None, bytes | None]],
    *,
    debezium_prefix: str,
    connectrt_prefix: str,
) -> Comparison:
    """Compare the two sides' events (JsonConverter bytes, as :func:`topic_events` gives them)
    in order, key and value, schema and payload, after
    :func:`~connectrt.testing.debezium.normalize_json` (prefixes replaced, the fields that
    cannot agree left out). Events only one side has count as a difference at ``[missing]``."""
    out = Comparison()
    left, right = iter(debezium), iter(connectrt)
    index = 0
    while True:
        a = next(left, None)
        b = next(right, None)
        if a is None and b is None:
            return out
        out.debezium_events += a is not None
        out.connectrt_events += b is not None
        pairs: list[tuple[str, Any, Any]] = []
        if a is None or b is None:
            pairs = [("[missing]", a and "an event", b and "an event")]
        else:
            for part, x, y in (("key", a[0], b[0]), ("value", a[1], b[1])):
                pairs.extend(
                    event_differences(
                        normalize_json(x, debezium_prefix),
                        normalize_json(y, connectrt_prefix),
                        f".{part}",
                    )
                )
        for path, x, y in pairs:
            general = re.sub(r"\[\d+\]", "[]", path)
            found = out.differences.get(general)
            if found is None:
                out.differences[general] = Difference(general, 1, index, x, y)
            else:
                found.count += 1
        index += 1
