"""Helpers for the JDBC source tests: an in-memory offset reader, running a task, draining it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from connectors.jdbc.source import JdbcSourceConnector
from connectors.jdbc.source_task import JdbcSourceTask
from connectrt.api import (
    OffsetStorageReader,
    SourceConnectorContext,
    SourceRecord,
    SourceTaskContext,
)
from connectrt.data import Schema


def _key(partition: Mapping[str, Any]) -> str:
    return json.dumps(dict(partition), sort_keys=True)


class MemoryOffsets(OffsetStorageReader):
    """Offsets as a task committed them: ``commit(records)`` keeps the last offset per
    partition, like the runtime after the records were acknowledged."""

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any] | None] = {}

    def commit(self, records: Iterable[SourceRecord]) -> None:
        for r in records:
            if r.source_partition is not None:
                offset = None if r.source_offset is None else dict(r.source_offset)
                self.stored[_key(r.source_partition)] = offset

    def put(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self.stored[_key(partition)] = dict(offset)

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        return [self.stored.get(_key(p)) for p in partitions]


class TaskContext(SourceTaskContext):
    def __init__(self, config: Mapping[str, str], offsets: MemoryOffsets) -> None:
        self._config = config
        self._offsets = offsets

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._offsets


class ConnectorContext(SourceConnectorContext):
    def __init__(self) -> None:
        self.reconfigurations = 0
        self.errors: list[BaseException] = []

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1

    def raise_error(self, error: BaseException) -> None:
        self.errors.append(error)

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return MemoryOffsets()


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
) -> list[SourceRecord]:
    """Poll until nothing arrived for ``quiet`` seconds (at most ``limit`` seconds)."""
    out: list[SourceRecord] = []
    deadline = time.monotonic() + limit
    last = time.monotonic()
    while time.monotonic() - last < quiet and time.monotonic() < deadline:
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
