"""The JDBC sink in a real worker on the embedded broker, into SQLite files and PostgreSQL.

Each database gets one worker running one connector per mode at once (their consumer groups
join in parallel): insert with auto.create, pk.mode=kafka upserts, record_key upserts with
deletes, record_value updates of a pre-existing table, auto.evolve, an incompatible evolution
that must fail its task naming table and column, an unmappable record going to the dead letter
queue under errors.tolerance=all, and an unreachable database failing its connector with the
reason while the worker and the other connectors carry on. On PostgreSQL a table lock that
outlasts ``lock_timeout`` is retried (RetriableError) until it is released: every record lands
once and the task is never restarted.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic

pytestmark = [pytest.mark.integration]

JSON = "org.apache.kafka.connect.json.JsonConverter"
SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"

ID = {"field": "id", "type": "int64", "optional": False}
NAME = {"field": "name", "type": "string", "optional": True}
AMOUNT = {
    "field": "amount",
    "type": "bytes",
    "optional": True,
    "name": "org.apache.kafka.connect.data.Decimal",
    "version": 1,
    "parameters": {"scale": "2"},
}
AT = {
    "field": "at",
    "type": "int64",
    "optional": True,
    "name": "org.apache.kafka.connect.data.Timestamp",
    "version": 1,
}
V1 = {"type": "struct", "name": "order", "optional": False, "fields": [ID, NAME, AMOUNT, AT]}
V2 = {**V1, "fields": [*V1["fields"], {"field": "colour", "type": "string", "optional": True}]}
V2_REQUIRED = {
    **V1,
    "fields": [*V1["fields"], {"field": "size", "type": "int32", "optional": False}],
}
KEY = {"type": "struct", "optional": False, "fields": [ID]}


def _decimal(cents: int) -> str:
    return base64.b64encode(cents.to_bytes(4, "big", signed=True)).decode()


def value(i: int, name: str | None = None, schema: dict[str, Any] = V1, **extra: Any) -> bytes:
    payload = {
        "id": i,
        "name": name or f"n{i}",
        "amount": _decimal(i * 100 + 25),
        "at": 1_700_000_000_000 + i,
        **extra,
    }
    return json.dumps({"schema": schema, "payload": payload}).encode()


def key(i: int) -> bytes:
    return json.dumps({"schema": KEY, "payload": {"id": i}}).encode()


Url = tuple[str, str, str]  # (SQLAlchemy URL for checks, connection.url, connection.user)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Url]:
    if request.param == "sqlite":
        path = tmp_path / "sink.db"
        yield f"sqlite:///{path}", f"jdbc:sqlite:{path}", ""
        return
    server = request.getfixturevalue("postgres")
    name = f"sink_{request.node.name.split('[')[0][-20:]}_{id(request) % 100000}"
    url = server.create_database(name)
    yield url, server.jdbc_url(name), server.user


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql))]
    except sa.exc.DBAPIError:
        return []  # table not there yet
    finally:
        engine.dispose()


def _wait(harness: WorkerHarness, check: Callable[[], bool], what: str) -> None:
    try:
        # Generous: eight connectors' consumer groups join at once, on a possibly busy machine.
        harness.wait_until(check, 90, what)
    except TimeoutError:
        worker = harness.running
        for name in worker.connectors():
            print(name, [(s.state, (s.trace or "")[-500:]) for s in harness.task_states(name)])
            print("   ", [m.snapshot() for m in harness.metrics(name).values()])
        raise


def test_every_mode_through_the_worker(
    broker: EmbeddedBroker, database: Url, unique_name: Callable[[str], str]
) -> None:
    url, connector_url, user = database
    bs = broker.bootstrap_servers
    modes = ("ins", "kafka", "key", "upd", "evo", "bad", "dlq")
    t = {m: unique_name(m).replace("-", "_") for m in modes}
    dlq = unique_name("dlq-out")
    create_topic(bs, dlq, partitions=1)
    for mode, topic in t.items():  # ordered modes get one partition
        create_topic(bs, topic, partitions=2 if mode in ("ins", "kafka", "upd") else 1)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f'CREATE TABLE "{t["upd"]}" (id BIGINT PRIMARY KEY, name TEXT, '
                "amount NUMERIC(10, 2), at TIMESTAMP)"
            )
        )
        conn.execute(
            sa.text(f"INSERT INTO \"{t['upd']}\" (id, name) VALUES (0, 'a'), (1, 'b'), (2, 'c')")
        )
    engine.dispose()
    produce(bs, t["ins"], (value(i) for i in range(60)))
    produce(bs, t["kafka"], (value(i % 5) for i in range(40)))
    keyed = [(i % 10, value(i % 10, f"v{i}")) for i in range(30)]
    keyed += [(i, None) for i in (0, 1, 2)]  # tombstones after the last writes of 0..2
    produce(bs, t["key"], (v for _, v in keyed), key=lambda n: key(keyed[n][0]))  # type: ignore[arg-type]
    produce(bs, t["upd"], (value(i, "new") for i in (1, 2, 99)))
    produce(
        bs,
        t["evo"],
        [value(i) for i in range(5)] + [value(i, schema=V2, colour="red") for i in range(5, 10)],
    )
    produce(bs, t["bad"], [value(1), value(2, schema=V2_REQUIRED, size=3)])
    nested = {**V1, "fields": [ID, {"field": "inner", "type": "struct", "fields": [ID]}]}
    odd = json.dumps({"schema": nested, "payload": {"id": 5, "inner": {"id": 1}}}).encode()
    produce(bs, t["dlq"], [value(1), odd, value(2)])
    common = {
        "connector.class": SINK,
        "connection.url": connector_url,
        "connection.user": user,
        "connection.attempts": "1",
        "tasks.max": "2",
    }
    configs = {
        "ins": {"auto.create": "true"},
        "kafka": {"auto.create": "true", "pk.mode": "kafka", "insert.mode": "upsert"},
        "key": {
            "auto.create": "true",
            "pk.mode": "record_key",
            "insert.mode": "upsert",
            "delete.enabled": "true",
            "key.converter": JSON,
            "tasks.max": "1",  # one task: the key's tombstones must follow its writes
        },
        "upd": {"pk.mode": "record_value", "pk.fields": "id", "insert.mode": "update"},
        "evo": {"auto.create": "true", "auto.evolve": "true", "tasks.max": "1"},
        "bad": {"auto.create": "true", "auto.evolve": "true", "tasks.max": "1"},
        "dlq": {
            "auto.create": "true",
            "tasks.max": "1",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    }
    with WorkerHarness(bs) as harness:
        for mode, extra in configs.items():
            harness.start_connector(t[mode], {**common, "topics": t[mode], **extra})
        harness.start_connector(
            f"{t['ins']}-down",
            {**common, "topics": t["ins"], "connection.url": "jdbc:postgresql://127.0.0.1:1/x"},
        )
        _wait(
            harness,
            lambda: _query(url, f'SELECT count(DISTINCT id) FROM "{t["ins"]}"') == [(60,)],
            "inserts",
        )
        _wait(
            harness,
            lambda: _query(url, f'SELECT count(*) FROM "{t["kafka"]}"') == [(40,)],
            "kafka pk rows",
        )
        expected_keyed = [(i, f"v{20 + i}") for i in range(3, 10)]
        _wait(
            harness,
            lambda: _query(url, f'SELECT id, name FROM "{t["key"]}" ORDER BY id') == expected_keyed,
            "record_key upserts and deletes",
        )
        _wait(
            harness,
            lambda: (
                _query(url, f'SELECT id, name FROM "{t["upd"]}" ORDER BY id')
                == [(0, "a"), (1, "new"), (2, "new")]
            ),
            "updates",
        )
        _wait(
            harness,
            lambda: _query(url, f'SELECT count(*), count(colour) FROM "{t["evo"]}"') == [(10, 5)],
            "evolved table",
        )
        _wait(
            harness,
            lambda: _query(url, f'SELECT id FROM "{t["dlq"]}" ORDER BY id') == [(1,), (2,)],
            "rows around the unmappable record",
        )
        _wait(harness, lambda: sum(map(len, read_topic(bs, dlq).values())) == 1, "DLQ record")
        down = harness.running.status.connector(f"{t['ins']}-down")
        assert down is not None and down.state is State.FAILED
        assert "Could not connect to postgresql+psycopg://" in (down.trace or "")
        assert "127.0.0.1:1/x after 1 attempt(s)" in (down.trace or "")
        failed = harness.wait_for_tasks(t["bad"], State.FAILED, 1, timeout=60)
        trace = failed[0].trace or ""
        assert f"Cannot evolve table '{t['bad']}': new field 'size' is required" in trace
        # The running connectors are unaffected by the failed one.
        assert all(
            s.state is State.RUNNING
            for m in ("ins", "key", "evo", "dlq")
            for s in harness.task_states(t[m])
        )
    amounts = _query(url, f'SELECT amount, at FROM "{t["ins"]}" WHERE id = 7')
    assert float(amounts[0][0]) == 7.25
    assert str(amounts[0][1]).startswith("2023-11-14 22:13:20.007")
    # pk.mode=kafka: one row per record, keyed by its coordinates - exactly the topic's
    # (topic, partition, offset)s, each once.
    rows = _query(
        url,
        f'SELECT "__connect_topic", "__connect_partition", "__connect_offset" FROM "{t["kafka"]}"',
    )
    in_topic = [
        (t["kafka"], partition, offset)
        for partition, records in read_topic(bs, t["kafka"]).items()
        for offset in range(len(records))
    ]
    assert sorted(rows) == sorted(in_topic)


@pytest.mark.postgres
def test_postgres_lock_timeouts_are_retried_without_restart(
    broker: EmbeddedBroker, postgres: Any, unique_name: Callable[[str], str]
) -> None:
    bs = broker.bootstrap_servers
    topic = unique_name("locked").replace("-", "_")[-50:]
    db = f"lock_{abs(hash(topic)) % 10**8}"
    url = postgres.create_database(db)
    create_topic(bs, topic, partitions=1)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f'CREATE TABLE "{topic}" (id BIGINT, name TEXT, amount NUMERIC(10,2), at TIMESTAMP)'
            )
        )
    locker = engine.connect()
    tx = locker.begin()
    locker.execute(sa.text(f'LOCK TABLE "{topic}" IN ACCESS EXCLUSIVE MODE'))
    released = threading.Event()
    try:
        produce(bs, topic, (value(i) for i in range(200)))
        with WorkerHarness(bs) as harness:
            harness.start_connector(
                topic,
                {
                    "connector.class": SINK,
                    "topics": topic,
                    "connection.url": f"{postgres.jdbc_url(db)}?options=-c%20lock_timeout%3D200",
                    "connection.user": postgres.user,
                    "max.retries": "100",
                    "retry.backoff.ms": "100",
                },
            )
            harness.wait_for_tasks(topic, State.RUNNING, 1, timeout=60)
            runner = harness.running.runners(topic)[0]
            harness.wait_until(lambda: runner.metrics.retries >= 3, 60, "retries under the lock")
            tx.rollback()
            released.set()
            harness.wait_until(
                lambda: _query(url, f'SELECT count(*) FROM "{topic}"') == [(200,)], 60, "all rows"
            )
            assert harness.running.runners(topic)[0] is runner, "the task was restarted"
            assert [s.state for s in harness.task_states(topic)] == [State.RUNNING]
        assert _query(url, f'SELECT count(DISTINCT id), count(*) FROM "{topic}"') == [(200, 200)]
    finally:
        if not released.is_set():
            tx.rollback()
        locker.close()
        engine.dispose()
