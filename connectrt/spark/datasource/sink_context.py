"""The sink task's context on an executor: its one synthetic partition, rewinds, retry
timeout, and the errant record reporter that applies the ``errors.*`` policy (KIP-610).
"""

from __future__ import annotations

from collections.abc import Mapping

from connectrt.api.records import SinkRecord, TopicPartition
from connectrt.api.task import ErrantRecordReporter, SinkTask, SinkTaskContext
from connectrt.runtime.tasks.error_handling import ErrorHandler, Failure, ToleranceExceeded
from connectrt.runtime.tasks.runner import TaskStage, class_path

__all__ = ["BridgeReporter", "BridgeTaskContext"]


class BridgeReporter(ErrantRecordReporter):
    """KIP-610 for bridged sink tasks: report under the ``errors.*`` policy (the sink task's
    thread only)."""

    def __init__(self, handler: ErrorHandler, task: SinkTask) -> None:
        self.handler = handler
        self.task = task

    def report(self, record: SinkRecord, error: BaseException) -> None:
        handler = self.handler
        handler.metrics.errors += 1
        handler.report(Failure(TaskStage.TASK_PUT, class_path(self.task), error, None, record))
        if not handler.policy.tolerate_all:
            raise ToleranceExceeded(
                f"Tolerance exceeded in error handler: task {handler.task_id} reported a record "
                f"it could not write (topic={record.topic}, partition={record.kafka_partition}, "
                f"offset={record.kafka_offset}): {error!r}"
            ) from error
        handler.metrics.records_skipped += 1


class BridgeTaskContext(SinkTaskContext):
    """The sink task's view of its one synthetic partition (one Spark task's thread only)."""

    def __init__(
        self,
        config: Mapping[str, str],
        tp: TopicPartition,
        reporter: ErrantRecordReporter | None = None,
    ) -> None:
        self._config = dict(config)
        self._tp = tp
        self._reporter = reporter
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms = 1000

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    def offset(
        self, offsets: Mapping[TopicPartition, int] | TopicPartition, offset: int | None = None
    ) -> None:
        if isinstance(offsets, TopicPartition):
            assert offset is not None
            offsets = {offsets: offset}
        for tp, value in offsets.items():
            self.rewinds[TopicPartition(tp.topic, tp.partition)] = int(value)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = int(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        return {self._tp}

    def pause(self, *partitions: TopicPartition) -> None:
        """Nothing to pause: rows are pushed by the bridge."""

    def resume(self, *partitions: TopicPartition) -> None:
        """Nothing to resume."""

    def request_commit(self) -> None:
        """Each Spark task flushes at its end anyway."""
