"""The JDBC source in the real worker with the real broker: restart resume read back from the
topic, reconfiguration when tables appear and disappear, an unreachable database, and the
connector conformance suite (SQLite)."""

from __future__ import annotations

import datetime as dt
import json
import socket
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import sqlalchemy as sa

from connectors.jdbc.source import JdbcSourceConnector
from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.conformance import SourceConnectorConformance
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic
from tests.jdbc_source_support import DB_KINDS, Db, create_items, insert, open_db, touch

pytestmark = pytest.mark.integration

CONNECTOR = "connectors.jdbc.source.JdbcSourceConnector"


@pytest.fixture(params=DB_KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    yield from open_db(request, tmp_path)


def payloads(bootstrap: str, topic: str) -> list[dict[str, object]]:
    out = []
    for records in read_topic(bootstrap, topic).values():
        for _key, value in records:
            assert value is not None
            out.append(json.loads(value)["payload"])
    return out


def test_restart_resumes_without_gaps_or_repeats(
    broker: EmbeddedBroker, db: Db, unique_name: Callable[[str], str]
) -> None:
    items = create_items(db)
    prefix = f"{unique_name('jdbc')}-"
    topic = prefix + "items"
    create_topic(broker.bootstrap_servers, topic)
    insert(db, items, [f"r{i}" for i in range(40)])
    config = {
        **db.config,
        "connector.class": CONNECTOR,
        "mode": "timestamp+incrementing",
        "timestamp.column.name": "updated",
        "incrementing.column.name": "id",
        "topic.prefix": prefix,
        "poll.interval.ms": "100",
        "batch.max.rows": "7",
    }

    def count() -> int:
        return len(payloads(broker.bootstrap_servers, topic))

    harness = WorkerHarness(broker.bootstrap_servers).start()
    try:
        harness.start_connector("jdbc-source", config)
        harness.wait_until(lambda: count() >= 40, 60, "first 40 rows")
        harness.stop()  # graceful: the offsets of everything acknowledged are committed
        insert(db, items, ["n1", "n2", "n3"], db.now() - dt.timedelta(milliseconds=1500))
        for row_id in (3, 17):
            touch(db, items, row_id, db.now() - dt.timedelta(milliseconds=1000))
        harness.start()
        harness.start_connector("jdbc-source", config)
        harness.wait_until(lambda: count() >= 45, 60, "new and updated rows after the restart")
    finally:
        harness.stop()
    rows = [(p["id"], p["version"]) for p in payloads(broker.bootstrap_servers, topic)]
    expected = [(i, 1) for i in range(1, 41)] + [(41, 1), (42, 1), (43, 1), (3, 2), (17, 2)]
    assert rows == expected


def test_tables_appearing_and_disappearing_reconfigure_tasks(
    broker: EmbeddedBroker, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    path = tmp_path / "monitor.db"
    # sqlite3's 5 s busy timeout: the task reads the table every 100 ms (its rows, and its
    # columns only when the schema changed) and never keeps a writer waiting that long.
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE first (id INTEGER PRIMARY KEY, v TEXT)")
        c.exec_driver_sql("INSERT INTO first (v) VALUES ('one')")
    prefix = f"{unique_name('mon')}-"
    for table in ("first", "second"):
        create_topic(broker.bootstrap_servers, prefix + table)
    config = {
        "connector.class": CONNECTOR,
        "connection.url": f"jdbc:sqlite:{path}",
        "mode": "incrementing",
        "topic.prefix": prefix,
        "poll.interval.ms": "100",
        "table.poll.interval.ms": "200",
        "tasks.max": "4",
    }

    def tables_of_tasks(harness: WorkerHarness) -> list[str]:
        configs = harness.running.task_configs("mon")
        return sorted(t[1] for c in configs for t in json.loads(c["tables"]))

    with WorkerHarness(broker.bootstrap_servers) as harness:
        harness.start_connector("mon", config)
        harness.wait_for_tasks("mon", State.RUNNING, 1, timeout=60)
        assert tables_of_tasks(harness) == ["first"]
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE second (id INTEGER PRIMARY KEY, v TEXT)")
            c.exec_driver_sql("INSERT INTO second (v) VALUES ('two')")
        harness.wait_until(
            lambda: tables_of_tasks(harness) == ["first", "second"],
            60,
            "task configs covering the added table",
        )
        harness.wait_until(
            lambda: bool(payloads(broker.bootstrap_servers, prefix + "second")),
            60,
            "the added table's row in its topic",
        )
        assert len(harness.running.task_configs("mon")) == 2
        with engine.begin() as c:
            c.exec_driver_sql("DROP TABLE first")
        harness.wait_until(
            lambda: tables_of_tasks(harness) == ["second"],
            60,
            "task configs without the dropped table",
        )
        harness.wait_for_tasks("mon", State.RUNNING, 1, timeout=60)
    assert payloads(broker.bootstrap_servers, prefix + "second") == [{"id": 1, "v": "two"}]
    engine.dispose()


def test_unreachable_database_fails_the_connector_not_the_worker(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bad = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",  # Confluent's name
        "connection.url": f"jdbc:postgresql://127.0.0.1:{port}/shop?user=u&password=topsecret",
        "mode": "bulk",
        "topic.prefix": "nowhere-",
        "connection.attempts": "2",
        "connection.backoff.ms": "50",
    }
    path = tmp_path / "ok.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    with WorkerHarness(broker.bootstrap_servers) as harness:
        harness.start_connector("bad-db", bad)
        status = harness.running.status.connector("bad-db")
        assert status is not None and status.state is State.FAILED
        trace = status.trace or ""
        assert "Cannot connect to postgresql+psycopg://u:***@127.0.0.1" in trace
        assert "topsecret" not in trace
        # The worker is still up and runs other connectors.
        ok = {"connector.class": CONNECTOR, "connection.url": f"jdbc:sqlite:{path}"}
        harness.start_connector("good-db", {**ok, "mode": "bulk", "topic.prefix": "ok-"})
        harness.wait_for_tasks("good-db", State.RUNNING, 1, timeout=60)
    engine.dispose()


class TestJdbcSourceConformance(SourceConnectorConformance):
    """Table mode; the table is named like the topic (quoted identifiers allow hyphens)."""

    connector_class = JdbcSourceConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        path = tmp_path / "conformance.db"
        engine = sa.create_engine(f"sqlite:///{path}")
        table = sa.Table(
            topic,
            sa.MetaData(),
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("line", sa.Text, nullable=False),
        )
        table.metadata.create_all(engine)
        engine.dispose()
        return {
            "connection.url": f"jdbc:sqlite:{path}",
            "mode": "incrementing",
            "table.whitelist": topic,
            "poll.interval.ms": "100",
        }

    def add_input(self, config: Mapping[str, str], start: int, count: int) -> None:
        engine = sa.create_engine(config["connection.url"].replace("jdbc:sqlite:", "sqlite:///"))
        table = sa.Table(
            config["table.whitelist"],
            sa.MetaData(),
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("line", sa.Text),
        )
        with engine.begin() as c:
            c.execute(table.insert(), [{"line": f"line {i}"} for i in range(start, start + count)])
        engine.dispose()
