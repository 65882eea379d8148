"""Tasks: the part of a connector that moves data.

Threading contract (both task kinds): the runtime creates one task instance per task config and
runs it on a dedicated thread. ``start``, ``poll``/``put``, ``flush``/``pre_commit``, ``open``/
``close``, ``commit`` and ``commit_record`` are all called on that one thread, so a task needs
no locking of its own. The single exception is ``SourceTask.stop()``, which the runtime calls
from another thread to interrupt a blocking ``poll()``; make it set a flag or close a handle.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectrt.api.metrics import PluginMetrics
    from connectrt.api.record_batch import SinkRecordBatch
    from connectrt.api.records import SinkRecord, SourceRecord, TopicPartition
    from connectrt.api.source_batch import SourceRecordBatch

__all__ = [
    "ErrantRecordReporter",
    "OffsetStorageReader",
    "SinkTask",
    "SinkTaskContext",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TransactionContext",
]


class OffsetStorageReader(abc.ABC):
    """Reads committed source offsets (thread-safe)."""

    @abc.abstractmethod
    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        """Committed offsets of these source partitions, in the same order (None if unknown).

        (Kafka returns a map keyed by partition; Python dicts are not hashable, hence a list.)
        """

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The committed offset for one source partition, or None."""
        return self.offsets([partition])[0]


class TransactionContext(abc.ABC):
    """Lets a source task define its own transaction boundaries (KIP-618).

    Given (as ``SourceTaskContext.transaction_context``) only to tasks of a connector that runs
    exactly-once with ``transaction.boundary=connector``. Each method records a request and
    returns at once; the runtime acts on it on the task's thread after the current ``poll()``
    returns, once the batch is sent:

    * ``commit_transaction()``: commit the open transaction after the records of this batch;
    * ``commit_transaction(record)``: commit it with ``record`` (a record of the current or a
      later batch) as its last record;
    * ``abort_transaction()``: abort the open transaction after the records of this batch
      (they, and their source offsets, are discarded; the task is not restarted, so it is up
      to the task to re-send what it still wants written);
    * ``abort_transaction(record)``: abort it with ``record`` as its last record.

    When a commit and an abort are both pending for the same point the abort wins. A record
    that an SMT drops or the error policy skips never reaches a boundary: request boundaries on
    records that are sent. Called on the task's thread only.
    """

    @abc.abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Request a commit after the current batch, or after ``record``."""

    @abc.abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Request an abort after the current batch, or after ``record``."""


class SourceTaskContext(abc.ABC):
    @property
    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's current configuration."""

    @property
    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """Read the offsets this connector committed earlier (typically in ``start``)."""

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        """Where the task registers metrics of its own (KIP-877), tagged with its connector
        and task id; they are removed when the task stops. None where the runtime offers none."""
        return None

    @property
    def transaction_context(self) -> TransactionContext | None:
        """The task's :class:`TransactionContext`: not None only when the connector runs
        exactly-once with ``transaction.boundary=connector`` (KIP-618)."""
        return None


class ErrantRecordReporter(abc.ABC):
    """Sends records a sink task could not write to the dead letter queue (see errors.*)."""

    @abc.abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> None: ...


class SinkTaskContext(abc.ABC):
    @property
    @abc.abstractmethod
    def configs(self) -> Mapping[str, str]: ...

    @abc.abstractmethod
    def offset(
        self, offsets: Mapping[TopicPartition, int] | TopicPartition, offset: int | None = None
    ) -> None:
        """Rewind/seek: the next records delivered for these partitions start at these offsets.

        Call as ``offset({tp: n, ...})`` or ``offset(tp, n)``; typically from ``open()`` by a
        sink that stores its offsets in the destination (exactly-once sinks).
        """

    @abc.abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableError from ``put``, wait this long before redelivering the batch."""

    @abc.abstractmethod
    def assignment(self) -> set[TopicPartition]: ...

    @abc.abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop delivering records for these partitions until :meth:`resume`."""

    @abc.abstractmethod
    def resume(self, *partitions: TopicPartition) -> None: ...

    @abc.abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit (flush + consumer commit) as soon as possible."""

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The reporter when a dead letter queue or error logging is configured, else None."""
        return None

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        """Where the task registers metrics of its own (KIP-877), tagged with its connector
        and task id; they are removed when the task stops. None where the runtime offers none."""
        return None


class Task(abc.ABC):
    """Common base of SourceTask and SinkTask."""

    def version(self) -> str:
        return "unknown"

    @abc.abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with the task config produced by ``Connector.task_configs``."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop; must be idempotent."""


class SourceTask(Task):
    """Reads records from an external system.

    The runtime calls ``poll()`` in a loop on the task thread. Return a list of records (or a
    :class:`~connectrt.api.SourceRecordBatch`: one partition's records to one topic as columns,
    without a ``SourceRecord`` per record), or None / an empty list when nothing is ready
    after blocking briefly (up to ~1 s; never block indefinitely, so ``stop()`` takes effect).
    Raise ``RetriableError`` for a transient failure (the runtime polls again), anything else
    fails the task.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None: ...

    def commit(self) -> None:
        """Called after offsets up to some point were durably stored in the offset store."""

    def commit_record(self, record: SourceRecord, metadata: Any | None) -> None:
        """Called per record once Kafka acknowledged it (``metadata`` is a
        :class:`RecordMetadata`), or with None when it was dropped by a transform or
        tolerated error. Off by default (costly): the runtime calls it only when a subclass
        overrides it."""


class SinkTask(Task):
    """Writes records to an external system.

    ``put()`` receives batches; it may buffer and write asynchronously, but everything given
    to it must be durably written when ``flush()`` returns, because the runtime then commits
    the consumer offsets. Raise ``RetriableError`` from ``put`` to have the same batch
    redelivered (after ``context.timeout``), anything else fails the task.

    A batch is a :class:`~connectrt.api.SinkRecordBatch`: iterate it, index it, keep its
    records as with the list Kafka Connect passes, or read it as columns (``records.values``,
    ``records.offsets``, ...) without a ``SinkRecord`` per record.
    """

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def put(self, records: SinkRecordBatch) -> None:
        """Write (or buffer) ``records``. Called with at least one record."""

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything ``put`` so far durable. ``offsets``: next offset per partition."""

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Return the offsets that are safe to commit (next offset to consume per partition).

        The default flushes and returns ``offsets``. Return an empty map to skip this commit.
        """
        self.flush(offsets)
        return offsets

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions were assigned to this task (before records of them are delivered)."""

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions are being revoked; their offsets were committed just before."""
