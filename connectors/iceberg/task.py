"""IcebergSinkTask: buffers records as Arrow batches and commits them with their Kafka offsets.

Per ``put()``: the batch is read as columns; runs of records with the same value schema are
converted to one Arrow batch each (:mod:`connectors.arrow_batch`, no dict per record), routed
(:mod:`connectors.iceberg.routing`), conformed to each destination table and buffered in that
table's :class:`~connectors.iceberg.writer.TableWriter`. Every
``iceberg.control.commit.interval-ms`` (``put`` asks the runtime for an offsets commit once the
interval is over; ``pre_commit`` commits when it is) and on ``close`` of partitions, each table
with buffered rows is committed in one snapshot that also records, for every partition the
task consumed, the next offset (:mod:`connectors.iceberg.offsets`).

Exactly once: ``open()`` reads each listed table's offsets and seeks the consumer to the lowest
(``context.offset``); a record below a table's stored offset of its partition is not written
to that table again (it is in a committed snapshot already); ``pre_commit`` reports only the
positions of the last completed commit, so the consumer group never gets ahead of the tables.
A kill at any point therefore replays only records no snapshot holds.

Schemaless values (maps, from JsonConverter with ``schemas.enable=false``) are converted with
column types inferred from the values (:mod:`connectors.iceberg.schemaless`), as Iceberg's
connector infers them. Tombstones (null values) are skipped, as Iceberg's connector does. A
record that cannot be converted or does not fit its table goes to the errant record reporter
(the dead letter queue) when one is configured, else fails the task.

Threading: every method runs on the task thread (see :mod:`connectrt.api.task`).
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Collection, Mapping
from itertools import repeat
from typing import Any

import pyarrow as pa

from connectors.arrow_batch import ArrowBatchBuilder
from connectors.destination_offsets import stored_offsets
from connectors.iceberg.catalog import load
from connectors.iceberg.config import IcebergSinkConfig, parse_config
from connectors.iceberg.offsets import group_id
from connectors.iceberg.routing import Router
from connectors.iceberg.schemaless import SchemalessBatchBuilder
from connectors.iceberg.writer import TableWriter
from connectors.unwritable_records import UnwritableRecords
from connectrt.api import (
    ConnectError,
    DataError,
    SinkRecordBatch,
    SinkTask,
    TopicPartition,
)

__all__ = ["VERSION", "IcebergSinkTask"]

log = logging.getLogger(__name__)

VERSION = "0.1.0"


class IcebergSinkTask(SinkTask):
    """See the module docstring. Create with no arguments; the runtime calls ``start``."""

    def __init__(self) -> None:
        self._config: IcebergSinkConfig | None = None
        self._catalog: Any = None
        self._router: Router | None = None
        self._group = ""
        self._writers: dict[str, TableWriter] = {}
        self._builders: dict[int, tuple[Any, ArrowBatchBuilder]] = {}
        self._schemaless = SchemalessBatchBuilder()
        self._assigned: set[tuple[str, int]] = set()
        self._positions: dict[tuple[str, int], int] = {}  # consumed, not committed yet
        self._seen: dict[tuple[str, int], int] = {}  # next offset after the last record put
        self._committed: dict[tuple[str, int], int] = {}  # in committed snapshots
        self._last_commit = 0.0
        self._unwritable = UnwritableRecords(self, " to Iceberg", log)
        self.records_skipped_as_committed = 0

    def version(self) -> str:
        return VERSION

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, config: Mapping[str, str]) -> None:
        cfg = self._config = parse_config(config)
        self._catalog = load(cfg)
        self._router = Router(cfg)
        self._group = group_id(cfg.connector_name)
        self._writers.clear()
        self._positions.clear()
        self._seen.clear()
        self._committed.clear()
        self._last_commit = time.monotonic()

    def stop(self) -> None:
        self._writers.clear()

    def _writer(self, table: str) -> TableWriter:
        writer = self._writers.get(table)
        if writer is None:
            cfg = self._config
            assert cfg is not None
            settings = cfg.table_config(table)
            writer = TableWriter(
                self._catalog,
                table,
                id_columns=settings.id_columns,
                auto_create=cfg.auto_create,
                evolve=cfg.evolve_schema,
                group=self._group,
                partition_by=settings.partition_by,
                partition_key=settings.partition_key,
            )
            writer.load_offsets({topic for topic, _ in self._assigned})
            self._writers[table] = writer
        return writer

    # -- partitions and offsets -----------------------------------------------------------------
    def open(self, partitions: Collection[TopicPartition]) -> None:
        router = self._router
        assert router is not None
        opened = {(tp.topic, tp.partition) for tp in partitions}
        self._assigned |= opened
        for tp in opened:
            self._seen.pop(tp, None)  # the consumer may rewind: check records against tables
        topics = {topic for topic, _ in opened}
        seek: dict[tuple[str, int], int] = {}
        missing: set[tuple[str, int]] = set()
        for table in router.static_tables:
            self._writer(table)
        for table, writer in self._writers.items():
            if not writer.exists:
                continue  # nothing was ever written to it
            stored = writer.load_offsets(topics)  # what the partitions' last owner committed
            if table not in router.static_tables:
                continue  # a table routed to dynamically: only its own records are skipped
            for tp in opened:
                if tp in stored:
                    seek[tp] = min(seek.get(tp, stored[tp]), stored[tp])
                else:
                    missing.add(tp)
        rewind = {TopicPartition(*tp): o for tp, o in seek.items() if tp not in missing}
        for tp, offset in rewind.items():
            self._committed[(tp.topic, tp.partition)] = offset
        if rewind:
            log.info("Seeking to the offsets committed in the Iceberg tables: %s", rewind)
            self.context.offset(rewind)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self._commit_or_discard()
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._assigned.discard(key)
            self._committed.pop(key, None)
            self._positions.pop(key, None)
            self._seen.pop(key, None)

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        cfg = self._config
        assert cfg is not None
        if time.monotonic() - self._last_commit >= cfg.commit_interval_ms / 1000:
            self._commit_or_discard()
        return stored_offsets(offsets, self._committed)

    # -- writing --------------------------------------------------------------------------------
    def put(self, records: SinkRecordBatch) -> None:
        cfg, router = self._config, self._router
        if cfg is None or router is None:
            raise ConnectError("put() before start()")
        if records:
            try:
                self._buffer(SinkRecordBatch.of(records), router)
            except BaseException:
                # Part of the batch may be buffered without its positions: committing it
                # later (close() does) would write those records twice after a restart.
                self._discard()
                raise
        if time.monotonic() - self._last_commit >= cfg.commit_interval_ms / 1000:
            self.context.request_commit()  # the runtime calls pre_commit, which commits

    def _buffer(self, batch: SinkRecordBatch, router: Router) -> None:
        values = batch.values
        schemas = batch.value_schemas
        ends = {(tp.topic, tp.partition): o for tp, o in batch.next_offsets().items()}
        n = len(values)
        # Runs of records with one value schema: one Arrow conversion each.
        if len(set(map(id, schemas))) == 1:
            self._buffer_run(batch, range(n), values, schemas[0], router, ends)
        else:
            start = 0
            while start < n:
                schema = schemas[start]
                end = start + 1
                while end < n and schemas[end] is schema:
                    end += 1
                self._buffer_run(batch, range(start, end), values, schema, router, ends)
                start = end
        self._positions.update(ends)
        self._seen.update(ends)

    def _builder(self, schema: Any) -> ArrowBatchBuilder | SchemalessBatchBuilder:
        if schema is None:
            return self._schemaless
        found = self._builders.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1]
        builder = ArrowBatchBuilder(schema, unit="us")
        self._builders[id(schema)] = (schema, builder)  # keeps schema alive: ids stay unique
        return builder

    def _buffer_run(
        self,
        batch: SinkRecordBatch,
        run: range,
        values: tuple[Any, ...],
        schema: Any,
        router: Router,
        ends: Mapping[tuple[str, int], int],
    ) -> None:
        # By identity: ``None in values`` would call every Struct's __eq__.
        if any(map(operator.is_, values[run.start : run.stop], repeat(None))):
            rows = [i for i in run if values[i] is not None]  # tombstones are skipped
            if not rows:
                return
        else:
            rows = list(run)
        try:
            builder = self._builder(schema)
        except DataError as exc:
            for i in rows:
                self._unwritable.report(batch[i], exc)
            return
        run_values = (
            values[run.start : run.stop] if len(rows) == len(run) else [values[i] for i in rows]
        )
        try:
            arrow = builder.build(run_values)
        except Exception:  # any failure: find the records that do not convert
            good, bad = builder.split_failing(run_values)
            for j, error in bad:
                self._unwritable.report(batch[rows[j]], error)
            rows = [rows[j] for j in good]
            if not rows:
                return
            arrow = builder.build([values[i] for i in rows])
        topics: tuple[Any, ...] = batch.original_topics
        partitions: tuple[Any, ...] = batch.original_partitions
        offsets: tuple[Any, ...] = batch.original_offsets
        if router.every_record_everywhere:
            targets: dict[str, list[int]] = {t: list(range(len(rows))) for t in router.tables(None)}
        else:
            targets = {}
            for j, i in enumerate(rows):
                for table in router.tables(values[i]):
                    targets.setdefault(table, []).append(j)
        for table, selected in targets.items():
            try:
                writer = self._writer(table)
                writer.prepare(arrow.schema)  # loads the table's offsets when it is new
            except Exception as exc:
                if not isinstance(exc, DataError) and not router.dynamic:
                    raise  # a listed table that cannot be used fails the task
                # A table named by the record (dynamic routing) or that cannot take it.
                exc = exc if isinstance(exc, DataError) else DataError(f"table {table}: {exc}")
                for j in selected:
                    self._unwritable.report(batch[rows[j]], exc)
                continue
            stored = writer.stored
            seen = self._seen
            if all(stored.get(tp, 0) <= seen.get(tp, -1) for tp in ends):
                keep = selected  # every record is past what the table holds: the usual case
            else:  # just after open(): records below the table's offsets are already in it
                keep = [
                    j
                    for j in selected
                    if offsets[rows[j]] >= stored.get((topics[rows[j]], partitions[rows[j]]), 0)
                ]
            self.records_skipped_as_committed += len(selected) - len(keep)
            if not keep:
                continue
            part = arrow if len(keep) == arrow.num_rows else arrow.take(pa.array(keep))
            self._add(writer, batch, part, [rows[j] for j in keep])

    def _add(
        self, writer: TableWriter, batch: SinkRecordBatch, part: pa.RecordBatch, rows: list[int]
    ) -> None:
        """Conform ``part`` (the records at ``rows`` of ``batch``) to the table and buffer it;
        when it does not fit, find and report the records that do not."""
        try:
            writer.add(writer.conform(part))
            return
        except DataError as exc:
            if len(rows) == 1:
                self._unwritable.report(batch[rows[0]], exc)
                return
        for j, i in enumerate(rows):
            try:
                writer.add(writer.conform(part.slice(j, 1)))
            except DataError as exc:
                self._unwritable.report(batch[i], exc)

    def _discard(self) -> None:
        """Forget every buffered row and rewind to the committed positions."""
        for writer in self._writers.values():
            writer.discard()
        self._positions.clear()
        self._seen.clear()
        rewind = {TopicPartition(*tp): o for tp, o in self._committed.items()}
        if rewind:
            self.context.offset(rewind)

    def _commit_or_discard(self) -> None:
        """:meth:`_commit`; when it fails, what is buffered is dropped (the runtime rewinds to
        the committed offsets and delivers those records again) before the error propagates."""
        try:
            self._commit()
        except BaseException:
            self._discard()
            raise

    # -- commits --------------------------------------------------------------------------------
    def _commit(self) -> None:
        """Commit every table with buffered rows (and, when every record goes to every table,
        the tables without: their offsets move too), then report the positions committable."""
        router = self._router
        assert router is not None
        positions = dict(self._positions)
        self._last_commit = time.monotonic()
        if not positions:
            return
        for writer in list(self._writers.values()):
            if writer.pending or (router.every_record_everywhere and writer.exists):
                written = writer.commit(positions)
                log.debug(
                    "Committed %d rows to %s with offsets %s", written, writer.name, positions
                )
        self._committed.update(positions)
        self._positions.clear()
