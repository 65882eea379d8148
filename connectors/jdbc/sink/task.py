"""JdbcSinkTask: writes each ``put()`` batch to the database in one transaction.

Per batch: records, read as the batch's columns (no ``SinkRecord`` is built unless one must be
reported), are grouped into runs of the same *write plan* (destination table, record shape,
operation), each run is executed with ``executemany`` (``batch.size`` rows per call), all
inside one transaction, which commits before ``put()`` returns. ``flush()`` therefore has
nothing left to do and committed consumer offsets never pass what the database holds.

Plans (columns, row function, statement) are built once per (topic, key schema, value schema,
operation) and cached (:mod:`connectors.jdbc.sink.plans`); that is also when tables are created
or evolved. The per-record work is one identity check against the previous record's schemas and
the plan's row function.

Transient database errors (lock timeouts, a busy SQLite file, lost connections; see
:mod:`connectors.jdbc.sink.database`) roll the batch back and raise RetriableError after
``context.timeout(retry.backoff.ms)``, so the runtime redelivers the same batch without
restarting the task; after ``max.retries`` consecutive failures the task fails. Records that
cannot be mapped to their table (SchemaMismatch and other DataErrors) go to the errant record
reporter when one is configured, else fail the task. So do rows the database rejects
(constraint violations): with a reporter, a batch that failed that way is written again in one
transaction with a savepoint per row, and only the rejected rows' records are reported.

Exactly once (``exactly.once.enabled``): each batch also upserts, in the same transaction, the
next offset of every partition it covers into the offsets table. ``open()`` reads those back and
rewinds the consumer with ``context.offset``; records below the stored offset of their
partition are skipped (a batch that spans a rewind is not applied twice); ``pre_commit``
returns the stored offsets. A crash between the database commit and the consumer commit
therefore replays nothing that is already in the table.

Threading: every method runs on the task thread (see :mod:`connectrt.api.task`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connectors.destination_offsets import stored_offsets
from connectors.jdbc.sink.config import SinkConfig, parse_sink_config
from connectors.jdbc.sink.copy import copy_rows
from connectors.jdbc.sink.database import connect, db_error_reason, is_transient, timestamp_zone
from connectors.jdbc.sink.fields import Row
from connectors.jdbc.sink.offsets import OffsetsTable
from connectors.jdbc.sink.plans import Segment, WritePlan, WritePlanner
from connectors.jdbc.sink.tables import TableManager
from connectors.unwritable_records import UnwritableRecords
from connectrt.api import (
    ConnectError,
    DataError,
    RetriableError,
    SinkRecordBatch,
    SinkTask,
    TopicPartition,
)

__all__ = ["VERSION", "JdbcSinkTask"]

log = logging.getLogger(__name__)

VERSION = "0.1.0"
_UNSET: Any = object()


class JdbcSinkTask(SinkTask):
    """See the module docstring. Create with no arguments; the runtime calls ``start``."""

    def __init__(self) -> None:
        self._config: SinkConfig | None = None
        self._engine: Engine | None = None
        self._offsets: OffsetsTable | None = None
        self._planner: WritePlanner | None = None
        self._stored: dict[tuple[str, int], int] = {}
        self._retries_left = 0
        self._unwritable = UnwritableRecords(self, "", log)
        self.records_skipped_as_applied = 0

    def version(self) -> str:
        return VERSION

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, config: Mapping[str, str]) -> None:
        cfg = self._config = parse_sink_config(config)
        engine = self._engine = connect(cfg.raw)
        dialect = engine.dialect.name
        tables = TableManager(
            engine,
            quote=cfg.quote_identifiers,
            auto_create=cfg.auto_create,
            auto_evolve=cfg.auto_evolve,
        )
        self._planner = WritePlanner(
            cfg,
            tables,
            dialect,
            timestamp_zone(dialect, cfg.db_timezone),
            cfg.postgresql_copy and dialect == "postgresql",
        )
        self._retries_left = cfg.max_retries
        self._stored.clear()
        if cfg.exactly_once:
            self._offsets = OffsetsTable(
                engine, cfg.offsets_table, cfg.connector_name, cfg.quote_identifiers
            )
            self._offsets.ensure()

    def stop(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    # -- partitions and offsets -----------------------------------------------------------------
    def open(self, partitions: Collection[TopicPartition]) -> None:
        if self._offsets is None:
            return
        stored = self._offsets.read(partitions)
        self._stored.update({(tp.topic, tp.partition): o for tp, o in stored.items()})
        if stored:
            log.info("Rewinding to the offsets stored in the database: %s", stored)
            self.context.offset(stored)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        for tp in partitions:
            self._stored.pop((tp.topic, tp.partition), None)

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        if self._offsets is None:
            return offsets  # every put() committed its transaction already
        return stored_offsets(offsets, self._stored)

    # -- writing --------------------------------------------------------------------------------
    def put(self, records: SinkRecordBatch) -> None:
        if not records:
            return
        planner = self._planner
        if planner is None:
            raise ConnectError("put() before start()")
        batch = SinkRecordBatch.of(records)
        exactly_once = self._offsets is not None
        by_kafka = self._config is not None and self._config.pk_mode == "kafka"
        stored = self._stored
        positions: dict[tuple[str, int], int] = {}
        segments: list[Segment] = []
        plan: WritePlan | None = None
        rows: list[Row] = []
        written: list[int] = []  # the batch index of each row, to report a rejected one
        row_fn: Any = None
        last_topic: Any = _UNSET
        last_ks: Any = _UNSET
        last_vs: Any = _UNSET
        last_delete = False
        skipped = 0
        n = len(batch)
        nothing = (None,) * n
        # The batch as columns: no SinkRecord is built unless one must be reported.
        columns = zip(
            batch.topics,
            batch.key_schemas,
            batch.keys,
            batch.value_schemas,
            batch.values,
            batch.partitions if by_kafka else nothing,
            batch.offsets if by_kafka else nothing,
            batch.original_topics if exactly_once else nothing,
            batch.original_partitions if exactly_once else nothing,
            batch.original_offsets if exactly_once else nothing,
            strict=True,
        )
        for i, (
            topic,
            ks,
            key,
            vs,
            value,
            partition,
            offset,
            o_topic,
            o_part,
            o_offset,
        ) in enumerate(columns):
            if exactly_once:
                tp: Any = (o_topic, o_part)
                if o_offset < stored.get(tp, 0):
                    skipped += 1
                    continue
                positions[tp] = o_offset + 1
            delete = value is None
            if vs is last_vs and ks is last_ks and delete is last_delete and topic == last_topic:
                try:
                    rows.append(row_fn(key, value, topic, partition, offset))
                except Exception as exc:
                    self._unwritable.report(batch[i], exc)
                    continue
                written.append(i)
                continue
            try:
                found = planner.plan_for(topic, ks, key, vs, value, delete)
                row = found.fields.row(key, value, topic, partition, offset)
            except DataError as exc:
                self._unwritable.report(batch[i], exc)
                last_topic = _UNSET
                continue
            if found is not plan:
                plan, rows, written = found, [], []
                segments.append((plan, rows, written))
            rows.append(row)
            written.append(i)
            row_fn = found.fields.row
            if found.fields.schemaless:
                last_topic = _UNSET  # map keys may differ record to record: look up each time
            else:
                last_topic, last_ks, last_vs, last_delete = topic, ks, vs, delete
        if skipped:
            self.records_skipped_as_applied += skipped
            log.info("Skipped %d records already written (below the stored offsets)", skipped)
        if segments or positions:
            self._write(batch, segments, positions, n - skipped)
        if positions:
            stored.update(positions)

    def _write(
        self,
        batch: SinkRecordBatch,
        segments: list[Segment],
        positions: Mapping[tuple[str, int], int],
        count: int,
    ) -> None:
        cfg, engine = self._config, self._engine
        assert cfg is not None and engine is not None
        dialect = engine.dialect.name
        try:
            try:
                self._write_batch(segments, positions)
            except sa.exc.DBAPIError as exc:
                if is_transient(exc, dialect) or self._unwritable.reporter() is None:
                    raise
                log.warning(
                    "Writing %d records failed (%s); writing them one by one to report the "
                    "records the database rejects",
                    count,
                    db_error_reason(exc),
                )
                self._write_one_by_one(batch, segments, positions)
        except sa.exc.DBAPIError as exc:
            tables = sorted({plan.table for plan, _, _ in segments})
            reason = db_error_reason(exc)
            if is_transient(exc, dialect):
                if self._retries_left <= 0:
                    raise ConnectError(
                        f"Writing {count} records to {tables} failed after {cfg.max_retries} "
                        f"retries: {reason}"
                    ) from exc
                self._retries_left -= 1
                self.context.timeout(cfg.retry_backoff_ms)
                log.warning(
                    "Transient error writing to %s (%d retries left): %s",
                    tables,
                    self._retries_left,
                    reason,
                )
                raise RetriableError(f"Transient database error: {reason}") from exc
            raise ConnectError(f"Writing {count} records to {tables} failed: {reason}") from exc
        self._retries_left = cfg.max_retries

    def _write_batch(
        self, segments: list[Segment], positions: Mapping[tuple[str, int], int]
    ) -> None:
        """The batch in one transaction (with the exactly-once offsets): the fast path."""
        cfg, engine = self._config, self._engine
        assert cfg is not None and engine is not None
        size = cfg.batch_size
        with engine.begin() as conn:
            for plan, rows, _ in segments:
                if plan.statement is None or not rows:
                    continue
                if plan.copy_into is not None:
                    copy_rows(conn, plan.copy_into, rows)
                elif len(rows) <= size:
                    conn.execute(plan.statement, rows)
                else:
                    for i in range(0, len(rows), size):
                        conn.execute(plan.statement, rows[i : i + size])
            if self._offsets is not None and positions:
                self._offsets.write(conn, positions)

    def _write_one_by_one(
        self,
        batch: SinkRecordBatch,
        segments: list[Segment],
        positions: Mapping[tuple[str, int], int],
    ) -> None:
        """The batch after the database rejected it, with an errant record reporter: still
        one transaction (with the exactly-once offsets), each row in a savepoint; a row the
        database rejects is rolled back to its savepoint and its record reported, the others
        are written. A transient error propagates (the whole batch is retried)."""
        engine = self._engine
        assert engine is not None
        dialect = engine.dialect.name
        with engine.begin() as conn:
            if dialect == "sqlite" and not conn.connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
                # pysqlite begins a transaction only before DML: without an explicit BEGIN the
                # first SAVEPOINT would be the outermost transaction and its RELEASE a commit.
                conn.exec_driver_sql("BEGIN")
            for plan, rows, indices in segments:
                if plan.statement is None:
                    continue
                for row, index in zip(rows, indices, strict=True):
                    try:
                        with conn.begin_nested():
                            conn.execute(plan.statement, [row])
                    except sa.exc.DBAPIError as exc:
                        if is_transient(exc, dialect):
                            raise
                        self._unwritable.report(
                            batch[index],
                            DataError(f"The database rejected it: {db_error_reason(exc)}"),
                        )
            if self._offsets is not None and positions:
                self._offsets.write(conn, positions)
