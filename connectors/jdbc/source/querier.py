"""One querier per table (or per custom query): builds the mode's SELECT and turns rows into
records with Confluent-format offsets.

Statements (``ts`` is the timestamp column, or ``COALESCE`` of several; ``upper`` is the
database's now minus ``timestamp.delay.interval.ms``):

* bulk: ``SELECT cols FROM t`` (no offsets; the whole table every ``poll.interval.ms``)
* incrementing: ``... WHERE inc > :last_inc ORDER BY inc``
* timestamp: ``... WHERE ts > :last_ts AND ts < :upper ORDER BY ts``
* timestamp+incrementing: ``... WHERE ts < :upper AND ((ts = :last_ts AND inc > :last_inc)
  OR ts > :last_ts) ORDER BY ts, inc``

A custom query becomes a subquery (``SELECT cols FROM (<query>) AS connect_query WHERE ...``).
Every identifier goes through SQLAlchemy (``sa.table``/``sa.column``, quoted always when
``quote.sql.identifiers=ALWAYS``); values are bound parameters.

A query's result stays open across polls, as Confluent's does: each :meth:`Querier.poll`
fetches at most ``batch.max.rows`` rows (a server-side cursor on PostgreSQL), and once the
result is exhausted the querier closes it and waits ``poll.interval.ms`` before querying again.

Offsets (source offset maps): ``{"incrementing": n}``, ``{"timestamp": epoch_ms,
"timestamp_nanos": nanos_of_second}`` or all three, as Confluent's
``TimestampIncrementingOffset`` writes them, so offsets move between the two implementations.

Threading: a querier is used by its task's thread only.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, CursorResult, Engine
from sqlalchemy.sql.elements import quoted_name

from connectrt.api import ConfigError, SourceRecord
from connectrt.data import Schema, SchemaBuilder, Struct

from .checks import resolve_columns
from .db import connect, now
from .settings import SourceSettings
from .tables import ColumnInfo, TableRef, describe_query, describe_table, schema_stamp
from .types import ColumnMapping, column_mapping

__all__ = ["EPOCH", "Querier", "build_querier", "offset_to_timestamp", "timestamp_to_offset"]

log = logging.getLogger(__name__)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NAIVE_EPOCH = EPOCH.replace(tzinfo=None)  # naive timestamps are UTC (db.timezone=UTC)
_US = dt.timedelta(microseconds=1)
INCREMENTING_FIELD = "incrementing"
TIMESTAMP_FIELD = "timestamp"
TIMESTAMP_NANOS_FIELD = "timestamp_nanos"
QUERY_ALIAS = "connect_query"


def timestamp_to_offset(ts: dt.datetime) -> tuple[int, int]:
    """(epoch ms, nanos of the second) of an aware datetime, as Java's ``Timestamp`` holds it."""
    micros = (ts - EPOCH) // _US
    return micros // 1000, (micros % 1_000_000) * 1000


def offset_to_timestamp(millis: int, nanos: int | None) -> dt.datetime:
    """The inverse of :func:`timestamp_to_offset` (``nanos`` None: millisecond precision)."""
    if nanos is None:
        return EPOCH + dt.timedelta(milliseconds=millis)
    return EPOCH + dt.timedelta(seconds=millis // 1000, microseconds=nanos // 1000)


def _name(text: str, quote: bool) -> str:
    return quoted_name(text, True) if quote else text


class Querier:
    """Reads one table or query. Created by :func:`build_querier`; see the module docstring."""

    def __init__(
        self,
        *,
        engine: Engine,
        settings: SourceSettings,
        statement: sa.Select[Any],
        mappings: list[ColumnMapping],
        schema: Schema,
        topic: str,
        partition: dict[str, str] | None,
        incrementing_index: int | None,
        timestamp_indexes: list[int],
        timestamp_naive: bool,
        zone: dt.tzinfo,
        description: str,
        stop: threading.Event,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.statement = statement
        self.schema = schema
        self.topic = topic
        self.partition = partition
        self.description = description
        self.next_run = 0.0  # time.monotonic() of the next query
        self._stop = stop
        self._converters = [(i, m.convert) for i, m in enumerate(mappings) if m.convert]
        self._inc = incrementing_index
        self._ts = timestamp_indexes
        self._ts_naive = timestamp_naive
        self._zone = zone
        self.last_incrementing = -1
        self.last_timestamp: dt.datetime | None = None  # None: timestamp.initial decides
        self._connection: Connection | None = None
        self._result: CursorResult[Any] | None = None
        self.table: TableRef | None = None  # the table read (None: the custom query)
        self.columns: tuple[tuple[str, str, bool], ...] = ()  # its columns, as built
        # When the task last described the table and the schema stamp it had then (see
        # JdbcSourceTask._follow_columns): the task's thread only.
        self.columns_checked_at = -math.inf
        self.columns_stamp: int | None = None

    # -- offsets ---------------------------------------------------------------------------
    def restore(self, offset: Mapping[str, Any] | None) -> None:
        """Resume after ``offset`` (a committed offset map; None: from the start)."""
        if not offset:
            return
        if offset.get(INCREMENTING_FIELD) is not None:
            self.last_incrementing = int(offset[INCREMENTING_FIELD])
        if offset.get(TIMESTAMP_FIELD) is not None:
            nanos = offset.get(TIMESTAMP_NANOS_FIELD)
            self.last_timestamp = offset_to_timestamp(
                int(offset[TIMESTAMP_FIELD]), None if nanos is None else int(nanos)
            )

    def _bound_timestamp(self, ts: dt.datetime) -> dt.datetime:
        """``ts`` as the column holds it (naive columns hold db.timezone wall time)."""
        if self._ts_naive:
            return ts.astimezone(self._zone).replace(tzinfo=None)
        return ts

    # -- querying --------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self._result is not None

    def _open(self) -> None:
        s = self.settings
        connection = connect(
            self.engine, s.connection_attempts, s.connection_backoff_ms, self._stop
        )
        try:
            params: dict[str, Any] = {}
            if s.uses_incrementing:
                params["last_inc"] = self.last_incrementing
            if s.uses_timestamp:
                current = now(connection)
                if self.last_timestamp is None:
                    initial = s.timestamp_initial_ms
                    if initial == -1:
                        self.last_timestamp = current
                    elif initial is not None:
                        self.last_timestamp = EPOCH + dt.timedelta(milliseconds=initial)
                    else:
                        self.last_timestamp = EPOCH
                upper = current - dt.timedelta(milliseconds=s.timestamp_delay_ms)
                params["last_ts"] = self._bound_timestamp(self.last_timestamp)
                params["upper"] = self._bound_timestamp(upper)
            options: dict[str, Any] = {}
            if connection.dialect.supports_server_side_cursors:
                options = {"stream_results": True, "max_row_buffer": s.batch_max_rows}
            self._result = connection.execution_options(**options).execute(self.statement, params)
            self._connection = connection
        except BaseException:
            connection.close()
            raise

    def open(self) -> None:
        """Run the query now (``poll`` runs it when needed). A database error propagates
        after closing, as in ``poll``."""
        if self._result is not None:
            return
        try:
            self._open()
        except BaseException:
            self.close()
            self.next_run = time.monotonic() + self.settings.poll_interval_ms / 1000
            raise

    def schema_stamp(self) -> int | None:
        """The database's schema stamp (:func:`~.tables.schema_stamp`) read on the open query's
        connection; None when no query is open or the database has no stamp."""
        connection = self._connection
        return None if connection is None else schema_stamp(connection)

    def describe_open(self) -> list[ColumnInfo] | None:
        """The table's columns read on the open query's connection, in the query's read
        transaction, where the database runs a second statement while a result is open
        (SQLite; describing there on another connection would wait for a shared lock the open
        query keeps a writer's pending lock from granting); None elsewhere or with no query
        open. Raises ``sqlalchemy.exc.NoSuchTableError`` and database errors."""
        connection = self._connection
        if connection is None or self.table is None or connection.dialect.name != "sqlite":
            return None
        return describe_table(connection, self.table)

    def poll(self, max_rows: int) -> list[SourceRecord]:
        """Up to ``max_rows`` records; opens the query first if needed. Closes the result
        and schedules the next query when it is exhausted. Database errors propagate (after
        closing), leaving the offsets at the last row returned."""
        try:
            if self._result is None:
                self._open()
            assert self._result is not None
            rows = self._result.fetchmany(max_rows)
        except BaseException:
            self.close()
            self.next_run = time.monotonic() + self.settings.poll_interval_ms / 1000
            raise
        if len(rows) < max_rows:
            self.close()
            self.next_run = time.monotonic() + self.settings.poll_interval_ms / 1000
        return self._records(rows)

    def _records(self, rows: Sequence[Any]) -> list[SourceRecord]:
        """Rows -> records. One loop per offset shape keeps the per-row work minimal."""
        if not rows:
            return []
        schema, topic, partition = self.schema, self.topic, self.partition
        converters, inc_i, ts_is = self._converters, self._inc, self._ts
        from_values = Struct._from_values
        records: list[SourceRecord] = []
        append = records.append
        epoch, naive_epoch, us = EPOCH, _NAIVE_EPOCH, _US
        single_ts = ts_is[0] if len(ts_is) == 1 else None
        values: list[Any] = []
        for row in rows:
            values = list(row)
            for i, convert in converters:
                values[i] = convert(values[i])
            if partition is None:
                offset = None
            elif not ts_is:
                offset = {INCREMENTING_FIELD: int(values[inc_i])}  # type: ignore[index]
            else:
                if single_ts is not None:
                    ts = values[single_ts]
                else:
                    ts = next((values[i] for i in ts_is if values[i] is not None), None)
                micros = (ts - (naive_epoch if ts.tzinfo is None else epoch)) // us
                if inc_i is None:
                    offset = {
                        TIMESTAMP_FIELD: micros // 1000,
                        TIMESTAMP_NANOS_FIELD: micros % 1_000_000 * 1000,
                    }
                else:
                    offset = {
                        INCREMENTING_FIELD: int(values[inc_i]),
                        TIMESTAMP_FIELD: micros // 1000,
                        TIMESTAMP_NANOS_FIELD: micros % 1_000_000 * 1000,
                    }
            append(
                SourceRecord(
                    partition, offset, topic, None, None, None, schema, from_values(schema, values)
                )
            )
        if partition is not None:  # the last row is the new position
            if inc_i is not None:
                self.last_incrementing = int(values[inc_i])
            if ts_is:
                last = next((values[i] for i in ts_is if values[i] is not None), None)
                if last is not None:
                    self.last_timestamp = last if last.tzinfo else last.replace(tzinfo=dt.UTC)
        return records

    def close(self) -> None:
        """Close an open result and return its connection (idempotent)."""
        result, self._result = self._result, None
        connection, self._connection = self._connection, None
        try:
            if result is not None:
                result.close()
        except Exception:  # a broken connection: nothing left to release
            pass
        finally:
            if connection is not None:
                try:
                    connection.close()
                except Exception:
                    pass


def _relation(
    table: TableRef | None, query: str, columns: list[ColumnInfo], quote: bool
) -> sa.FromClause:
    cols: list[sa.ColumnClause[Any]] = [sa.column(_name(c.name, quote)) for c in columns]
    if table is not None:
        schema = None if table.schema is None else _name(table.schema, quote)
        return sa.table(_name(table.name, quote), *cols, schema=schema)
    return sa.text(query.strip().rstrip(";")).columns(*cols).subquery(QUERY_ALIAS)


def build_querier(
    connection: Connection,
    engine: Engine,
    settings: SourceSettings,
    table: TableRef | None,
    stop: threading.Event,
    zone: dt.tzinfo,
) -> Querier:
    """Reflect ``table`` (None: the custom query) and prepare its statement.

    Raises ``sqlalchemy.exc.NoSuchTableError`` for a missing table and ConfigError when the
    mode's columns are missing or unusable.
    """
    if table is not None:
        columns = describe_table(connection, table)
        where = f"table {table.fqn}"
    else:
        columns = describe_query(connection, settings.query)
        where = "the query"
    resolved = resolve_columns(settings, columns, where, check_nulls=table is not None)
    if resolved.errors:
        key, messages = next(iter(resolved.errors.items()))
        raise ConfigError(f"{key}: {'; '.join(messages)}", key)
    backend = connection.dialect.name
    mapped: list[tuple[ColumnInfo, ColumnMapping]] = []
    for col in columns:
        m = column_mapping(
            col.name,
            col.type,
            col.nullable,
            backend=backend,
            numeric_mapping=settings.numeric_mapping,
            zone=zone,
        )
        if m is None:
            log.warning(
                "%s: column %s of type %s is not supported, skipped", where, col.name, col.type
            )
            continue
        mapped.append((col, m))
    relation = _relation(table, settings.query, [c for c, _ in mapped], settings.quote_identifiers)
    by_name = {c.name: i for i, (c, _) in enumerate(mapped)}
    exprs = list(relation.c)
    stmt = sa.select(*exprs)
    order: list[Any] = []
    inc_index = None
    ts_indexes: list[int] = []
    ts_naive = False
    ts_expr: Any = None
    if resolved.timestamps:
        ts_indexes = [by_name[c.name] for c in resolved.timestamps]
        ts_cols = [exprs[i] for i in ts_indexes]
        ts_expr = ts_cols[0] if len(ts_cols) == 1 else sa.func.coalesce(*ts_cols)
        ts_type = resolved.timestamps[0].type
        ts_naive = not getattr(ts_type, "timezone", False)
        last_ts = sa.bindparam("last_ts", type_=ts_type)
        upper = sa.bindparam("upper", type_=ts_type)
        order.append(ts_expr)
    if resolved.incrementing is not None:
        inc_index = by_name[resolved.incrementing.name]
        inc_expr = exprs[inc_index]
        last_inc = sa.bindparam("last_inc", type_=sa.BigInteger())
        order.append(inc_expr)
    if ts_expr is not None and inc_index is not None:
        stmt = stmt.where(
            ts_expr < upper,
            sa.or_(sa.and_(ts_expr == last_ts, inc_expr > last_inc), ts_expr > last_ts),
        )
    elif ts_expr is not None:
        stmt = stmt.where(ts_expr > last_ts, ts_expr < upper)
    elif inc_index is not None:
        stmt = stmt.where(inc_expr > last_inc)
    if order:
        stmt = stmt.order_by(*order)
    if settings.query_suffix:
        stmt = stmt.suffix_with(settings.query_suffix)
    builder = SchemaBuilder.struct()
    if table is not None:
        builder.name(table.name)
    for _, m in mapped:
        builder.field(m.name, m.schema)
    if table is not None:
        topic = settings.topic_prefix + table.name
        partition: dict[str, str] | None = {"protocol": "1", "table": table.fqn}
    else:
        topic = settings.topic_prefix
        partition = {"query": "query"}
    if not (settings.uses_incrementing or settings.uses_timestamp):
        partition = None  # bulk: nothing to resume from
    querier = Querier(
        engine=engine,
        settings=settings,
        statement=stmt,
        mappings=[m for _, m in mapped],
        schema=builder.build(),
        topic=topic,
        partition=partition,
        incrementing_index=inc_index,
        timestamp_indexes=ts_indexes,
        timestamp_naive=ts_naive,
        zone=zone,
        description=where,
        stop=stop,
    )
    querier.table = table
    querier.columns = column_fingerprint(columns)
    return querier


def column_fingerprint(columns: list[ColumnInfo]) -> tuple[tuple[str, str, bool], ...]:
    """What a change of ``columns`` (added, removed, retyped, nullability) changes."""
    return tuple((c.name, str(c.type), c.nullable) for c in columns)
