"""Sink conversion in one place: a consumed batch -> what ``put()`` receives.

Two strategies, one entry point (:meth:`SinkConversion.convert`):

* **columns** (the hot path, :class:`~connectrt.runtime.sink.message_batch.MessageBatchBuilder`):
  without transformations the batch is built from the consumed messages as columns, no
  ``SinkRecord`` until the task asks for one, keys and values converted per batch;
* **records** (:class:`~connectrt.runtime.sink.message_records.RecordConversion`): with
  transformations, or when a converter failed on a message of the batch, the messages are
  converted one by one (the failing ones through the error policy: retried, tolerated, sent to
  the dead letter queue with their original bytes), then transformed; the batch holds those
  records.

Either way the answer carries, per partition, the first offset of the batch and the one after
its last message: what the offsets advance to once ``put()`` took the batch (or at once, when
every record was skipped). Used on the task thread only; it remembers the current batch's
messages so that a failure path can find a record's original message (:meth:`raw_for`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import SinkRecord
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.message_batch import MessageBatchBuilder, partition_positions
from connectrt.runtime.sink.message_records import RecordConversion
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskConverters
from connectrt.runtime.tasks.transforms import transform_records
from connectrt.transforms.chain import TransformationChain

__all__ = ["ConvertedBatch", "SinkConversion"]


class ConvertedBatch(NamedTuple):
    """One consumed batch, converted. ``batch`` is None when every record was skipped
    (tolerated, sent to the dead letter queue, or dropped by a transformation): nothing to
    put, the offsets advance all the same. ``first_offsets``/``next_offsets``: per
    ``(topic, partition)``, the batch's first offset and the one after its last message.
    A named tuple: made once per batch, about 0.2 us where a frozen dataclass took 0.9."""

    batch: SinkRecordBatch | None
    first_offsets: Mapping[tuple[str, int], int]
    next_offsets: Mapping[tuple[str, int], int]


class SinkConversion:
    """Converts one sink task's consumed batches (see the module docstring).

    ``topic`` is the one topic the task's messages can come from (its subscription names one
    topic and no pattern), or None; ``transforms`` the SMT chain (None: no transformations,
    the columns strategy applies).
    """

    def __init__(
        self,
        converters: TaskConverters,
        errors: ErrorHandler,
        metrics: TaskMetrics,
        topic: str | None,
        transforms: TransformationChain[SinkRecord] | None,
    ) -> None:
        self._topic = topic
        self._transforms = transforms
        self._errors = errors
        self._metrics = metrics
        self._columns = MessageBatchBuilder(converters, topic) if transforms is None else None
        self._records = RecordConversion(converters, errors, metrics)
        self._msgs: list[Any] = []

    def convert(self, msgs: list[Any]) -> ConvertedBatch:
        """The batch of ``msgs`` (consumed messages, no error events, at least one)."""
        self._msgs = msgs
        partitions, first_offsets, next_offsets = partition_positions(msgs, self._topic)
        if self._columns is not None:
            batch = self._columns.build(msgs, partitions, next_offsets)
            if batch is not None:
                return ConvertedBatch(batch, first_offsets, next_offsets)
        records = self._records.convert(msgs)
        if records and self._transforms is not None:
            records = transform_records(
                self._transforms, records, self._errors, self._skipped, raw_for=self.raw_for
            )
        return ConvertedBatch(
            SinkRecordBatch(records) if records else None, first_offsets, next_offsets
        )

    def raw_for(self, record: SinkRecord) -> Any:
        """The consumed message a record of the current batch came from (failure paths only)."""
        coords = (
            record.original_topic,
            record.original_kafka_partition,
            record.original_kafka_offset,
        )
        for msg in self._msgs:
            if (msg.topic(), msg.partition(), msg.offset()) == coords:
                return msg
        return None

    def _skipped(self, _record: SinkRecord) -> None:
        self._metrics.records_skipped += 1
