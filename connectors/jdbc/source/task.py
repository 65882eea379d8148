"""JdbcSourceTask: polls its tables (or the custom query) and returns rows as records.

Lifecycle (runtime contract, see :mod:`connectrt.api.task`): ``start`` reflects each assigned
table, builds its :class:`~.querier.Querier` and restores its committed offset (the
protocol-1 partition ``{"protocol": "1", "table": "schema.table"}``, falling back to the legacy
``{"table": ...}`` form); ``poll`` serves the querier whose turn is due, returning at most
``batch.max.rows`` records, or None after waiting (at most 1 s) when no table is due;
``stop`` may come from another thread: it wakes a waiting ``poll`` and then, under the poll
lock, closes open results and disposes the engine.

A table that vanished before ``start`` is skipped (the connector's table monitor reconfigures
the tasks). Database errors during ``poll`` close that table's query and surface as
``RetriableError`` (the runtime polls again); the table is queried again after
``poll.interval.ms`` from its last offset, so nothing is skipped or repeated.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import zoneinfo
from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connectrt.api import ConnectError, RetriableError, SourceRecord, SourceTask

from ..connection import create_engine, redacted_url
from .config import TABLES_CONFIG
from .db import connect, db_error_text
from .querier import Querier, build_querier
from .settings import SourceSettings, parse_source_config
from .tables import decode_tables

__all__ = ["JdbcSourceTask"]

log = logging.getLogger(__name__)

VERSION = "0.1.0"
_MAX_IDLE_WAIT_S = 1.0


class JdbcSourceTask(SourceTask):
    def __init__(self) -> None:
        self._settings: SourceSettings | None = None
        self._engine: Engine | None = None
        self._queriers: list[Querier] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        settings, parsed = parse_source_config(config)
        self._settings = settings
        self._queriers = []
        self._stopping.clear()
        zone: dt.tzinfo = zoneinfo.ZoneInfo(settings.db_timezone)
        if settings.db_timezone.upper() in ("UTC", "ETC/UTC"):
            zone = dt.UTC  # same instant; datetime arithmetic with it is much faster
        engine = create_engine(parsed)
        self._engine = engine
        tables = decode_tables(str(config.get(TABLES_CONFIG, "[]")))
        targets = [None] if settings.query else tables
        with connect(
            engine, settings.connection_attempts, settings.connection_backoff_ms, self._stopping
        ) as connection:
            for table in targets:
                try:
                    querier = build_querier(
                        connection, engine, settings, table, self._stopping, zone
                    )
                except sa.exc.NoSuchTableError:
                    assert table is not None
                    log.warning("Table %s no longer exists; skipped", table.fqn)
                    continue
                except sa.exc.DBAPIError as exc:
                    what = "the query" if table is None else f"table {table.fqn}"
                    raise ConnectError(
                        f"Cannot read {what} in {redacted_url(engine.url)}: {db_error_text(exc)}"
                    ) from None
                self._queriers.append(querier)
        self._restore_offsets()
        log.info(
            "JDBC source task reading %s in mode %s",
            [q.description for q in self._queriers],
            settings.mode,
        )

    def _restore_offsets(self) -> None:
        with_partitions = [q for q in self._queriers if q.partition is not None]
        if not with_partitions:
            return
        reader = self.context.offset_storage_reader
        partitions = [q.partition for q in with_partitions]
        offsets = reader.offsets([p for p in partitions if p is not None])
        legacy_needed = [
            (q, {"table": str(q.partition["table"])})
            for q, o in zip(with_partitions, offsets, strict=True)
            if o is None and q.partition is not None and "table" in q.partition
        ]
        legacy = reader.offsets([p for _, p in legacy_needed]) if legacy_needed else []
        legacy_by_querier = {id(q): o for (q, _), o in zip(legacy_needed, legacy, strict=True)}
        for querier, offset in zip(with_partitions, offsets, strict=True):
            found = offset if offset is not None else legacy_by_querier.get(id(querier))
            if found is not None:
                log.info("%s resumes from offset %s", querier.description, found)
            querier.restore(found)

    def poll(self) -> list[SourceRecord] | None:
        with self._lock:
            if self._stopping.is_set() or not self._queriers or self._settings is None:
                wait = _MAX_IDLE_WAIT_S
            else:
                querier = self._next_querier()
                wait = querier.next_run - time.monotonic()
                if querier.is_open or wait <= 0:
                    return self._poll_one(querier)
        self._stopping.wait(min(max(wait, 0.0), _MAX_IDLE_WAIT_S))
        return None

    def _next_querier(self) -> Querier:
        for q in self._queriers:
            if q.is_open:  # finish an open result before starting another query
                return q
        return min(self._queriers, key=lambda q: q.next_run)

    def _poll_one(self, querier: Querier) -> list[SourceRecord] | None:
        assert self._settings is not None
        try:
            records = querier.poll(self._settings.batch_max_rows)
        except sa.exc.DBAPIError as exc:
            assert self._engine is not None
            raise RetriableError(
                f"Query of {querier.description} in {redacted_url(self._engine.url)} failed: "
                f"{db_error_text(exc)}"
            ) from None
        except ConnectError as exc:  # could not connect after connection.attempts
            raise RetriableError(str(exc)) from None
        return records or None

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            queriers, self._queriers = self._queriers, []
            for querier in queriers:
                querier.close()
            engine, self._engine = self._engine, None
            if engine is not None:
                engine.dispose()
