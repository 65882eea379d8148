"""Records exchanged between the runtime and tasks.

:class:`SourceRecord` is what a :class:`~connectrt.api.SourceTask` returns from ``poll()``;
:class:`SinkRecord` is what a :class:`~connectrt.api.SinkTask` receives in ``put()``. Both are
plain slotted objects: cheap to create on the hot path, mutable only by the runtime and
transformations (use :meth:`ConnectRecord.new_record` to derive a changed copy).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from connectrt.speedups import SPEEDUPS

if TYPE_CHECKING:
    from connectrt.data import Schema

__all__ = [
    "ConnectRecord",
    "Header",
    "SinkRecord",
    "SourceRecord",
    "TimestampType",
    "TopicPartition",
]


class TopicPartition(NamedTuple):
    """A Kafka topic partition (hashable, usable as a dict key)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Header(NamedTuple):
    """One record header: key, Connect value and (optional) schema."""

    key: str
    value: Any
    schema: Schema | None = None


class TimestampType(enum.StrEnum):
    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


@dataclass(slots=True, eq=True)
class ConnectRecord:
    """Fields shared by source and sink records.

    ``timestamp`` is epoch milliseconds or None. ``headers`` is a list of :class:`Header`
    (empty by default; the runtime passes None when a record has no headers to save work).
    """

    topic: str
    kafka_partition: int | None = None
    key_schema: Schema | None = None
    key: Any = None
    value_schema: Schema | None = None
    value: Any = None
    timestamp: int | None = None
    headers: list[Header] | None = None

    def header_list(self) -> list[Header]:
        """The headers, creating an empty list on first use."""
        if self.headers is None:
            self.headers = []
        return self.headers

    def new_record(self, **changes: Any) -> Self:
        """A copy with the given fields replaced (used by transformations); a sink record's
        ``original_*`` coordinates are kept unless given."""
        r = self._copy()
        for k, v in changes.items():
            setattr(r, k, v)
        return r

    def _with(
        self,
        topic: str,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
    ) -> Self:
        """A copy with topic, key and value replaced (the transforms' fast path)."""
        r = self._copy()
        r.topic = topic
        r.key_schema = key_schema
        r.key = key
        r.value_schema = value_schema
        r.value = value
        return r

    def _copy(self) -> Self:
        """A copy sharing everything but the headers list, slot by slot (cheaper than calling
        the constructor: the SMT chain copies every record of a batch). The slots a record type
        adds are copied by its :meth:`_copy_own`."""
        copy = _new(type(self))
        copy.topic = self.topic
        copy.kafka_partition = self.kafka_partition
        copy.key_schema = self.key_schema
        copy.key = self.key
        copy.value_schema = self.value_schema
        copy.value = self.value
        copy.timestamp = self.timestamp
        headers = self.headers
        copy.headers = None if headers is None else list(headers)
        self._copy_own(copy)
        return copy

    def _copy_own(self, copy: Self) -> None:
        """Copy into ``copy`` the slots this record type adds to :class:`ConnectRecord`'s."""
        raise NotImplementedError


@dataclass(slots=True, eq=True)
class SourceRecord(ConnectRecord):
    """A record produced by a source task.

    ``source_partition`` identifies where in the external system the record came from (e.g.
    ``{"filename": "a.txt"}``) and ``source_offset`` how far that partition has been read
    (e.g. ``{"position": 42}``). Both are flat maps of primitives; the runtime stores the latest
    acknowledged offset per source partition. Keep reusing the same ``source_partition`` object
    for one partition: the runtime caches its encoded key by identity.

    Positional order follows Kafka Connect:
    ``SourceRecord(source_partition, source_offset, topic, kafka_partition, key_schema, key,
    value_schema, value, timestamp, headers)``.
    """

    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None

    def __init__(
        self,
        source_partition: Mapping[str, Any] | None,
        source_offset: Mapping[str, Any] | None,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: Any = None,
        value_schema: Schema | None = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: list[Header] | None = None,
    ) -> None:
        self.source_partition = source_partition
        self.source_offset = source_offset
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self.headers = headers

    def _copy_own(self, copy: SourceRecord) -> None:
        copy.source_partition = self.source_partition
        copy.source_offset = self.source_offset


class _LazyRow(ConnectRecord):
    """Two slots of a sink record that are not fields: where a record built by the C extension
    finds the columns of its batch and its row in them until every field was read (see
    :func:`_install_lazy_slots`). Unset (and unused) in a record built any other way."""

    __slots__ = ("_lazy_columns", "_lazy_row")

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """What pickling and ``copy`` keep: the fields (the default state of a slotted object,
        without the two slots above)."""
        state: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            try:
                state[name] = getattr(self, name)
            except AttributeError:  # unset, as object.__getstate__ leaves it out
                pass
        return None, state


@dataclass(slots=True, eq=True)
class SinkRecord(_LazyRow):
    """A record delivered to a sink task, with its Kafka coordinates.

    ``kafka_offset`` is the record's offset in ``topic``/``kafka_partition``. ``original_*``
    keep the coordinates as consumed, before transformations changed them (KIP-793).
    """

    kafka_offset: int = -1
    timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        kafka_offset: int,
        timestamp: int | None = None,
        timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE,
        headers: list[Header] | None = None,
        original_topic: str | None = None,
        original_kafka_partition: int | None = None,
        original_kafka_offset: int | None = None,
    ) -> None:
        if original_topic is None:
            original_topic = topic
        if original_kafka_partition is None:
            original_kafka_partition = kafka_partition
        if original_kafka_offset is None:
            original_kafka_offset = kafka_offset
        if _SINK_STORE is not None:  # the C extension: the 13 stores in one call
            _SINK_STORE(
                self,
                topic,
                kafka_partition,
                key_schema,
                key,
                value_schema,
                value,
                kafka_offset,
                timestamp,
                timestamp_type,
                headers,
                original_topic,
                original_kafka_partition,
                original_kafka_offset,
            )
            return
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.kafka_offset = kafka_offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.headers = headers
        self.original_topic = original_topic
        self.original_kafka_partition = original_kafka_partition
        self.original_kafka_offset = original_kafka_offset

    def _copy_own(self, copy: SinkRecord) -> None:
        copy.kafka_offset = self.kafka_offset
        copy.timestamp_type = self.timestamp_type
        copy.original_topic = self.original_topic
        copy.original_kafka_partition = self.original_kafka_partition
        copy.original_kafka_offset = self.original_kafka_offset


_new = object.__new__


SINK_SLOTS: tuple[str, ...] = tuple(inspect.signature(SinkRecord.__init__).parameters)[1:]
"""A sink record's fields in the order of its constructor (and of a batch's columns)."""
assert sorted(SINK_SLOTS) == sorted(SinkRecord.__dataclass_fields__)


LAZY_SINK_SLOTS = (
    "key",
    "kafka_offset",
    "timestamp",
    "timestamp_type",
    "headers",
    "original_kafka_offset",
)
"""The fields a batch's records may leave to be loaded on first read (with the C extension):
those whose columns cost the most to make from the consumed messages. The others keep CPython's
own slot descriptors, which its specializing interpreter reads and writes fastest."""


def _install_lazy_slots() -> Any:
    """The C extension's filler of sink records from columns, with its descriptors installed on
    :class:`SinkRecord` in place of the slot descriptors of :data:`LAZY_SINK_SLOTS`; None
    without the extension.

    Such a descriptor reads and writes its slot as the slot's own descriptor does, except that
    reading a slot a batch left unset loads the value from that batch's column (made once per
    batch, on the first read of any of its records' slot): a batch's records are built with the
    columns the task has not read yet left out. The extension also frees the records
    (``own_dealloc``: every slot cleared, as CPython's own deallocation of a slotted instance
    does, without its walk over the class hierarchy). Done once, at import, before any record
    exists.
    """
    if SPEEDUPS is None:
        return None
    filler = SPEEDUPS.SlotFiller(SinkRecord, SINK_SLOTS, ("_lazy_columns", "_lazy_row"))
    for name, descriptor in zip(LAZY_SINK_SLOTS, filler.descriptors(LAZY_SINK_SLOTS), strict=True):
        setattr(SinkRecord, name, descriptor)
    filler.own_dealloc(
        tuple(name for cls in SinkRecord.__mro__ for name in vars(cls).get("__slots__", ()))
    )
    headers = SINK_SLOTS.index("headers")

    def _copy(self: SinkRecord) -> SinkRecord:
        """ConnectRecord._copy, slot by slot in C (lazy fields loaded first), for SinkRecord
        itself (a subclass may have slots of its own: the Python copy)."""
        if type(self) is SinkRecord:
            copy: SinkRecord = filler.copy(self, headers)
            return copy
        return ConnectRecord._copy(self)

    SinkRecord._copy = _copy  # type: ignore[method-assign,assignment]
    return filler


SINK_FILLER: Any = _install_lazy_slots()
"""The C extension's ``SlotFiller`` of :class:`SinkRecord` (None: not in use)."""
_SINK_STORE: Any = None if SINK_FILLER is None else SINK_FILLER.store


SOURCE_SLOTS: tuple[str, ...] = tuple(inspect.signature(SourceRecord.__init__).parameters)[1:]
"""A source record's fields in the order of its constructor."""
assert sorted(SOURCE_SLOTS) == sorted(SourceRecord.__dataclass_fields__)

SOURCE_FILLER: Any = None if SPEEDUPS is None else SPEEDUPS.SlotFiller(SourceRecord, SOURCE_SLOTS)
"""The C extension's ``SlotFiller`` of :class:`SourceRecord` (None: not in use): its
``plain_values`` is the source sender's one pass over a polled list
(:meth:`~connectrt.runtime.source.sender.SourceBatchSender.send`)."""


def _install_source_constructor() -> None:
    """``SourceRecord(...)`` built by the C extension (``own_constructor``): the call goes
    straight to C, which stores the arguments into a new instance's slots, instead of
    CPython's generic path for a class (an argument tuple and a keyword dict per call,
    ``object.__new__``, then ``__init__`` as a Python frame): a task building a record per
    value pays about a third of it. Same results as ``__init__``, which stores its parameters
    and nothing else (checked here); a subclass, or a call Python would refuse (a missing,
    unknown or repeated argument), takes the generic path, so its errors are Python's own.
    The extension also frees the records (``own_dealloc``, as for :class:`SinkRecord`) and
    keeps a batch's worth of freed ones, which the constructor fills before asking the
    allocator: a task's polled list is freed once produced, just before it builds the next.
    Done once, at import."""
    if SOURCE_FILLER is None:
        return
    params = list(inspect.signature(SourceRecord.__init__).parameters.values())[1:]
    required = sum(p.default is inspect.Parameter.empty for p in params)
    assert all(p.default is inspect.Parameter.empty for p in params[:required])
    assert all(p.default is None for p in params[required:])
    SOURCE_FILLER.own_constructor(required)
    SOURCE_FILLER.own_dealloc(
        tuple(name for cls in SourceRecord.__mro__ for name in vars(cls).get("__slots__", ()))
    )


_install_source_constructor()
