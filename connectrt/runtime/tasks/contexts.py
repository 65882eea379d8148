"""What a running task sees of the runtime: its context and its errant record reporter.

:class:`SourceTaskContextImpl` and :class:`SinkTaskContextImpl` are what the task runners hand
to ``task.initialize``; :class:`ErrantRecordReporterImpl` is a sink context's
``errant_record_reporter`` (KIP-610). The sink ones act on their runner through
:class:`SinkTaskControls` (the :class:`~connectrt.runtime.sink.runner.SinkTaskRunner`): a
request (rewind, retry timeout, commit, pause/resume) is recorded on the runner and takes
effect after ``put()``/``open()`` returns. All of them are called by the task on its own
thread.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from connectrt.api.metrics import PluginMetrics
from connectrt.api.records import SinkRecord, TopicPartition
from connectrt.api.task import (
    ErrantRecordReporter,
    SinkTask,
    SinkTaskContext,
    SourceTaskContext,
    TransactionContext,
)
from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl
from connectrt.runtime.plugins.metrics import TaskPluginMetrics
from connectrt.runtime.tasks.error_handling import ErrorHandler, Failure, ToleranceExceeded
from connectrt.runtime.tasks.runner import TaskId, TaskStage, class_path

__all__ = [
    "ErrantRecordReporterImpl",
    "SinkTaskContextImpl",
    "SinkTaskControls",
    "SourceTaskContextImpl",
]


class SourceTaskContextImpl(SourceTaskContext):
    """A source task's config, the reader of its connector's committed offsets and, for an
    exactly-once task with connector-defined boundaries, its transaction context."""

    def __init__(
        self,
        config: Mapping[str, str],
        reader: OffsetStorageReaderImpl,
        plugin_metrics: TaskPluginMetrics | None = None,
        transaction_context: TransactionContext | None = None,
    ) -> None:
        self._config = config
        self._reader = reader
        self._plugin_metrics = plugin_metrics
        self._transaction_context = transaction_context

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    @property
    def offset_storage_reader(self) -> OffsetStorageReaderImpl:
        return self._reader

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        return self._plugin_metrics.task if self._plugin_metrics is not None else None

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._transaction_context


class SinkTaskControls(Protocol):
    """The runner of a sink task, as its context and errant record reporter act on it.

    ``rewinds`` (offsets to seek to), ``retry_timeout_s`` and ``commit_requested`` are requests
    the runner applies after the current ``put()``/``open()``; ``assigned`` is the task's
    current assignment; ``raw_for`` finds the consumed message a record of the current batch
    came from. Used on the task thread only.
    """

    id: TaskId
    task: SinkTask
    task_config: dict[str, str]
    errors: ErrorHandler
    assigned: set[TopicPartition]
    rewinds: dict[TopicPartition, int]
    retry_timeout_s: float
    commit_requested: bool

    def pause_partitions(self, partitions: Collection[TopicPartition]) -> None: ...

    def resume_partitions(self, partitions: Collection[TopicPartition]) -> None: ...

    def raw_for(self, record: SinkRecord) -> Any: ...


class SinkTaskContextImpl(SinkTaskContext):
    """Calls are made by the task on the task thread; effects apply after put()/open()."""

    def __init__(self, runner: SinkTaskControls) -> None:
        self._runner = runner

    @property
    def configs(self) -> Mapping[str, str]:
        return self._runner.task_config

    def offset(
        self, offsets: Mapping[TopicPartition, int] | TopicPartition, offset: int | None = None
    ) -> None:
        if isinstance(offsets, TopicPartition):
            if offset is None:
                raise ValueError("offset(tp, n) needs an offset")
            offsets = {offsets: offset}
        self._runner.rewinds.update({TopicPartition(*tp): int(o) for tp, o in offsets.items()})

    def timeout(self, timeout_ms: int) -> None:
        self._runner.retry_timeout_s = max(0, timeout_ms) / 1000.0

    def assignment(self) -> set[TopicPartition]:
        return set(self._runner.assigned)

    def pause(self, *partitions: TopicPartition) -> None:
        self._runner.pause_partitions(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._runner.resume_partitions(partitions)

    def request_commit(self) -> None:
        self._runner.commit_requested = True

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        if not self._runner.errors.policy.reporting:
            return None
        return ErrantRecordReporterImpl(self._runner)

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        handles = getattr(self._runner, "plugin_metrics", None)
        return handles.task if handles is not None else None


class ErrantRecordReporterImpl(ErrantRecordReporter):
    """KIP-610: a sink task reports records it could not write (stage TASK_PUT).

    A record the runtime gave the task goes to the dead letter queue as the original raw
    record; one the task built is written as a JSON document. With ``errors.tolerance=none``
    the report fails the task, as in Kafka. Called on the task thread (from ``put``)."""

    def __init__(self, runner: SinkTaskControls) -> None:
        self._runner = runner

    def report(self, record: SinkRecord, error: BaseException) -> None:
        runner = self._runner
        failure = Failure(
            TaskStage.TASK_PUT, class_path(runner.task), error, runner.raw_for(record), record
        )
        runner.errors.metrics.errors += 1
        runner.errors.report(failure)
        if not runner.errors.policy.tolerate_all:
            raise ToleranceExceeded(
                f"Tolerance exceeded in error handler: task {runner.id} reported a record it "
                f"could not write: {error!r}"
            ) from error
        runner.errors.metrics.records_skipped += 1
