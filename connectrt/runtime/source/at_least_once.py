"""At-least-once delivery of a source task: offsets stored after their records are acknowledged.

:class:`AtLeastOnceDelivery` is the :class:`~connectrt.runtime.source.delivery.SourceDelivery`
of every task not running exactly-once. A polled batch is sent as it is; offsets are committed
every ``offset.flush.interval.ms`` and on stop, by
:class:`~connectrt.runtime.source.offsets.SourceOffsetCommitter` (which waits for the records
produced before them to be acknowledged, and stores nothing after a failed delivery). The
producer is created after the task started; nothing is restarted in place: a failure fails the
task, and the offsets acknowledged before it are still stored at stop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connectrt.api.task import SourceTask, TransactionContext
from connectrt.runtime.clients.kafka import KafkaProducer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.delivery import Commit, Polled, ProducerFactory, SendSegment
from connectrt.runtime.source.offsets import SourceOffsetCommitter
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskId
from connectrt.storage.offsets import OffsetStore

__all__ = ["AtLeastOnceDelivery"]


class AtLeastOnceDelivery(SourceOffsetCommitter):
    """At-least-once (see the module docstring); owned by one runner, used on its thread."""

    def __init__(
        self,
        task_id: TaskId,
        task: SourceTask,
        store: OffsetStore,
        errors: ErrorHandler,
        metrics: TaskMetrics,
        flush_timeout_s: float,
        flush_interval_s: float,
    ) -> None:
        super().__init__(task_id, task, store, errors, metrics, flush_timeout_s)
        self._interval = flush_interval_s

    @property
    def commit_interval_s(self) -> float | None:
        return self._interval

    @property
    def store(self) -> OffsetStore:
        return self._store

    @property
    def transaction_context(self) -> TransactionContext | None:
        return None

    def open(self, create: ProducerFactory, config: dict[str, Any]) -> KafkaProducer | None:
        return None  # the runner creates the producer once the task has started

    def dispatch(
        self, polled: Polled, producer: KafkaProducer, send: SendSegment, commit: Commit
    ) -> None:
        send(polled, producer)

    def after_poll(self, producer: KafkaProducer, polled: bool, commit: Commit) -> None:
        pass  # commits come on the timer only

    def before_pause(self, commit: Commit) -> None:
        pass  # offsets keep until the next timed commit

    def on_stop(self, producer: KafkaProducer, failed: bool, commit: Commit) -> None:
        commit()  # also after a failure: what was acknowledged before it is stored

    def close(self, producer: KafkaProducer | None) -> None:
        pass

    def lost_reason(self, error: BaseException) -> str | None:
        return None  # every failure fails the task

    # Never called, since lost_reason() never answers: at-least-once does not restart in place.
    def lose(self, producer: KafkaProducer, reason: str) -> None:
        pass

    def reopen(
        self,
        create: ProducerFactory,
        config: dict[str, Any],
        stopping: Callable[[], bool],
        wait: Callable[[float], object],
    ) -> KafkaProducer | None:
        return None

    def restarted(self, task: SourceTask) -> None:
        self._task = task
