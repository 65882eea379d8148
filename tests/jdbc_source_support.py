"""Helpers for the JDBC source tests: an in-memory offset reader, running a task, draining it."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.jdbc.source import JdbcSourceConnector
from connectors.jdbc.source.task import JdbcSourceTask
from connectrt.api import (
    SourceRecord,
)
from connectrt.data import Schema
from connectrt.testing.contexts import MemoryOffsetReader as MemoryOffsets
from connectrt.testing.contexts import RecordingConnectorContext as ConnectorContext
from connectrt.testing.contexts import StandaloneSourceTaskContext as TaskContext


def started_connector(config: Mapping[str, str]) -> tuple[JdbcSourceConnector, ConnectorContext]:
    connector = JdbcSourceConnector()
    context = ConnectorContext()
    connector.initialize(context)
    connector.start(config)
    return connector, context


def start_tasks(
    config: Mapping[str, str], offsets: MemoryOffsets | None = None, max_tasks: int = 1
) -> list[JdbcSourceTask]:
    """Start the connector, generate task configs, start every task, stop the connector."""
    offsets = offsets if offsets is not None else MemoryOffsets()
    connector, _ = started_connector(config)
    try:
        task_configs = connector.task_configs(max_tasks)
    finally:
        connector.stop()
    tasks = []
    for tc in task_configs:
        task = JdbcSourceTask()
        task.initialize(TaskContext(tc, offsets))
        task.start(tc)
        tasks.append(task)
    return tasks


def drain(
    task: JdbcSourceTask,
    offsets: MemoryOffsets | None = None,
    quiet: float = 0.3,
    limit: float = 20.0,
    at_least: int = 0,
) -> list[SourceRecord]:
    """Poll until ``at_least`` records arrived and then nothing for ``quiet`` seconds (at most
    ``limit`` seconds). ``at_least``: the records a change made must bring, so that a loaded
    machine, where a query can take longer than ``quiet``, does not end the wait before they
    come."""
    out: list[SourceRecord] = []
    deadline = time.monotonic() + limit
    last = time.monotonic()
    while (len(out) < at_least or time.monotonic() - last < quiet) and time.monotonic() < deadline:
        records = task.poll()
        if records:
            out.extend(records)
            if offsets is not None:
                offsets.commit(records)
            last = time.monotonic()
    return out


def poll_until(
    task: JdbcSourceTask, count: int, offsets: MemoryOffsets | None = None, limit: float = 20.0
) -> list[SourceRecord]:
    """Poll until at least ``count`` records arrived (TimeoutError after ``limit`` s)."""
    out: list[SourceRecord] = []
    deadline = time.monotonic() + limit
    while len(out) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(out)} of {count} records within {limit}s")
        records = task.poll()
        if records:
            out.extend(records)
            if offsets is not None:
                offsets.commit(records)
    return out


def values(records: Iterable[SourceRecord], *fields: str) -> list[Any]:
    """The given fields of each record's value (a tuple when several)."""
    out = []
    for r in records:
        row = [r.value.get(f) for f in fields]
        out.append(row[0] if len(row) == 1 else tuple(row))
    return out


def value_schema(record: SourceRecord) -> Schema:
    schema = record.value_schema
    assert schema is not None
    return schema


def field_schema(record: SourceRecord, name: str) -> Schema:
    field = value_schema(record).field(name)
    assert field is not None, f"no field {name}"
    return field.schema


# -- databases: a SQLite file and a database on the private PostgreSQL server --------------


@dataclass
class Db:
    kind: str
    engine: sa.Engine
    config: dict[str, str]  # connection.* keys for the connector

    def now(self) -> dt.datetime:
        """Naive UTC wall time (what TIMESTAMP WITHOUT TIME ZONE columns hold here)."""
        return dt.datetime.now(dt.UTC).replace(tzinfo=None)


DB_KINDS = [
    "sqlite",
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.integration]),
]
"""Parameters for a ``db`` fixture: use ``@pytest.fixture(params=DB_KINDS)`` + :func:`open_db`."""


def open_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    """A fresh SQLite file or PostgreSQL database (``request.param``), disposed afterwards."""
    if request.param == "sqlite":
        path = tmp_path / "source.db"
        engine = sa.create_engine(f"sqlite:///{path}")
        config = {"connection.url": f"jdbc:sqlite:{path}"}
    else:
        postgres = request.getfixturevalue("postgres")
        name = f"src_{uuid.uuid4().hex[:10]}"
        engine = sa.create_engine(postgres.create_database(name))
        config = {"connection.url": postgres.jdbc_url(name), "connection.user": postgres.user}
    yield Db(request.param, engine, config)
    engine.dispose()


def items_table(metadata: sa.MetaData, name: str = "items") -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated", sa.DateTime, nullable=False),
    )


def create_items(db: Db) -> sa.Table:
    table = items_table(sa.MetaData())
    table.metadata.create_all(db.engine)
    return table


def insert(db: Db, table: sa.Table, names: list[str], ts: dt.datetime | None = None) -> None:
    base = ts or db.now() - dt.timedelta(seconds=2)
    with db.engine.begin() as c:
        c.execute(
            table.insert(),
            [
                {"name": n, "version": 1, "updated": base + dt.timedelta(milliseconds=i)}
                for i, n in enumerate(names)
            ],
        )


def touch(db: Db, table: sa.Table, row_id: int, ts: dt.datetime | None = None) -> None:
    with db.engine.begin() as c:
        c.execute(
            table.update()
            .where(table.c.id == row_id)
            .values(version=table.c.version + 1, updated=ts or db.now() - dt.timedelta(seconds=1))
        )
