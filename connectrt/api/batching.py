"""A sink task that writes whole batches: the author implements ``write(batch)`` only.

:class:`BatchingSinkTask` buffers what the runtime hands to ``put()`` and calls
:meth:`BatchingSinkTask.write` with everything buffered since the last write:

* when ``batch_size`` records are buffered (checked after each ``put``);
* when the oldest buffered record has waited ``batch_max_wait_ms`` (also checked in ``put``,
  which the runtime calls only when records arrive: an idle partial batch waits for the next
  offset commit);
* at every ``flush()``/``pre_commit()``, i.e. before the runtime commits consumer offsets
  (every ``offset.flush.interval.ms``, on ``context.request_commit()``, before partitions are
  revoked and at a graceful stop).

Offsets: ``pre_commit`` returns, per partition, the runtime's offset only when no record of
that partition is still waiting to be written, and otherwise the offset of the first one that
is. Offsets are tracked by a record's ``original_*`` coordinates, so transformations that
reroute records do not confuse them. A record is therefore committed only after a ``write``
that contained it returned: a crash, a failed write or a revoked partition can cause
duplicates (records written but not yet committed are delivered again), never a loss.

Errors from ``write``:

* :class:`~connectrt.errors.RetriableError` raised from a write that ``put`` started makes
  ``put`` raise it with the batch's own records taken back out of the buffer, so the runtime
  delivers the same records again (after ``context.timeout(ms)``, if set) and the next
  ``write`` retries the whole buffer;
* any error from a write that ``flush``/``pre_commit`` started keeps the buffer; the runtime
  commits nothing, rewinds the partitions to their committed offsets and delivers those records
  again. A delivery that starts at or below an offset still buffered replaces the buffered
  records of that partition from there on, so a rewind (the runtime's, or the task's own
  ``context.offset``) never writes a record twice from the buffer;
* any other error from a write in ``put`` fails the task, as ``put`` raising does.

Lifecycle and threading are :class:`~connectrt.api.SinkTask`'s: every method, ``write``
included, runs on the task's thread, so neither the buffer nor ``write`` needs locking.
``close(partitions)`` drops the buffered records of those partitions (the runtime has just
committed what it could; anything left is delivered again to whoever owns them next).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Mapping, Sequence
from time import monotonic as _monotonic

from connectrt.api.records import SinkRecord, TopicPartition
from connectrt.api.task import SinkTask, SinkTaskContext

__all__ = ["BatchingSinkTask"]


def _coordinates(record: SinkRecord) -> tuple[TopicPartition, int]:
    """Where the runtime consumed ``record``: its partition and offset before any SMT."""
    topic = record.original_topic if record.original_topic is not None else record.topic
    partition = record.original_kafka_partition
    if partition is None:
        partition = record.kafka_partition or 0
    offset = record.original_kafka_offset
    if offset is None:
        offset = record.kafka_offset
    return TopicPartition(topic, partition), offset


class BatchingSinkTask(SinkTask):
    """A :class:`~connectrt.api.SinkTask` whose author writes batches: implement :meth:`write`
    and ``start``; override ``stop`` and ``open`` as needed. ``initialize``, ``put``,
    ``flush``, ``pre_commit`` and ``close`` keep the buffer and the offsets right: an override
    of one of them must call ``super()``.

    The thresholds are instance attributes with class defaults: set them on the subclass, or in
    ``start`` from the task config.
    """

    batch_size: int = 500
    """Write as soon as at least this many records are buffered."""

    batch_max_wait_ms: int = 0
    """Also write when the oldest buffered record has waited this long; 0 turns it off."""

    request_commit_after_write: bool = False
    """After each write that ``put`` started, ask the runtime to commit offsets now instead of
    at the next ``offset.flush.interval.ms``: fewer duplicates after a crash, more commits."""

    _buffer: list[SinkRecord]
    _last_buffered: dict[TopicPartition, int]
    _oldest_at: float | None

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the runtime before ``start``; starts with an empty buffer."""
        super().initialize(context)
        self._buffer = []
        self._last_buffered = {}
        self._oldest_at = None

    @abc.abstractmethod
    def write(self, batch: list[SinkRecord]) -> None:
        """Durably write ``batch``: the records buffered since the last write, in the order
        they were put. When this returns, they count as written; raise instead if they are not.

        ``batch`` is a new list, the method's own to keep or change. Raise ``RetriableError``
        for a transient failure (call ``self.context.timeout(ms)`` first to set the wait before
        the records come again). Records that cannot be written at all can go to
        ``self.context.errant_record_reporter`` (when not None) instead of failing the batch.
        """

    @property
    def buffered(self) -> int:
        """How many records wait for the next write."""
        return len(self._buffer)

    # -- SinkTask -----------------------------------------------------------------------------
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Buffer ``records`` (the records of the batch: ``write`` gets a list of them);
        write the buffer when a threshold is reached."""
        if not records:
            return
        last = self._last_buffered
        rewound: dict[TopicPartition, int] = {}
        incoming: dict[TopicPartition, int] = {}
        for record in records:
            tp, offset = _coordinates(record)
            if offset <= last.get(tp, -1) and offset < rewound.get(tp, offset + 1):
                rewound[tp] = offset
            if offset > incoming.get(tp, -1):
                incoming[tp] = offset
        if rewound:
            self._drop(lambda tp, offset: offset >= rewound.get(tp, offset + 1))
        buffer = self._buffer
        mark = len(buffer)
        buffer.extend(records)
        last = self._last_buffered
        for tp, offset in incoming.items():
            if offset > last.get(tp, -1):
                last[tp] = offset
        now = _monotonic()
        if self._oldest_at is None:
            self._oldest_at = now
        due = len(buffer) >= self.batch_size or (
            self.batch_max_wait_ms > 0 and (now - self._oldest_at) * 1000 >= self.batch_max_wait_ms
        )
        if not due:
            return
        try:
            self._write_buffer()
        except BaseException:
            # put() did not take these records: the runtime delivers them again (or fails).
            self._drop(lambda tp, offset: False, keep=mark)
            raise
        if self.request_commit_after_write:
            self.context.request_commit()

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Write everything buffered."""
        self._write_buffer()

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Flush, then report for each partition only offsets whose records were written."""
        self.flush(offsets)
        return self.committable(offsets)

    def committable(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """``offsets`` capped, per partition, at the first record still waiting to be written."""
        first: dict[TopicPartition, int] = {}
        for record in self._buffer:
            tp, offset = _coordinates(record)
            if offset < first.get(tp, offset + 1):
                first[tp] = offset
        safe: dict[TopicPartition, int] = {}
        for key, offset in offsets.items():
            tp = TopicPartition(key[0], key[1])
            safe[tp] = min(offset, first[tp]) if tp in first else offset
        return safe

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Drop the buffered records of partitions this task no longer owns."""
        gone = {TopicPartition(tp[0], tp[1]) for tp in partitions}
        self._drop(lambda tp, offset: tp in gone)

    def stop(self) -> None:
        """Override to release resources; buffered records are not written here (a graceful
        stop has flushed them already, a failed task must not write them)."""

    # -- internals ---------------------------------------------------------------------------
    def _write_buffer(self) -> None:
        if not self._buffer:
            return
        self.write(list(self._buffer))
        self._buffer = []
        self._last_buffered = {}
        self._oldest_at = None

    def _drop(self, condition: Callable[[TopicPartition, int], bool], keep: int = -1) -> None:
        """Remove buffered records matching ``condition`` (or all after the first ``keep``)."""
        buffer = self._buffer[:keep] if keep >= 0 else self._buffer
        kept = [r for r in buffer if not condition(*_coordinates(r))]
        if len(kept) == len(self._buffer):
            return
        last: dict[TopicPartition, int] = {}
        for record in kept:
            tp, offset = _coordinates(record)
            if offset > last.get(tp, -1):
                last[tp] = offset
        self._buffer = kept
        self._last_buffered = last
        if not kept:
            self._oldest_at = None
