# Why one module over 450 lines: the hot produce loop and its per-record slow paths hand a
# batch to each other mid-way (at the record at fault) and share its offset bookkeeping.
"""Converting and producing one polled batch of a source task: the source side's hot path.

:class:`SourceBatchSender` belongs to one :class:`~connectrt.runtime.source.runner.SourceTaskRunner`
and runs on its thread only. For each batch (:meth:`SourceBatchSender.send`):

0. a :class:`~connectrt.api.SourceRecordBatch` (one source partition's values to one topic,
   as columns) is produced from its columns: the values converted in one call, then one
   C-level loop of ``produce`` over them (the C extension's ``produce_values``, else a
   ``map``), no Python code per record, the last handled
   record's source offset noted (:meth:`SourceBatchSender._send_columns`); when it cannot be
   (first batch to a topic, no batch conversion, a value that fails, ``commit_record``
   overridden) its records are built and take the list's paths; with the C extension, a list
   of records all exactly :class:`~connectrt.api.SourceRecord`, to one topic already used,
   with one timestamp (a pass-through value converter, no ``commit_record``) is produced the
   same way: one C pass over the list checks the records and takes their values
   (``SlotFiller.plain_values``, which also tells whether they share one source partition
   object and which records are not plain: a key, headers, an explicit partition, a value
   that is not bytes), then the same loop of ``produce`` over the plain ones, each other one
   sent the general way in its place (:meth:`SourceBatchSender._send_one`), so that a few
   such records leave the rest on the C loop (:meth:`SourceBatchSender._send_list`); headers
   the runtime adds to some records (a tracer's ``traceparent``: :data:`AddedHeaders`) go with
   them in that loop on either path; any other list takes the path below;
1. values are converted for the whole batch at once where that pays: a pass-through
   converter's bytes are taken as they are (one C-level type check for the batch); a converter
   with a batch path of its own (JsonConverter) converts a batch of one topic and one value
   schema with one ``Converter.from_connect_values`` call; otherwise each value is converted
   just before its record is produced;
2. each plain record (no key, headers or explicit partition, to a topic already used) is handed
   to ``Producer.produce`` bound once per batch, with positional arguments only (a keyword
   ``timestamp=`` costs 0.75 us against 0.45 us) and one delivery callback object for all
   (at-least-once: the commit interval's, by which acknowledgements are tracked,
   :mod:`~connectrt.runtime.source.ack_epochs`; the producer reports failed deliveries only, so
   no Python code runs per acknowledged record); any other record takes the general path
   (:meth:`SourceBatchSender._send_one`): key conversion, headers, partition, topic creation,
   the ``commit_record`` callback;
3. the source offsets of the records handled (produced or skipped) are noted once, after the
   loop: with one source partition in the batch, one dict store;
4. only with ``task.rate.limit.bytes.per.sec`` (:attr:`SourceBatchSender.count_bytes`), the
   bytes produced (key, value and headers, as converted) are summed: a C-level sum over the
   batch's converted values, the length of each value converted one by one, key and header
   bytes on the general path; :meth:`SourceBatchSender.take_sent_bytes` hands them over.

A value that fails in a batch conversion makes the batch convert value by value, so the error
policy (retries, tolerance, dead letter queue) applies to the one at fault. A full
producer queue is back-pressure: delivery reports are served until the record fits, or the
task stops (the records not produced are then not committed, and re-polled after a restart).
Failed deliveries are recorded by :meth:`SourceBatchSender.on_delivery_error` (the producer's
``on_delivery``) and raised by :meth:`SourceBatchSender.check_delivery` on the task's thread.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import repeat
from operator import length_hint
from typing import Any

from connectrt.api.converter import Converter, RawHeaders
from connectrt.api.records import SOURCE_FILLER, SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import SourceTask
from connectrt.runtime.clients.kafka import (
    KafkaError,
    KafkaException,
    KafkaMessage,
    KafkaProducer,
    request_producer_id,
)
from connectrt.runtime.config.topic_creation import TopicCreator
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.delivery import PendingOffsets
from connectrt.runtime.tasks.error_handling import ErrorHandler, Failure
from connectrt.runtime.tasks.rate_limit import header_bytes
from connectrt.runtime.tasks.runner import (
    TaskConverters,
    TaskFailure,
    TaskId,
    TaskStage,
    class_path,
)
from connectrt.runtime.tasks.topic_schemas import note_topic_schema
from connectrt.speedups import SPEEDUPS
from connectrt.storage.offset_codec import encode_key

log = logging.getLogger(__name__)

__all__ = ["PARTITION_UA", "RecordMetadata", "SourceBatchSender"]

PARTITION_UA = -1
"""librdkafka's ``RD_KAFKA_PARTITION_UA``: no partition given, the partitioner chooses (what
``produce`` does when its ``partition`` argument is left out)."""
_UNCONVERTED: Any = object()
"""Marks a value :meth:`SourceBatchSender._send_one` still has to convert."""
_BYTES_OR_NONE = frozenset((bytes, type(None)))
_PURGED = frozenset((KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT))
"""Delivery errors of records an ``abort_transaction()`` purged (nothing else purges)."""
_ROOM_POLL_S = 0.002
"""How long one wait for room in a full producer queue blocks in ``poll``. The producer reports
failed deliveries only (``delivery.report.only.error``), so no event ends the wait early when
the broker acknowledges a batch and room frees: a longer wait leaves the queue draining idle
(with 50 ms, the queue of a task's memory-budget share ran dry between waits)."""
_drain: Callable[[Any], object] = partial(deque, maxlen=0)
"""Runs an iterator to its end at C level, keeping nothing."""
_produce_values: Callable[..., tuple[int, BaseException | None]] | None = (
    None if SPEEDUPS is None else SPEEDUPS.produce_values
)
"""The C extension's loop over a column of values calling ``Producer.produce`` directly (one
argument tuple reused; about 50 ns a record less than ``map``), or None: :meth:`SourceBatchSender.
_produce_by_map`."""

AddedHeaders = dict[int, RawHeaders]
"""Headers the runtime adds to some records of a batch as it produces them, by their position in
the batch (ascending): ``(name, bytes)`` pairs appended to the record's own converted headers, as
they are (not through the header converter). A tracer's ``traceparent``: its W3C form is what
OpenTelemetry's propagators read, whatever the connector's header converter."""

ProduceArgs = tuple[int, Callable[[Any, KafkaMessage], object] | None, None, int, RawHeaders | None]
"""``produce``'s arguments after topic, value and key: partition, callback, on_delivery,
timestamp, headers."""


class RecordMetadata:
    """What Kafka acknowledged for a record (given to ``SourceTask.commit_record``)."""

    __slots__ = ("offset", "partition", "timestamp", "topic")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp


class SourceBatchSender:
    """Converts and produces a source task's polled batches (see the module docstring).

    Built by the task's runner once the task has started; used on the runner's thread only.
    ``stopping()`` tells whether the task is being stopped (checked while the producer's queue
    is full); ``on_topic(topic)`` is called once per topic, after ``topic_creator`` (None:
    topic creation off) made sure it exists.
    """

    def __init__(
        self,
        task_id: TaskId,
        task: SourceTask,
        *,
        converters: TaskConverters,
        errors: ErrorHandler,
        metrics: TaskMetrics,
        offsets: PendingOffsets,
        topic_creator: TopicCreator | None,
        on_topic: Callable[[str], None],
        stopping: Callable[[], bool],
    ) -> None:
        self.id = task_id
        self.task = task
        self.converters = converters
        self.errors = errors
        self.metrics = metrics
        self._offsets = offsets
        self._topic_creator = topic_creator
        self._on_topic = on_topic
        self._stopping = stopping
        self.topics: set[str] = set()
        """Topics produced to so far."""
        self._asked_id = 0
        """``id()`` of the producer that asked for its producer id before its first record
        (:func:`~connectrt.runtime.clients.kafka.request_producer_id`); not a reference, which
        would keep a producer the runner dropped (and its librdkafka threads) alive."""
        self.produced = 0
        """Records produced so far (not skipped; acknowledged or not), for the latency."""
        # Only tasks that override commit_record pay for per-record delivery callbacks.
        self.wants_commit_record = type(task).commit_record is not SourceTask.commit_record
        self.delivery_error: tuple[KafkaError, str] | None = None
        self._key_conv = converters.key.from_connect_data
        self._value_conv = converters.value.from_connect_data
        self._key_passthrough = converters.key.BYTES_PASSTHROUGH
        self._value_passthrough = converters.value.BYTES_PASSTHROUGH
        self._value_batches = (
            type(converters.value).from_connect_values is not Converter.from_connect_values
        )
        self._skipped_in_batch = 0  # records of the batch being sent that were skipped
        self.count_bytes = False  # sum the bytes produced (task.rate.limit.bytes.per.sec)
        self._sent_bytes = 0
        self._at: SourceRecord | None = None  # the record a slow path of the batch is at
        self._plain_values: Callable[[list[SourceRecord]], Any] | None = (
            None if SOURCE_FILLER is None else SOURCE_FILLER.plain_values
        )  # the C extension's one pass over a list (None: the per-record loop only)

    def send(
        self,
        polled: list[SourceRecord] | SourceRecordBatch,
        producer: KafkaProducer,
        added: AddedHeaders | None = None,
    ) -> None:
        """Convert and produce one polled batch (the hot path), then note its offsets;
        ``added``: headers for some of its records (:data:`AddedHeaders`; a tracer's), which
        every path below takes, those records sent one by one in their place.

        A :class:`SourceRecordBatch` whose records were not read goes from its columns
        (:meth:`_send_columns`) when it can. A list of records (or a batch's records, once
        built) all exactly :class:`SourceRecord`, to one topic already used, with one timestamp,
        goes from its values when the value converter passes bytes through and the task does
        not want ``commit_record`` (:meth:`_send_list`, with the C extension: one C pass over
        the list reads each record's slots by offset and takes the values, then the column
        path's C-level loop of ``produce``, the records that are not plain sent one by one in
        their place). Measured
        (``bench/profile_record_paths.py --side source --repeats 60``, two alternating runs
        each, the machine loaded): the list path over built records went from 732/749 ns a
        record (the per-record loop) to 566/558 ns, beside 572/559 ns for a
        :class:`SourceRecordBatch` and 554-570 ns for a raw ``produce`` loop; a task's list
        with the records built from 977/977 to 806/794 ns. Then (2026-11-30, the same
        profile with the at-least-once delivery callback a worker passes, load 0.5): with the
        C loop of ``produce`` and the one-partition check in the C pass, a task's list from
        about 510 to 443 ns beside 381 ns for the raw loop.

        Otherwise values are converted for the whole batch first (:meth:`_convert_values`);
        then each plain record (no key, headers or explicit partition, to a topic already used)
        is handed to a ``produce`` bound once per batch, with positional arguments only
        (:meth:`_send_plain`); any other record, and every record when a value failed to
        convert or the task wants ``commit_record``, goes through :meth:`_send_one`. The source
        offsets of the records handled (produced or skipped) are noted once, after the loop
        (:meth:`_note_offsets`). That loop is also the pure-Python equivalent of the list path
        (without the extension, or with ``CONNECTRT_PURE_PYTHON=1``).
        """
        if not polled:
            return
        records: list[SourceRecord]
        if isinstance(polled, SourceRecordBatch):
            if (
                not polled.records_built
                and not self.wants_commit_record
                and self._send_columns(polled, producer, added)
            ):
                return
            records = polled.records()  # built (read, or the columns could not go): lists' paths
        else:
            records = polled
        if (
            self._plain_values is not None
            and type(records) is list  # the runner's; any other sequence: the loop
            and self._value_passthrough
            and not self.wants_commit_record
            and self._send_list(records, producer, added)
        ):
            return
        values = self._convert_values(records)
        if values is not None and self.count_bytes:  # C-level; keys/headers: _send_one
            self._sent_bytes += sum(map(len, filter(None, values)))
        self._skipped_in_batch = 0
        self._at = None
        try:
            handled = self._send_loop(records, values, producer, added)
        except BaseException:
            # The task fails: the records before the one at fault still get their offsets
            # (stored by the final commit if they are acknowledged).
            if self._at is not None:
                self._note_handled(records, _index_of(records, self._at))
            raise
        self._note_handled(records, handled)

    def _send_list(
        self, records: list[SourceRecord], producer: KafkaProducer, added: AddedHeaders | None
    ) -> bool:
        """A polled list of records to one topic with one timestamp, from their values, as a
        batch from its columns (:meth:`_send_columns`): the C extension's one pass over the
        list gives the values (``SlotFiller.plain_values``: every record exactly a
        :class:`SourceRecord`, all to one topic with one timestamp), whether they share one
        source partition object, and the indices of the records that are not plain (a key,
        headers, an explicit partition, a value that is not bytes or None);
        :meth:`_produce_all` produces the plain ones by the C loop (with ``added`` headers, if
        any) and sends those one by one in their place (:meth:`_send_one`), the offsets of the
        records handled noted once (:meth:`_note_handled`).

        False, having produced nothing, when the list needs the per-record loop: a record of
        another class, topic or timestamp, an unset field, a first list to its topic (topic
        creation). The caller has checked that the value converter passes bytes through and
        that the task does not want ``commit_record``.
        """
        assert self._plain_values is not None
        plain = self._plain_values(records)
        if plain is None:
            return False
        topic, timestamp, values, one_partition, own = plain
        if topic not in self.topics:
            return False
        self._produce_all(
            producer,
            topic,
            values,
            timestamp,
            lambda: records,
            partial(self._note_handled, records, one_partition=one_partition),
            own,
            added,
        )
        return True

    def _note_handled(
        self, records: list[SourceRecord], handled: int, *, one_partition: bool = False
    ) -> None:
        """The first ``handled`` records of a list were handled (produced or skipped): their
        offsets pending (:meth:`_note_offsets`), the produced ones counted."""
        self._note_offsets(records, handled, one_partition=one_partition)
        self._offsets.pending_records += handled - self._skipped_in_batch
        self.produced += handled - self._skipped_in_batch

    def _send_columns(
        self, batch: SourceRecordBatch, producer: KafkaProducer, added: AddedHeaders | None
    ) -> bool:
        """A :class:`SourceRecordBatch` from its columns, without a record per value (the
        fastest path): the values converted in one call (bytes through a pass-through converter
        as they are), produced by :meth:`_produce_all`, the last handled record's source offset
        noted once.

        False, having produced nothing, when the batch needs the general path: the first batch
        to its topic (topic creation), a converter without a batch path, a value that fails to
        convert (the error policy applies per record there).
        """
        topic = batch.topic
        if topic not in self.topics or (added and _produce_values is None):
            return False  # (added headers without the C loop: the per-record loop adds them)
        values = batch.values
        if self._value_passthrough and set(map(type, values)) <= _BYTES_OR_NONE:
            vbs: list[Any] | tuple[Any, ...] = values
        elif self._value_batches:
            try:
                converted = self.converters.value.from_connect_values(
                    topic, batch.value_schema, values
                )
            except Exception:
                return False
            if converted is None:
                self._value_batches = False  # no batch path here: stop asking
                return False
            vbs = converted if type(converted) is list else list(converted)
        else:
            return False
        self._produce_all(
            producer,
            topic,
            vbs,
            batch.timestamp,
            batch.records,
            partial(self._note_batch_offsets, batch),
            (),
            added,
        )
        return True

    def _produce_all(
        self,
        producer: KafkaProducer,
        topic: str,
        vbs: list[Any] | tuple[Any, ...],
        timestamp: int | None,
        records: Callable[[], list[SourceRecord]],
        note: Callable[[int], None],
        own: list[int] | tuple[int, ...] = (),
        added: AddedHeaders | None = None,
    ) -> None:
        """The shared tail of :meth:`_send_list` and :meth:`_send_columns`: produce ``vbs``
        (values without keys or headers) to ``topic`` (with ``timestamp``, or None: the
        producer's time) by the C extension's loop (``produce_values``: ``Producer.produce``'s
        C function called with one reused argument tuple) or else one C-level ``map`` of
        ``produce`` (:meth:`_produce_by_map`), positional arguments only, no Python code per
        record (the hot path), then ``note`` how many records were handled (all unless the
        task was stopped while the producer's queue was full), which notes their offsets.
        Their bytes are counted C-level when :attr:`count_bytes`. The records at the indices
        ``own`` (in order; only with the C extension) are sent one by one in their place
        (:meth:`_send_one`: key, headers, partition, conversion under the error policy), the
        loop producing the values between them; the loop gives a plain record ``added``
        headers (:data:`AddedHeaders`) itself, without building records.

        A full queue is waited out (:meth:`_produce_when_room`) for the value at fault, then
        the loop goes on from the next one. A value ``produce`` refuses is skipped or fails the
        task (:meth:`_produce_failed`; ``records()`` gives the records, built on demand). When
        the task fails mid-way, the records before the one at fault are noted before the error
        goes on (they are stored by the final commit if acknowledged).
        """
        if self.count_bytes:
            self._sent_bytes += sum(map(len, filter(None, vbs)))
        self._skipped_in_batch = 0
        cb = self._offsets.delivery_callback  # at-least-once: the epoch's (see ack_epochs)
        # positionally: topic, value, key, partition, callback, on_delivery, timestamp
        head: tuple[Any, ...] = (topic, None)
        if timestamp is not None or cb is not None:
            head += (None, PARTITION_UA, cb)
            if timestamp is not None:
                head += (None, timestamp)
        retry: ProduceArgs = (PARTITION_UA, cb, None, timestamp or 0, None)  # 0: now
        if _produce_values is None:
            assert not own and not added, "records of their own need the C extension's loop"
            self._produce_by_map(producer, head, vbs, records, note, retry)
            return
        n = len(vbs)
        produce = producer.produce
        start = 0
        at = -1  # the index at fault, while it is handled
        if self.count_bytes and added:  # as the values: for the batch (own records: as sent)
            owned = set(own)
            self._sent_bytes += sum(header_bytes(h) for i, h in added.items() if i not in owned)
        try:
            for stop in (*own, n):
                while start < stop:
                    # hot path: the loop runs in C, Producer.produce called directly (with
                    # the added headers at their records)
                    at, error = _produce_values(produce, head, vbs, start, stop, added)
                    if error is None:
                        break
                    if not isinstance(error, Exception):  # as the per-record loop: no note
                        at = -1
                        raise error
                    headers = added.get(at) if added else None
                    if headers is not None:
                        retry_at: ProduceArgs = (*retry[:4], headers)
                    else:
                        retry_at = retry
                    if not self._produce_fault(producer, topic, vbs, at, error, records, retry_at):
                        note(at)  # stopping: the rest is re-polled after a restart
                        return
                    start = at + 1
                if stop == n:
                    break
                at = stop  # a record of its own, the general way
                headers = added.get(stop) if added else None
                if not self._send_one(records()[stop], _UNCONVERTED, producer, headers):
                    note(stop)  # stopping on a full queue before it
                    return
                start = stop + 1
            at = -1
        except BaseException:
            if at >= 0:
                note(at)
            raise
        note(n)

    def _produce_by_map(
        self,
        producer: KafkaProducer,
        head: tuple[Any, ...],
        vbs: list[Any] | tuple[Any, ...],
        records: Callable[[], list[SourceRecord]],
        note: Callable[[int], None],
        retry: ProduceArgs,
    ) -> None:
        """:meth:`_produce_all`'s loop without the C extension: one C-level ``map`` of
        ``produce`` over ``vbs``, ``head`` its other arguments (``head[1]``: the value's
        place), the same handling of a full queue and of a value ``produce`` refuses."""
        topic = head[0]
        n = len(vbs)
        it = iter(vbs)
        args = (repeat(topic), it, *map(repeat, head[2:]))
        produce = producer.produce
        at = -1  # the index at fault, while it is handled
        try:
            while True:
                try:
                    _drain(map(produce, *args))  # the loop runs in C
                    break
                except Exception as e:
                    at = n - length_hint(it) - 1  # map took it from ``it``
                    if not self._produce_fault(producer, topic, vbs, at, e, records, retry):
                        n = at  # stopping: the rest is re-polled after a restart
                        break
                at = -1
        except BaseException:
            if at >= 0:
                note(at)
            raise
        note(n)

    def _produce_fault(
        self,
        producer: KafkaProducer,
        topic: str,
        vbs: list[Any] | tuple[Any, ...],
        at: int,
        error: Exception,
        records: Callable[[], list[SourceRecord]],
        retry: ProduceArgs,
    ) -> bool:
        """``produce`` raised ``error`` for ``vbs[at]``: a full queue is waited out and the
        value produced (:meth:`_produce_when_room`; False: the task is stopping first), any
        other error skips the record or fails the task (:meth:`_produce_failed`)."""
        if type(error) is BufferError:
            return self._produce_when_room(producer, topic, vbs[at], None, retry)
        self._produce_failed(records()[at], error)
        return True

    def _note_batch_offsets(self, batch: SourceRecordBatch, handled: int) -> None:
        """Make the source offset of the batch's last handled record pending (one partition)."""
        self._offsets.pending_records += handled - self._skipped_in_batch
        self.produced += handled - self._skipped_in_batch
        sp = batch.source_partition
        if handled > 0 and sp is not None:
            self._offsets.pending[encode_key(self.id.connector, sp)] = batch.source_offsets[
                handled - 1
            ]

    def take_sent_bytes(self) -> int:
        """The bytes produced since the last call (counted only while :attr:`count_bytes`)."""
        n, self._sent_bytes = self._sent_bytes, 0
        return n

    def _send_plain(
        self, records: list[SourceRecord], values: list[Any] | None, producer: KafkaProducer
    ) -> int:
        """The per-record loop, over ``values`` or converting each value (``values`` None);
        returns how many records were handled (all of them unless the task was stopped while
        the producer's queue was full)."""
        produce = producer.produce
        cb = self._offsets.delivery_callback  # at-least-once: the epoch's (see ack_epochs)
        topics = self.topics
        send_one = self._send_one
        convert = self._value_conv if values is None else None
        count = convert is not None and self.count_bytes  # bytes limit, values one by one
        nbytes = 0
        try:
            for record, vb in zip(records, records if values is None else values, strict=True):
                topic = record.topic
                if (
                    record.key is not None
                    or record.key_schema is not None
                    or record.headers
                    or record.kafka_partition is not None
                    or topic not in topics
                ):
                    self._at = record
                    if not send_one(record, _UNCONVERTED if convert else vb, producer):
                        return _index_of(records, record)
                    continue
                if convert is not None:
                    try:
                        vb = convert(topic, record.value_schema, record.value)
                    except Exception:
                        self._at = record  # converted again under the error policy
                        if not send_one(record, _UNCONVERTED, producer):
                            return _index_of(records, record)
                        continue
                    if count and vb is not None:
                        nbytes += len(vb)
                ts = record.timestamp
                try:
                    if ts is None:
                        produce(topic, vb, None, PARTITION_UA, cb)
                    else:  # positionally: topic, value, key, partition, callback, on_delivery, ts
                        produce(topic, vb, None, PARTITION_UA, cb, None, ts)
                except BufferError:
                    self._at = record
                    args = self._produce_args(record)
                    if not self._produce_when_room(producer, topic, vb, None, args):
                        return _index_of(records, record)  # stopping: re-polled after a restart
                except Exception as e:
                    self._at = record
                    self._produce_failed(record, e)
            return len(records)
        finally:
            self._sent_bytes += nbytes

    def _send_loop(
        self,
        records: list[SourceRecord],
        values: list[Any] | None,
        producer: KafkaProducer,
        added: AddedHeaders | None,
    ) -> int:
        """The per-record loop (:meth:`_send_each` when the task wants ``commit_record``,
        else :meth:`_send_plain`) over the records, those ``added`` headers go to sent by
        :meth:`_send_one` in their place; returns how many records were handled."""
        loop = self._send_each if self.wants_commit_record else self._send_plain
        if not added:
            return loop(records, values, producer)
        handled = 0
        for at, headers in added.items():
            if at > handled:
                run_values = None if values is None else values[handled:at]
                run = loop(records[handled:at], run_values, producer)
                if run < at - handled:
                    return handled + run
            record = self._at = records[at]
            vb = _UNCONVERTED if values is None else values[at]
            if not self._send_one(record, vb, producer, headers):
                return at
            handled = at + 1
        if handled < len(records):
            rest = None if values is None else values[handled:]
            handled += loop(records[handled:], rest, producer)
        return handled

    def _send_each(
        self, records: list[SourceRecord], values: list[Any] | None, producer: KafkaProducer
    ) -> int:
        """Every record through :meth:`_send_one` (values converted there when ``values`` is
        None); returns how many records were handled."""
        send_one = self._send_one
        for i, record in enumerate(records):
            self._at = record
            if not send_one(record, _UNCONVERTED if values is None else values[i], producer):
                return i
        return len(records)

    def _send_one(
        self,
        record: SourceRecord,
        vb: Any,
        producer: KafkaProducer,
        added: RawHeaders | None = None,
    ) -> bool:
        """One record the general way: key (and, if ``vb`` is ``_UNCONVERTED``, value)
        conversion under the error policy, first use of a topic, headers (and the ``added``
        ones after them, as they are), partition and ``commit_record`` callback. False if the
        task stopped before it could be produced."""
        topic = record.topic
        value_counted = vb is not _UNCONVERTED  # a value of the batch: summed in send()
        kb: bytes | None
        try:
            key = record.key
            if key is None and record.key_schema is None:
                kb = None
            elif self._key_passthrough and type(key) is bytes:
                kb = key
            else:
                kb = self._key_conv(topic, record.key_schema, key)
            if vb is _UNCONVERTED:
                value = record.value
                if self._value_passthrough and type(value) is bytes:
                    vb = value
                else:
                    vb = self._value_conv(topic, record.value_schema, value)
        except Exception:
            # Slow path for this one record: retries, tolerance, DLQ per stage.
            converted = self._convert_slow(record)
            if converted is None:
                self.skipped(record)
                return True
            kb, vb = converted
        if topic not in self.topics:
            self._first_send_to(topic, record)
            if id(producer) != self._asked_id:  # its first record: after topic creation
                self._asked_id = id(producer)
                request_producer_id(producer, topic)
        if self.count_bytes:
            self._sent_bytes += (len(kb) if kb else 0) + (
                0 if value_counted or vb is None else len(vb)
            )
        try:
            if (
                record.headers
                or added
                or record.kafka_partition is not None
                or self.wants_commit_record
            ):
                args = self._produce_args(record, added)
                if self.count_bytes and args[4]:
                    self._sent_bytes += header_bytes(args[4])
                producer.produce(topic, vb, kb, *args)
            elif record.timestamp is not None:
                cb = self._offsets.delivery_callback
                producer.produce(topic, vb, kb, PARTITION_UA, cb, None, record.timestamp)
            else:
                producer.produce(topic, vb, kb, PARTITION_UA, self._offsets.delivery_callback)
        except BufferError:
            args = self._produce_args(record, added)
            return self._produce_when_room(producer, topic, vb, kb, args)
        except TaskFailure:
            raise
        except Exception as e:
            self._produce_failed(record, e)
        return True

    def _convert_values(self, records: list[SourceRecord]) -> list[Any] | None:
        """The batch's values as bytes, or None when they are to be converted one by one as
        the records are produced.

        A pass-through converter's bytes values are taken as they are. A converter with a
        batch path of its own (``from_connect_values`` overridden, not answering None)
        converts a batch of one topic and one value schema (the usual case) in one call; if a
        value fails there, the values are converted one by one, so the error policy applies to
        the one at fault. Otherwise each value is converted just before its record is produced
        (``produce`` copies it): never held for the batch.
        """
        if self._value_passthrough:
            values = [r.value for r in records]
            if set(map(type, values)) <= _BYTES_OR_NONE:
                return values
        if not self._value_batches:
            return None
        first = records[0]
        topic, schema = first.topic, first.value_schema
        n = len(records)
        schemas = [r.value_schema for r in records]
        topics = [r.topic for r in records]
        if schemas.count(schema) != n or topics.count(topic) != n:
            return None  # counted at C level, by identity first
        try:
            converted = self.converters.value.from_connect_values(
                topic, schema, [r.value for r in records]
            )
        except Exception:
            return None
        if converted is None:
            self._value_batches = False  # no batch path here: stop asking
        return converted

    def _note_offsets(
        self, records: list[SourceRecord], handled: int, *, one_partition: bool = False
    ) -> None:
        """Make the source offsets of the first ``handled`` records pending: the latest one of
        each source partition (equal partition maps are one partition). ``one_partition``:
        the caller knows every record's source partition is the same object (the C
        extension's ``plain_values`` checked it)."""
        if handled == 0:
            return
        done = records if handled == len(records) else records[:handled]
        pending = self._offsets.pending
        connector = self.id.connector
        last = done[-1]
        sp = last.source_partition
        if one_partition:
            if sp is not None:
                pending[encode_key(connector, sp)] = last.source_offset
            return
        if sp is not None and [r.source_partition for r in done].count(sp) == handled:
            pending[encode_key(connector, sp)] = last.source_offset  # one partition: the usual
            return
        last_partition: object = None
        last_key = b""
        for record in done:
            sp = record.source_partition
            if sp is not None:
                if sp is not last_partition:
                    last_key = encode_key(connector, sp)
                    last_partition = sp
                pending[last_key] = record.source_offset

    def _first_send_to(self, topic: str, record: SourceRecord) -> None:
        """Before the first record to ``topic``: create it if topic creation is used, then
        track it (and note its value schema's fields for lineage)."""
        note_topic_schema(self.metrics, topic, record.value_schema)
        if self._topic_creator is not None:
            try:
                self._topic_creator.ensure(topic)
            except Exception as e:
                raise TaskFailure(self.id, TaskStage.KAFKA_PRODUCE, str(e), record) from e
        self.topics.add(topic)
        self._on_topic(topic)

    def _convert_slow(self, record: SourceRecord) -> tuple[bytes | None, bytes | None] | None:
        """Convert one record stage by stage under the error policy; None if skipped."""
        conv, errors, topic = self.converters, self.errors, record.topic
        kb: bytes | None = None
        if record.key is not None or record.key_schema is not None:
            ok, kb = errors.call(
                TaskStage.KEY_CONVERTER,
                class_path(conv.key),
                lambda: conv.key.from_connect_data(topic, record.key_schema, record.key),
                record=record,
            )
            if not ok:
                return None
        ok, vb = errors.call(
            TaskStage.VALUE_CONVERTER,
            class_path(conv.value),
            lambda: conv.value.from_connect_data(topic, record.value_schema, record.value),
            record=record,
        )
        if not ok:
            return None
        if record.headers:
            ok, _ = errors.call(
                TaskStage.HEADER_CONVERTER,
                class_path(conv.header),
                lambda: self._produce_args(record),
                record=record,
            )
            if not ok:
                return None
        return kb, vb

    def _produce_failed(self, record: SourceRecord, error: Exception) -> None:
        """``produce()`` raised (e.g. a record too large): skip it under errors.tolerance=all,
        otherwise fail the task (stage KAFKA_PRODUCE)."""
        failure = Failure(TaskStage.KAFKA_PRODUCE, "confluent_kafka.Producer", error, record=record)
        if not self.errors.policy.tolerate_all:
            raise TaskFailure(self.id, TaskStage.KAFKA_PRODUCE, repr(error), record) from error
        self.metrics.errors += 1
        self.errors.report(failure)
        self.skipped(record)

    def skipped(self, record: SourceRecord) -> None:
        """A record that will not be produced: its offset still becomes committable (stored
        once everything before it is acknowledged) and ``commit_record(r, None)``."""
        self.metrics.records_skipped += 1
        self._skipped_in_batch += 1
        if record.source_partition is not None:
            key = encode_key(self.id.connector, record.source_partition)
            self._offsets.pending[key] = record.source_offset
        if self.wants_commit_record:
            self.task.commit_record(record, None)

    def _produce_args(self, record: SourceRecord, added: RawHeaders | None = None) -> ProduceArgs:
        """``produce``'s positional arguments after topic, value and key, in its order:
        partition, callback, on_delivery, timestamp (0: now), headers (the general path; the
        ``added`` ones after the record's own).
        The delivery callback goes in ``callback``'s place: confluent-kafka ignores a
        positional ``on_delivery`` (its keyword alias)."""
        headers = None
        if record.headers:
            header_conv = self.converters.header.from_connect_header
            try:
                headers = [
                    (h.key, header_conv(record.topic, h.key, h.schema, h.value))
                    for h in record.headers
                ]
            except Exception as e:
                raise TaskFailure(self.id, TaskStage.HEADER_CONVERTER, repr(e), record) from e
        if added:
            headers = [*headers, *added] if headers else added
        partition = PARTITION_UA if record.kafka_partition is None else record.kafka_partition
        on_delivery: Callable[[Any, KafkaMessage], object] | None
        if self.wants_commit_record:
            on_delivery = self._commit_record_callback(record)
        else:
            on_delivery = self._offsets.delivery_callback
        return (partition, on_delivery, None, record.timestamp or 0, headers)

    def _produce_when_room(
        self, producer: KafkaProducer, topic: str, vb: Any, kb: Any, args: ProduceArgs
    ) -> bool:
        """The local queue is full: back-pressure. Serve delivery reports until the record
        (``produce``'s further arguments: ``args``) fits; False if the task is stopping
        first."""
        while True:
            producer.poll(_ROOM_POLL_S)
            self.check_delivery()
            if self._stopping():
                return False
            try:
                producer.produce(topic, vb, kb, *args)
                return True
            except BufferError:
                continue

    def _commit_record_callback(self, record: SourceRecord) -> Callable[[Any, KafkaMessage], None]:
        """The record's delivery callback: ``commit_record`` on success; a failure goes to the
        batch's ``delivery_callback`` (which it keeps alive until served: at-least-once tracks
        acknowledgements by it) or, without one, to :meth:`on_delivery_error`."""
        failed = self._offsets.delivery_callback or self.on_delivery_error

        def done(err: KafkaError | None, msg: KafkaMessage) -> None:
            if err is not None:
                failed(err, msg)
                return
            ts = msg.timestamp()[1] if msg.timestamp() else None
            self.task.commit_record(
                record,
                RecordMetadata(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, ts),
            )

        return done

    def check_delivery(self) -> None:
        """Raise the first failed delivery (not tolerated) as a TaskFailure."""
        if self.delivery_error is not None:
            err, where = self.delivery_error
            raise TaskFailure(
                self.id, TaskStage.KAFKA_PRODUCE, f"delivery failed ({where}): {err.str()}"
            ) from KafkaException(err)

    # -- delivery reports (called from producer.poll/flush on the task's thread) -----------
    def on_delivery_error(self, err: KafkaError | None, msg: KafkaMessage) -> bool:
        """A delivery report (failed ones only, but for ``commit_record`` tasks): True when it
        is a failure that fails the task (recorded for :meth:`check_delivery`)."""
        if err is None:
            return False
        if err.code() in _PURGED:
            return False  # an aborted transaction's unsent records (exactly-once): on purpose
        if self.errors.policy.tolerate_all:
            self.metrics.errors += 1
            self.metrics.records_skipped += 1
            log.warning(
                "Task %s: delivery to %s-%s failed, skipped (errors.tolerance=all): %s",
                self.id,
                msg.topic(),
                msg.partition(),
                err.str(),
            )
            return False
        if self.delivery_error is None:
            where = f"topic={msg.topic()} partition={msg.partition()}"
            if err.code() == KafkaError.INVALID_RECORD and msg.key() is None:
                where += _KEYLESS_HINT
            self.delivery_error = (err, where)
        return True


_KEYLESS_HINT = (
    "; the record has no key, and a topic with cleanup.policy=compact refuses records without "
    "a key (the broker's INVALID_RECORD: 'Broker failed to validate record'): give the "
    "records a key (e.g. with the ValueToKey transform) or write them to a topic that is not "
    "compacted"
)


def _index_of(records: list[SourceRecord], record: SourceRecord) -> int:
    """The position of ``record`` (by identity) in ``records``."""
    for i, r in enumerate(records):
        if r is record:
            return i
    raise ValueError("record not in its batch")  # pragma: no cover - callers pass a member
