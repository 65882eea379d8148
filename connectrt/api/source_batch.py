"""SourceRecordBatch: what a source task may return from ``poll()`` instead of a list of records.

Kafka Connect's ``poll()`` returns a list of ``SourceRecord`` s. A task whose batch is one run of
records from one source partition to one topic, keys null, one value schema, no headers and no
explicit Kafka partition (a file's lines, a table's rows as values, pre-serialized payloads) can
return a :class:`SourceRecordBatch` instead: the same records given as columns (``values`` and
``source_offsets``, one item per record) and what they share, so no ``SourceRecord`` is built per
record. The runtime then converts the values in one call where the converter has a batch path,
produces them without looking at a record, and notes the source offset of the last record it
handled.

The batch also behaves as the read-only list of records it stands for (``len``, iteration,
indexing, slices, ``list(batch)``): the first time a record is read, every record is built from
the columns and kept (``batch[i]`` is the same object every time). Once records are built the
runtime reads them rather than the columns, so a record changed after it was read is produced as
changed. The runtime builds them itself where it needs records: a transformation chain, a task
that overrides ``commit_record``, the first batch to a topic, a value that fails to convert.

Built on the task's thread by ``poll()`` and read by the runtime on that same thread; not shared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from connectrt.api.records import SourceRecord

if TYPE_CHECKING:
    from connectrt.data import Schema

__all__ = ["SourceRecordBatch"]

_new = object.__new__


class SourceRecordBatch(Sequence[SourceRecord]):
    """The records of one ``poll()`` as columns (see the module docstring).

    ``SourceRecordBatch(source_partition, source_offsets, topic, values, value_schema,
    timestamp)`` stands for ``[SourceRecord(source_partition, source_offsets[i], topic, None,
    None, None, value_schema, values[i], timestamp) for i in range(len(values))]``.
    ``source_offsets`` has one offset map per value (it may be any sequence, e.g. one computing
    each map when indexed: the runtime reads only the last handled record's); ``values`` is
    copied into a list unless it is a list or tuple already.
    """

    __slots__ = (
        "_records",
        "source_offsets",
        "source_partition",
        "timestamp",
        "topic",
        "value_schema",
        "values",
    )

    def __init__(
        self,
        source_partition: Mapping[str, Any] | None,
        source_offsets: Sequence[Mapping[str, Any] | None],
        topic: str,
        values: Sequence[Any],
        value_schema: Schema | None = None,
        timestamp: int | None = None,
    ) -> None:
        if type(values) is not list and type(values) is not tuple:
            values = list(values)
        if len(source_offsets) != len(values):
            raise ValueError(
                f"SourceRecordBatch: {len(source_offsets)} source offsets for {len(values)} values"
            )
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"SourceRecordBatch: topic must be a non-empty string: {topic!r}")
        self.source_partition = source_partition
        self.source_offsets = source_offsets
        self.topic = topic
        self.values: list[Any] | tuple[Any, ...] = values
        self.value_schema = value_schema
        self.timestamp = timestamp
        self._records: list[SourceRecord] | None = None

    @property
    def records_built(self) -> bool:
        """Whether the records were built (read): from then on they, not the columns, count."""
        return self._records is not None

    def records(self) -> list[SourceRecord]:
        """The records, built from the columns on first use (slot by slot) and kept."""
        records = self._records
        if records is None:
            part, topic, schema, ts = (
                self.source_partition,
                self.topic,
                self.value_schema,
                self.timestamp,
            )
            records = []
            append = records.append
            for offset, value in zip(self.source_offsets, self.values, strict=True):
                r = _new(SourceRecord)
                r.source_partition = part
                r.source_offset = offset
                r.topic = topic
                r.kafka_partition = None
                r.key_schema = None
                r.key = None
                r.value_schema = schema
                r.value = value
                r.timestamp = ts
                r.headers = None
                append(r)
            self._records = records
        return records

    def __len__(self) -> int:
        return len(self.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __iter__(self) -> Iterator[SourceRecord]:
        return iter(self.records())

    @overload
    def __getitem__(self, index: int) -> SourceRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[SourceRecord]: ...

    def __getitem__(self, index: int | slice) -> SourceRecord | list[SourceRecord]:
        return self.records()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceRecordBatch):
            return self.records() == other.records()
        if isinstance(other, list):
            return self.records() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable records, like a list

    def __repr__(self) -> str:
        return (
            f"SourceRecordBatch(topic={self.topic!r}, records={len(self.values)}, "
            f"source_partition={self.source_partition!r})"
        )
