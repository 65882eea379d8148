"""One Kafka partition's open files: buffering, rotation, writing, and the committable offset.

A :class:`PartitionWriter` holds the *set* of files open for one topic partition (one per
directory the partitioner chose: one with the default partitioner). Records are added in offset
order; the whole set is written at once when ``flush.size`` records were added, when the
record times span ``rotate.interval.ms``, when the value schema changes in a way
``schema.compatibility`` does not absorb, or ``rotate.schedule.interval.ms`` after the set
opened. Each file is named after the offset of its first record, and carries the set's end
offset and file count (Parquet, Avro), so the same records always land in the same objects:
a set rewritten after a crash replaces what the crashed task wrote.

Only :attr:`PartitionWriter.committable` (the offset after the last written set) may be
committed; records buffered in the open set are not in storage yet. Records that cannot be
written go to ``report`` (the errant record reporter, or a raise when there is none).
Used on the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from connectors.arrow_batch import ArrowBatchBuilder
from connectors.objectstore.config import StoreConfig
from connectors.objectstore.formats import (
    EXTENSIONS,
    avro_schema,
    encode_avro,
    encode_json_lines,
    encode_parquet,
)
from connectors.objectstore.partitioners import Partitioner, TimestampExtractor
from connectors.objectstore.storage import ObjectStore
from connectrt.api import TopicPartition
from connectrt.data import Schema, Type
from connectrt.errors import DataError

__all__ = ["BatchColumns", "BuilderCache", "PartitionWriter", "object_name"]

Report = Callable[[int, BaseException], None]
"""Called with a record's index in the batch and why it cannot be written."""

_SAME, _PROJECT, _ROTATE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """The columns of one ``put()`` batch the writers read (each read once per batch)."""

    values: Sequence[Any]
    schemas: Sequence[Schema | None]
    offsets: Sequence[int]
    timestamps: Sequence[int | None]


def object_name(topic: str, partition: int, start: int, ext: str) -> str:
    """``<topic>+<partition>+<start offset, 10 digits>.<ext>``, Confluent's object name."""
    return f"{topic}+{partition}+{start:010d}.{ext}"


class BuilderCache:
    """An :class:`ArrowBatchBuilder` per value schema, shared by a task's writers."""

    def __init__(self) -> None:
        self._builders: dict[Schema, ArrowBatchBuilder] = {}

    def get(self, schema: Schema | None) -> ArrowBatchBuilder:
        if schema is None:
            return ArrowBatchBuilder(None)  # raises SchemalessValueError
        builder = self._builders.get(schema)
        if builder is None:
            if len(self._builders) > 256:
                self._builders.clear()
            builder = self._builders[schema] = ArrowBatchBuilder(schema)
        return builder


@dataclass(slots=True)
class _OpenFile:
    start: int  # offset of its first record: the object's name
    chunks: list[Any] = field(default_factory=list)  # RecordBatches, or value lists (JSON)
    rows: int = 0


def project(batch: pa.RecordBatch, target: pa.Schema, connect: Schema) -> pa.RecordBatch:
    """``batch`` in the ``target`` schema: columns matched by name and cast, a column the
    batch lacks filled with the Connect field's default (or nulls when optional)."""
    n = batch.num_rows
    names = batch.schema.names
    arrays = []
    for i, arrow_field in enumerate(target):
        if arrow_field.name in names:
            column = batch.column(arrow_field.name)
            if column.type != arrow_field.type:
                column = column.cast(arrow_field.type)
            arrays.append(column)
            continue
        connect_field = connect.fields[i] if connect.type is Type.STRUCT else None
        default = None if connect_field is None else connect_field.schema.default
        if default is not None:
            arrays.append(pa.array([default] * n, type=arrow_field.type))
        elif arrow_field.nullable:
            arrays.append(pa.nulls(n, type=arrow_field.type))
        else:
            raise DataError(f"the record has no value for required field {arrow_field.name!r}")
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _schemaless_error() -> DataError:
    try:
        ArrowBatchBuilder(None)
    except DataError as exc:
        return exc
    raise AssertionError("unreachable")


class PartitionWriter:
    """The open file set of one topic partition (see the module docstring)."""

    def __init__(
        self,
        tp: TopicPartition,
        config: StoreConfig,
        store: ObjectStore,
        partitioner: Partitioner,
        builders: BuilderCache,
    ) -> None:
        self.tp = tp
        self._config = config
        self._store = store
        self._partitioner = partitioner
        self._builders = builders
        self._format = config.format
        self._ext = EXTENSIONS[config.format]
        self._base = f"{config.topics_dir}/{tp.topic}" if config.topics_dir else tp.topic
        self._times = TimestampExtractor(config.timestamp_extractor, config.timestamp_field)
        self.committable: int | None = None
        self._reset()

    def _reset(self) -> None:
        self._files: dict[str, _OpenFile] = {}
        self._count = 0  # records added to the set (written or reported)
        self._last: int | None = None  # offset of the set's last record
        self._schema: Schema | None = None
        self._arrow_schema: pa.Schema | None = None
        self._first_time = 0
        self._opened = 0.0

    @property
    def buffered(self) -> int:
        return self._count

    # -- adding records ------------------------------------------------------------------------
    def add(self, columns: BatchColumns, indices: Sequence[int], report: Report) -> None:
        """Add the records at ``indices`` of the batch (this partition's, in offset order)."""
        values, schemas = columns.values, columns.schemas
        flush_size = self._config.flush_size
        interval = self._config.rotate_interval_ms
        times: list[int | None] | None = None
        time_errors: dict[int, DataError] = {}
        if interval > 0:
            times = self._record_times(columns, indices, time_errors)
        n = len(indices)
        i = 0
        while i < n:
            k = indices[i]
            schema = schemas[k]
            if values[k] is None:
                self._skip(columns, k, report, self._null_error())
                i += 1
                continue
            if schema is None and self._format != "json":
                # unwritable in a columnar file: reported, without cutting the set
                self._skip(columns, k, report, _schemaless_error())
                i += 1
                continue
            if i in time_errors:
                self._skip(columns, k, report, time_errors[i])
                i += 1
                continue
            record_time = 0 if times is None else times[i] or 0
            if self._count == 0:
                self._open(schema, record_time)
                decision = _SAME
            else:
                decision = self._decide(schema)
                if decision == _ROTATE or (
                    times is not None and record_time - self._first_time >= interval
                ):
                    self.write()
                    continue
            # the run of records that stay in this set with the same decision
            end = min(n, i + flush_size - self._count)
            j = i + 1
            while j < end:
                kj = indices[j]
                if values[kj] is None or (schemas[kj] is not schema and schemas[kj] != schema):
                    break
                if times is not None:
                    t = times[j]
                    if t is None or t - self._first_time >= interval:
                        break
                j += 1
            self._add_run(columns, indices[i:j], schema, decision, report)
            if self._count >= flush_size:
                self.write()
            i = j

    def _record_times(
        self, columns: BatchColumns, indices: Sequence[int], errors: dict[int, DataError]
    ) -> list[int | None]:
        """Each record's time for rotate.interval.ms; None (and its error in ``errors``, by
        position) for a record it cannot be read from."""
        values, stamps = columns.values, columns.timestamps
        extract = self._times.extract
        try:
            return list(extract([values[k] for k in indices], [stamps[k] for k in indices]))
        except DataError:
            pass
        out: list[int | None] = []
        for pos, k in enumerate(indices):
            if values[k] is None:
                out.append(None)  # a tombstone: handled as one before its time is needed
                continue
            try:
                out.append(extract([values[k]], [stamps[k]])[0])
            except DataError as exc:
                errors[pos] = exc
                out.append(None)
        return out

    def _directories(
        self, columns: BatchColumns, run: Sequence[int], run_values: list[Any], report: Report
    ) -> str | Sequence[str | None]:
        """The partitioner's directory for the run (one, or one per record); a record it
        cannot place is reported and gets None."""
        stamps = [columns.timestamps[k] for k in run]
        encode = self._partitioner.encode
        try:
            return encode(self.tp.partition, run_values, stamps)
        except DataError:
            pass
        out: list[str | None] = []
        for pos, k in enumerate(run):
            try:
                placed = encode(self.tp.partition, [run_values[pos]], [stamps[pos]])
                out.append(placed if isinstance(placed, str) else placed[0])
            except DataError as exc:
                report(k, exc)
                out.append(None)
        return out

    def _null_error(self) -> DataError | None:
        if self._config.ignore_null_values:
            return None
        return DataError("null value (tombstone); set behavior.on.null.values=ignore")

    def _skip(self, columns: BatchColumns, k: int, report: Report, error: DataError | None) -> None:
        """A record that is not written (reported when ``error``) but counts in the set."""
        if error is not None:
            report(k, error)
        offset = columns.offsets[k]
        if self._count == 0:
            self.committable = offset + 1
        else:
            self._last = offset
            self._count += 1

    def _open(self, schema: Schema | None, first_time: int) -> None:
        self._schema = schema
        self._arrow_schema = None
        self._first_time = first_time
        self._opened = time.monotonic()

    def _decide(self, schema: Schema | None) -> int:
        current = self._schema
        if schema is current or schema == current:
            return _SAME
        mode = self._config.compatibility
        if (
            mode == "NONE"
            or schema is None
            or current is None
            or schema.version is None
            or current.version is None
            or schema.version == current.version
        ):
            return _ROTATE
        newer = schema.version > current.version
        if mode == "FORWARD":
            return _PROJECT if newer else _ROTATE
        return _ROTATE if newer else _PROJECT

    def _add_run(
        self,
        columns: BatchColumns,
        run: Sequence[int],
        schema: Schema | None,
        decision: int,
        report: Report,
    ) -> None:
        values, offsets = columns.values, columns.offsets
        run_values = [values[k] for k in run]
        dirs = self._directories(columns, run, run_values, report)
        if isinstance(dirs, str):
            groups: dict[str, list[int]] = {dirs: list(range(len(run)))}
        else:
            groups = {}
            for pos, d in enumerate(dirs):
                if d is not None:
                    groups.setdefault(d, []).append(pos)
        for directory, positions in groups.items():
            if len(positions) == len(run):
                kept_values, kept = run_values, list(run)
            else:
                kept_values = [run_values[p] for p in positions]
                kept = [run[p] for p in positions]
            chunk, kept = self._chunk(kept_values, kept, schema, decision, report)
            if not kept:
                continue
            open_file = self._files.get(directory)
            if open_file is None:
                open_file = self._files[directory] = _OpenFile(offsets[kept[0]])
            open_file.chunks.append(chunk)
            open_file.rows += len(kept)
        self._count += len(run)
        self._last = offsets[run[-1]]

    def _chunk(
        self,
        values: list[Any],
        indices: list[int],
        schema: Schema | None,
        decision: int,
        report: Report,
    ) -> tuple[Any, list[int]]:
        """The values as a chunk of this format, and the indices of those in it; the others
        were reported."""
        if self._format == "json":
            return values, indices
        try:
            builder = self._builders.get(schema)
        except DataError as exc:
            for k in indices:
                report(k, exc)
            return None, []
        try:
            batch = builder.build(values)
        except Exception:  # a value does not convert: find which, report them, keep the rest
            good, bad = builder.split_failing(values)
            for pos, error in bad:
                report(indices[pos], error)
            values = [values[p] for p in good]
            indices = [indices[p] for p in good]
            if not indices:
                return None, []
            batch = builder.build(values)
        if decision == _PROJECT:
            assert self._schema is not None
            if self._arrow_schema is None:
                self._arrow_schema = self._builders.get(self._schema).schema
            try:
                batch = project(batch, self._arrow_schema, self._schema)
            except (DataError, pa.ArrowException) as exc:
                for k in indices:
                    report(k, exc)
                return None, []
        elif self._arrow_schema is None:
            self._arrow_schema = batch.schema
        return batch, indices

    # -- writing -------------------------------------------------------------------------------
    def due(self, now: float) -> bool:
        """True when ``rotate.schedule.interval.ms`` has passed since the set opened."""
        schedule = self._config.rotate_schedule_ms
        return schedule > 0 and self._count > 0 and (now - self._opened) * 1000 >= schedule

    def write(self) -> None:
        """Write the open set's files, each as one complete object; then its records are
        committable. Raises (the set stays open) when storage fails."""
        if self._count == 0:
            return
        assert self._last is not None
        set_end = self._last + 1
        files = sorted(self._files.items())
        marks = (set_end, len(files))
        for directory, open_file in files:
            name = object_name(self.tp.topic, self.tp.partition, open_file.start, self._ext)
            self._store.write(f"{self._base}/{directory}/{name}", self._encode(open_file, marks))
        self.committable = set_end
        self._reset()

    def _encode(self, open_file: _OpenFile, marks: tuple[int, int]) -> Any:
        if self._format == "json":
            values: list[Any] = []
            for chunk in open_file.chunks:
                values.extend(chunk)
            return encode_json_lines(values)
        assert self._arrow_schema is not None
        if self._format == "parquet":
            return encode_parquet(
                open_file.chunks, self._arrow_schema, self._config.parquet_codec, marks
            )
        assert self._schema is not None
        return encode_avro(open_file.chunks, avro_schema(self._schema), marks)

    def discard(self) -> None:
        """Drop the open set (the partition was revoked, or the task stops): its records were
        not committed, so whoever owns the partition next writes them again."""
        self._reset()
