# Why one module over 450 lines: SinkRecordBatch is one class that must behave as a whole list
# (every list method) and a table of columns at once, over one lazily built record cache made
# by one of two builders (the C extension's lazy filler, or the Python loop beside it).
"""SinkRecordBatch: what ``SinkTask.put()`` receives, a list of records that is also a table.

Kafka Connect hands ``put()`` a collection of ``SinkRecord`` s. The runtime here hands it a
:class:`SinkRecordBatch`, which behaves as that list (``len``, iteration, indexing, negative
indices, slices, ``in``, ``reversed``, ``index``, ``count``, equality with a list of the same
records, and the list's mutating methods) and, beside it, offers the batch as columns: one
tuple per record field (``batch.values``, ``batch.keys``, ``batch.offsets``, ...), built
without a ``SinkRecord`` per record.

Records are built lazily, the first time an index is read, and kept: ``batch[i]`` is the same
object every time, so a task that changes a record, keeps it past ``put()`` and reads it again
sees its change. The columns always agree with the records: once a record has been taken out of
the batch (and so may have been changed), a column is read from the records as they are now.
A column read before any record was taken is built once and cached; read a column once per
``put`` rather than once per record.

A list mutation (``append``, ``sort``, ``del batch[i]``, ...) turns the batch into a plain list
of records: every record is built, and the raw bytes columns and :meth:`next_offsets` no longer
reflect what was consumed (``raw_keys``/``raw_values`` become None).

With the optional C extension (:mod:`connectrt.speedups`), iterating a batch makes its records in
one C call and leaves their key, offsets, timestamp, timestamp type and headers unset where the
batch has not made those columns yet: the first record that reads one makes the column for the
whole batch, and each record keeps a reference to the batch's columns (and so to its consumed
messages) until every one of those fields of it was read. The records are ``SinkRecord`` s in
every respect (equality, copies, pickling, ``dataclasses``); only a read of those fields costs a
little more (a descriptor of the extension instead of CPython's slot descriptor).

A batch is not a ``list`` (``isinstance(batch, list)`` is False); ``list(batch)`` makes one.
Used on the task's thread only, like everything a task is given.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

from connectrt.api.records import (
    SINK_FILLER,
    SINK_SLOTS,
    Header,
    SinkRecord,
    TimestampType,
    TopicPartition,
)

if TYPE_CHECKING:
    from connectrt.data import Schema

__all__ = ["SinkRecordBatch"]

ColumnSource = Sequence[Any] | Callable[[], Sequence[Any]]
"""A column given to :meth:`SinkRecordBatch.from_columns`: a sequence with one item per record,
or a function without arguments that returns one (called the first time the column is needed).
"""

# The columns, in the order SinkRecord's constructor takes them, with the record attribute
# each one mirrors.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("topics", "topic"),
    ("partitions", "kafka_partition"),
    ("key_schemas", "key_schema"),
    ("keys", "key"),
    ("value_schemas", "value_schema"),
    ("values", "value"),
    ("offsets", "kafka_offset"),
    ("timestamps", "timestamp"),
    ("timestamp_types", "timestamp_type"),
    ("headers", "headers"),
    ("original_topics", "original_topic"),
    ("original_partitions", "original_kafka_partition"),
    ("original_offsets", "original_kafka_offset"),
)
_ATTRIBUTE = dict(_FIELDS)
_COLUMN = {attribute: name for name, attribute in _FIELDS}
_ORIGINAL = {
    "original_topics": "topics",
    "original_partitions": "partitions",
    "original_offsets": "offsets",
}
_NO_TIMESTAMP = TimestampType.NO_TIMESTAMP_TYPE
_new = object.__new__


@functools.lru_cache(maxsize=16)
def _repeated(value: TimestampType | None, size: int) -> tuple[Any, ...]:
    """``(value,) * size``, kept for the next batch of that size (batches come in a few sizes;
    a fresh tuple of 500 costs about 1 us to make and free, per column and batch)."""
    return (value,) * size


def _make_records_py(columns: tuple[tuple[Any, ...], ...]) -> list[SinkRecord]:
    """A ``SinkRecord`` per row of the columns (in ``_FIELDS`` order), slot by slot: about a
    third cheaper than calling the constructor. The pure-Python form of what the C extension
    does (:data:`_make_records`). Hot path: one loop, no calls but the append."""
    records: list[SinkRecord] = []
    append = records.append
    for (
        topic,
        part,
        ks,
        key,
        vs,
        value,
        offset,
        ts,
        ts_type,
        headers,
        o_topic,
        o_part,
        o_offset,
    ) in zip(*columns, strict=True):
        r = _new(SinkRecord)
        r.topic = topic
        r.kafka_partition = part
        r.key_schema = ks
        r.key = key
        r.value_schema = vs
        r.value = value
        r.kafka_offset = offset
        r.timestamp = ts
        r.timestamp_type = ts_type
        r.headers = headers
        r.original_topic = o_topic
        r.original_kafka_partition = o_part
        r.original_kafka_offset = o_offset
        append(r)
    return records


_make_records: Callable[[tuple[tuple[Any, ...], ...]], list[SinkRecord]] = (
    _make_records_py if SINK_FILLER is None else SINK_FILLER
)
"""Records from columns (a tuple of one tuple per ``_FIELDS`` entry, in that order): the C
extension's filler where it is in use (:mod:`connectrt.speedups`; one C call per batch, the same
objects as the Python loop makes: no ``__init__``, the 13 slots stored), else the Python loop."""
assert tuple(attribute for _, attribute in _FIELDS) == SINK_SLOTS


_make_one: Callable[..., SinkRecord] = SinkRecord if SINK_FILLER is None else SINK_FILLER.make
"""``SinkRecord(...)`` of all 13 fields (the C extension's ``make`` where in use)."""


def _load_column(columns: dict[str, Any], size: int, name: str) -> tuple[Any, ...]:
    """The column ``name`` (a ``_FIELDS`` name) of a batch's ``columns``, thunks called once
    and the result kept in ``columns``."""
    name = _ORIGINAL.get(name, name)
    column = columns[name]
    if type(column) is not tuple:
        column = tuple(column() if callable(column) else column)
        if len(column) != size:
            raise ValueError(f"column {name} has {len(column)} items for a batch of {size} records")
        columns[name] = column
    return column


_RECORD_COLUMNS: tuple[str, ...] = tuple(_ORIGINAL.get(name, name) for name, _ in _FIELDS)
"""Per record field, in ``_FIELDS`` order, the batch column it is read from (an original
coordinate from its column: no transformation ran on a batch of columns)."""


def _lazy_records(columns: dict[str, Any], size: int) -> list[SinkRecord]:
    """The C extension's records of a batch: the columns of ``LAZY_SINK_SLOTS`` not made yet
    left to be loaded by the first record that reads one (see
    :func:`connectrt.api.records._install_lazy_slots`), the other ones made now; both through
    ``load``, which keeps what it made in ``columns``."""

    def load(attribute: str) -> tuple[Any, ...]:
        return _load_column(columns, size, _COLUMN[attribute])

    records: list[SinkRecord] = SINK_FILLER.fill_lazy(
        size, tuple(map(columns.__getitem__, _RECORD_COLUMNS)), load
    )
    return records


class SinkRecordBatch(MutableSequence[SinkRecord]):
    """The records of one ``put()`` call, as a list and as columns (see the module docstring).

    ``SinkRecordBatch(records)`` makes a batch of existing records (like ``list(records)``);
    :meth:`from_columns` makes one from columns, building records only when asked;
    :meth:`of` gives column access to whatever sequence of records a task was handed.
    """

    __slots__ = ("_columns", "_n", "_next_offsets", "_raw_keys", "_raw_values", "_records")

    _columns: dict[str, Any] | None  # column mode: name -> tuple or thunk; None: list mode
    _records: list[Any] | None  # index -> SinkRecord, or None where not built yet

    def __init__(self, records: Iterable[SinkRecord] = ()) -> None:
        recs = list(records)
        self._records = recs
        self._columns = None
        self._n = len(recs)
        self._raw_keys: ColumnSource | None = None
        self._raw_values: ColumnSource | None = None
        self._next_offsets: Mapping[tuple[str, int], int] | None = None

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def of(cls, records: Iterable[SinkRecord]) -> SinkRecordBatch:
        """``records`` itself when it is a batch, else a batch of its records (for tasks that
        may also be called with a plain list, by tests for instance)."""
        if isinstance(records, SinkRecordBatch):
            return records
        return cls(records)

    @classmethod
    def from_columns(
        cls,
        size: int,
        *,
        topics: ColumnSource,
        partitions: ColumnSource,
        offsets: ColumnSource,
        values: ColumnSource,
        value_schemas: ColumnSource | None = None,
        keys: ColumnSource | None = None,
        key_schemas: ColumnSource | None = None,
        timestamps: ColumnSource | None = None,
        timestamp_types: ColumnSource | None = None,
        headers: ColumnSource | None = None,
        raw_keys: ColumnSource | None = None,
        raw_values: ColumnSource | None = None,
        next_offsets: Mapping[tuple[str, int], int] | None = None,
    ) -> SinkRecordBatch:
        """A batch of ``size`` records given as columns, each a sequence of ``size`` items or a
        function returning one when first needed. Missing columns are None for every record
        (``timestamp_types``: ``NO_TIMESTAMP_TYPE``). The original coordinates are the given
        ones (no transformation ran). ``next_offsets``, when given (keyed by ``TopicPartition``
        or ``(topic, partition)``), is what :meth:`next_offsets` returns; it must match the
        columns.
        """
        batch = cls.__new__(cls)
        nothing = _repeated(None, size)
        batch._columns = {
            "topics": topics,
            "partitions": partitions,
            "key_schemas": nothing if key_schemas is None else key_schemas,
            "keys": nothing if keys is None else keys,
            "value_schemas": nothing if value_schemas is None else value_schemas,
            "values": values,
            "offsets": offsets,
            "timestamps": nothing if timestamps is None else timestamps,
            "timestamp_types": (
                _repeated(_NO_TIMESTAMP, size) if timestamp_types is None else timestamp_types
            ),
            "headers": nothing if headers is None else headers,
        }
        batch._records = None
        batch._n = size
        batch._raw_keys = raw_keys
        batch._raw_values = raw_values
        batch._next_offsets = next_offsets
        return batch

    # -- columns --------------------------------------------------------------------------------
    def _base(self, name: str) -> tuple[Any, ...]:
        """A column as given (thunks called once), ignoring records taken out."""
        columns = self._columns
        assert columns is not None
        return _load_column(columns, self._n, name)

    def _column(self, name: str) -> tuple[Any, ...]:
        records = self._records
        if self._columns is None:
            assert records is not None
            return tuple(map(operator.attrgetter(_ATTRIBUTE[name]), records))
        column = self._base(name)
        if records is None:
            return column
        attribute = _ATTRIBUTE[name]
        return tuple(
            value if record is None else getattr(record, attribute)
            for record, value in zip(records, column, strict=True)
        )

    @property
    def topics(self) -> tuple[str, ...]:
        """Each record's ``topic``."""
        return self._column("topics")

    @property
    def partitions(self) -> tuple[int | None, ...]:
        """Each record's ``kafka_partition``."""
        return self._column("partitions")

    @property
    def offsets(self) -> tuple[int, ...]:
        """Each record's ``kafka_offset``."""
        return self._column("offsets")

    @property
    def key_schemas(self) -> tuple[Schema | None, ...]:
        """Each record's ``key_schema``."""
        return self._column("key_schemas")

    @property
    def keys(self) -> tuple[Any, ...]:
        """Each record's ``key`` (converted by the key converter)."""
        return self._column("keys")

    @property
    def value_schemas(self) -> tuple[Schema | None, ...]:
        """Each record's ``value_schema``."""
        return self._column("value_schemas")

    @property
    def values(self) -> tuple[Any, ...]:
        """Each record's ``value`` (converted by the value converter)."""
        return self._column("values")

    @property
    def timestamps(self) -> tuple[int | None, ...]:
        """Each record's ``timestamp`` (epoch milliseconds, or None)."""
        return self._column("timestamps")

    @property
    def timestamp_types(self) -> tuple[TimestampType, ...]:
        """Each record's ``timestamp_type``."""
        return self._column("timestamp_types")

    @property
    def headers(self) -> tuple[list[Header] | None, ...]:
        """Each record's ``headers`` (None for a record without headers)."""
        return self._column("headers")

    @property
    def original_topics(self) -> tuple[str | None, ...]:
        """Each record's ``original_topic`` (the topic it was consumed from)."""
        return self._column("original_topics")

    @property
    def original_partitions(self) -> tuple[int | None, ...]:
        """Each record's ``original_kafka_partition``."""
        return self._column("original_partitions")

    @property
    def original_offsets(self) -> tuple[int | None, ...]:
        """Each record's ``original_kafka_offset``."""
        return self._column("original_offsets")

    def _raw(self, source: ColumnSource | None) -> tuple[bytes | None, ...] | None:
        if source is None or type(source) is tuple:
            return source
        column = tuple(source() if callable(source) else source)
        if len(column) != self._n:
            raise ValueError(f"raw column has {len(column)} items for {self._n} records")
        return column

    @property
    def raw_keys(self) -> tuple[bytes | None, ...] | None:
        """Each record's key as consumed, before the key converter; None when the batch does
        not have them (built from records, or changed by a list mutation)."""
        column = self._raw_keys = self._raw(self._raw_keys)
        return column

    @property
    def raw_values(self) -> tuple[bytes | None, ...] | None:
        """Each record's value as consumed, before the value converter; None when the batch
        does not have them (see :attr:`raw_keys`)."""
        column = self._raw_values = self._raw(self._raw_values)
        return column

    def next_offsets(self) -> dict[TopicPartition, int]:
        """Per partition the records were consumed from (their original coordinates), the
        offset after the batch's last record of it: the offset to commit once the batch is
        written. Computed from the columns unless the runtime handed it over."""
        if self._next_offsets is not None and self._records is None:
            return {TopicPartition(*tp): o for tp, o in self._next_offsets.items()}
        out: dict[TopicPartition, int] = {}
        for topic, partition, offset in zip(
            self.original_topics, self.original_partitions, self.original_offsets, strict=True
        ):
            tp = TopicPartition(topic, partition)  # type: ignore[arg-type]
            if offset is not None and offset + 1 > out.get(tp, -1):
                out[tp] = offset + 1
        return out

    # -- records --------------------------------------------------------------------------------
    def _build(self, index: int) -> SinkRecord:
        return _make_one(*[self._base(name)[index] for name, _ in _FIELDS])

    def _list(self) -> list[SinkRecord]:
        """Every record, built where not yet; the batch is in list mode afterwards."""
        records = self._records
        if self._columns is None:
            assert records is not None
            return records
        if records is None and SINK_FILLER is not None:
            records = _lazy_records(self._columns, self._n)
        elif records is None:
            records = _make_records(tuple([self._base(name) for name, _ in _FIELDS]))
        else:
            columns = [self._base(name) for name, _ in _FIELDS]
            for i, record in enumerate(records):
                if record is None:
                    records[i] = _make_one(*[column[i] for column in columns])
        self._records = records
        self._columns = None  # the records now say everything the columns said
        return records

    def _mutable(self) -> list[SinkRecord]:
        """The list to change in place: the batch no longer mirrors what was consumed."""
        records = self._list()
        self._raw_keys = self._raw_values = None
        self._next_offsets = None
        return records

    def __len__(self) -> int:
        if self._columns is None:
            assert self._records is not None
            return len(self._records)
        return self._n

    @overload
    def __getitem__(self, index: SupportsIndex) -> SinkRecord: ...

    @overload
    def __getitem__(self, index: slice) -> SinkRecordBatch: ...

    def __getitem__(self, index: SupportsIndex | slice) -> SinkRecord | SinkRecordBatch:
        if isinstance(index, slice):
            return SinkRecordBatch([self[i] for i in range(*index.indices(len(self)))])
        records = self._records
        if self._columns is None:
            assert records is not None
            return records[index]
        i = operator.index(index)
        if records is None:
            records = self._records = [None] * self._n
        record = records[i]  # IndexError as a list raises it
        if record is None:
            record = records[i] = self._build(i if i >= 0 else i + self._n)
        return record

    def __iter__(self) -> Iterator[SinkRecord]:
        return iter(self._list())

    def __reversed__(self) -> Iterator[SinkRecord]:
        return reversed(self._list())

    def __contains__(self, value: object) -> bool:
        return value in self._list()

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        records = self._list()
        return records.index(value, start) if stop is None else records.index(value, start, stop)

    def count(self, value: Any) -> int:
        return self._list().count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SinkRecordBatch):
            return self._list() == other._list()
        if isinstance(other, list):
            return self._list() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"SinkRecordBatch({self._list()!r})"

    def __add__(self, other: Iterable[SinkRecord]) -> list[SinkRecord]:
        if not isinstance(other, SinkRecordBatch | list):
            return NotImplemented
        return self._list() + list(other)

    def __radd__(self, other: Iterable[SinkRecord]) -> list[SinkRecord]:
        if not isinstance(other, list):
            return NotImplemented
        return other + self._list()

    def __mul__(self, times: SupportsIndex) -> list[SinkRecord]:
        return self._list() * times

    __rmul__ = __mul__

    def __reduce__(self) -> tuple[Any, ...]:
        return (SinkRecordBatch, (self._list(),))

    def copy(self) -> SinkRecordBatch:
        """A shallow copy (the same record objects), as ``list.copy``."""
        return SinkRecordBatch(self._list())

    # -- list mutations: the batch becomes a plain list of its records --------------------------
    @overload
    def __setitem__(self, index: SupportsIndex, value: SinkRecord) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[SinkRecord]) -> None: ...

    def __setitem__(self, index: Any, value: Any) -> None:
        self._mutable()[index] = value

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        del self._mutable()[index]

    def insert(self, index: int, value: SinkRecord) -> None:
        self._mutable().insert(index, value)

    def append(self, value: SinkRecord) -> None:
        self._mutable().append(value)

    def extend(self, values: Iterable[SinkRecord]) -> None:
        extra = list(values)  # before changing anything: values may be this batch
        self._mutable().extend(extra)

    def __iadd__(self, values: Iterable[SinkRecord]) -> SinkRecordBatch:
        self.extend(values)
        return self

    def pop(self, index: int = -1) -> SinkRecord:
        return self._mutable().pop(index)

    def remove(self, value: SinkRecord) -> None:
        self._mutable().remove(value)

    def clear(self) -> None:
        self._mutable().clear()

    def reverse(self) -> None:
        self._mutable().reverse()

    def sort(
        self, *, key: Callable[[SinkRecord], Any] | None = None, reverse: bool = False
    ) -> None:
        self._mutable().sort(key=key, reverse=reverse)  # type: ignore[arg-type]
