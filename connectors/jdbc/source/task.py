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

Before each new query of a table the task compares the table's columns with those its
querier was built for; a column added, dropped or retyped rebuilds the querier (same offset),
so the records that follow carry the table's new schema. Where the database has a cheap schema
stamp (SQLite's schema cookie) the table is described only when the stamp changed since the
last description, or ``table.poll.interval.ms`` after it; elsewhere before each query.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import zoneinfo
from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectrt.api import ConnectError, RetriableError, SourceRecord, SourceTask

from ..connection import create_engine, redacted_url
from .config import TABLES_CONFIG
from .db import connect, db_error_text
from .querier import Querier, build_querier, column_fingerprint
from .settings import SourceSettings, parse_source_config
from .tables import decode_tables, describe_table

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
        self._zone: dt.tzinfo = dt.UTC

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
        self._zone = zone
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
            if not querier.is_open and querier.table is not None:
                followed = self._follow_columns(querier)
                if followed is None:  # the table is gone or changing: look again next interval
                    return None
                querier = followed
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

    def _follow_columns(self, querier: Querier) -> Querier | None:
        """Open a new query of a table, with a querier built for the table's columns as they
        are now: the query is run, then the table described (on SQLite on the query's own
        connection, in its read transaction; elsewhere on another one); when the columns
        differ from those the querier was built for (a column added, dropped or retyped, or
        the query failed on a dropped one), the result is dropped and the query run again by
        a querier rebuilt for them, from the same offset. So Kafka Connect's JDBC source
        follows a table's columns from one query to the next.

        Returns the querier whose query is open, or None when no query was opened whose
        columns are known: the table is missing (it keeps its querier; the connector's table
        monitor reconfigures if it stays gone) or changed under each of three attempts. The
        querier left in place is then due one ``poll.interval.ms`` later, instead of running
        its query unchecked now: SQLite
        retypes a column by renaming the table, creating it again and copying the rows, and a
        query run blind in that window read the new table's values with the old types.

        Describing is skipped when the query opened fine and the database's schema stamp,
        read on the query's connection, equals the stamp read before the last description of
        the table (stamps only grow, so the table has the columns described then), unless that
        description is ``table.poll.interval.ms`` old. On SQLite a description every
        ``poll.interval.ms`` (several statements and SQLAlchemy's reflection, then on a second
        connection while the open query held the file's shared lock) kept writers waiting for
        the lock; the stamp is one read of the file's header."""
        assert self._settings is not None and self._engine is not None
        table = querier.table
        assert table is not None
        settings, engine = self._settings, self._engine
        for _ in range(3):  # a table changing under each attempt is retried by the next poll
            failure: sa.exc.DBAPIError | None = None
            stamp: int | None = None
            try:
                querier.open()
                stamp = querier.schema_stamp()
            except sa.exc.DBAPIError as exc:
                failure = exc  # perhaps a column dropped: described below
            now = time.monotonic()
            if (
                failure is None
                and stamp is not None
                and stamp == querier.columns_stamp
                and now - querier.columns_checked_at < settings.table_poll_interval_ms / 1000
            ):
                return querier
            try:
                columns = querier.describe_open() if failure is None else None
                if columns is None:
                    with self._connect() as connection:
                        columns = describe_table(connection, table)
                if column_fingerprint(columns) == querier.columns:
                    if failure is not None:
                        raise failure
                    querier.columns_stamp, querier.columns_checked_at = stamp, now
                    return querier
                querier.close()
                with self._connect() as connection:
                    rebuilt = build_querier(
                        connection, engine, settings, table, self._stopping, self._zone
                    )
            except sa.exc.NoSuchTableError:
                querier.close()
                querier.next_run = time.monotonic() + settings.poll_interval_ms / 1000
                return None
            except BaseException:
                querier.close()  # the next poll queries (and describes) again
                raise
            # Built from a description newer than ``stamp``: the stamp holds for it too.
            rebuilt.columns_stamp, rebuilt.columns_checked_at = stamp, now
            rebuilt.last_incrementing = querier.last_incrementing
            rebuilt.last_timestamp = querier.last_timestamp
            self._queriers[self._queriers.index(querier)] = rebuilt
            log.info(
                "%s changed its columns: now %s",
                querier.description,
                ", ".join(f"{n} {t}" for n, t, _ in rebuilt.columns),
            )
            querier = rebuilt
        querier.next_run = time.monotonic() + settings.poll_interval_ms / 1000
        return None

    def _connect(self) -> Connection:
        assert self._settings is not None and self._engine is not None
        s = self._settings
        return connect(self._engine, s.connection_attempts, s.connection_backoff_ms, self._stopping)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            queriers, self._queriers = self._queriers, []
            for querier in queriers:
                querier.close()
            engine, self._engine = self._engine, None
            if engine is not None:
                engine.dispose()
