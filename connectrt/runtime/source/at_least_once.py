"""At-least-once delivery of a source task: offsets stored off its thread, once acknowledged.

:class:`AtLeastOnceDelivery` is the :class:`~connectrt.runtime.source.delivery.SourceDelivery`
of every task not running exactly-once. A polled batch is sent as it is. Every
``offset.flush.interval.ms`` the task's thread closes the current *epoch*
(:mod:`connectrt.runtime.source.ack_epochs`): it takes the pending offsets (the latest source
offset per source partition) and the records produced since the last commit, hands them to the
task's :class:`~connectrt.runtime.source.offset_writer.OffsetWriter` and opens the next epoch,
whose delivery callback the records produced from then on carry. That is all the task's thread
does at a timed commit (no ``flush()``, no wait for the offsets topic), as Kafka Connect's
committer thread and ``OffsetStorageWriter`` keep its task polling. Once every record of an
epoch (and of every epoch before it) is acknowledged, the writer stores its offsets on its own
thread, without waiting for the producer to run empty: a busy source's offsets are stored
within one interval and the acknowledgement time of its records.

Failure:

* a failed delivery (not tolerated) marks its epoch: no offset of it or of any later epoch is
  stored, and the task fails on its thread (``check_delivery``), as before;
* a store that fails is retried with the next one (the task goes on); offsets that do not
  validate fail the task;
* a crash after records were acknowledged but before their offsets were stored: those records
  are produced again after the restart (duplicates, at most about one interval's worth, never
  loss).

Outcomes come back to the task's thread (:meth:`AtLeastOnceDelivery.after_poll`, one C-level
check per poll): metrics, then ``SourceTask.commit()``. The commit at stop closes the last
epoch, ``flush()``-es the producer (bounded by ``offset.flush.timeout.ms``) and waits for the
writer, on the task's thread. The producer is created after the task started; nothing is
restarted in place. Exactly-once tasks (:mod:`connectrt.runtime.source.transactional`) are
unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from connectrt.api.task import SourceTask, TransactionContext
from connectrt.runtime.clients.kafka import KafkaError, KafkaMessage, KafkaProducer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.ack_epochs import EpochSnapshot, FailureReport, open_epoch
from connectrt.runtime.source.delivery import (
    Commit,
    DeliveryCallback,
    Polled,
    ProducerFactory,
    SendSegment,
    SourceDelivery,
)
from connectrt.runtime.source.offset_writer import OffsetWriter
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["AtLeastOnceDelivery"]


def _fails(err: KafkaError | None, msg: KafkaMessage) -> bool:
    return err is not None  # until track_deliveries() names the sender's handler


class AtLeastOnceDelivery(SourceDelivery):
    """At-least-once (see the module docstring); owned by one runner, used on its thread.

    ``pending``/``pending_records`` are the open epoch's offsets and record count, written by
    the batch sender; ``delivery_callback`` is the open epoch's callback, which the sender
    gives every record it produces."""

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
        self._id = task_id
        self._task = task
        self._store = store
        self._errors = errors
        self._metrics = metrics
        self._flush_timeout = flush_timeout_s
        self._interval = flush_interval_s
        self.pending: dict[bytes, Mapping[str, Any] | None] = {}
        self.pending_records = 0
        self._report: FailureReport = _fails
        self._writer = OffsetWriter(task_id, store)
        self._seq = 0
        self.delivery_callback: DeliveryCallback | None = None
        self._snapshot: EpochSnapshot
        self._final = False  # on_stop: the commit at stop
        self._open_epoch()

    @property
    def commit_interval_s(self) -> float | None:
        return self._interval

    @property
    def store(self) -> OffsetStore:
        return self._store

    @property
    def transaction_context(self) -> TransactionContext | None:
        return None

    def track_deliveries(self, report: FailureReport) -> None:
        self._report = report

    def _forward(self, err: KafkaError | None, msg: KafkaMessage) -> bool:
        return self._report(err, msg)

    # -- epochs ------------------------------------------------------------------------------
    def _open_epoch(self) -> None:
        self._seq += 1
        epoch, self._snapshot = open_epoch(self._seq, self._forward, self._writer.acknowledged)
        self.delivery_callback = epoch  # the previous epoch's last reference but its records'

    def _close_epoch(self) -> None:
        """Hand the open epoch's offsets to the writer and open the next one (cheap: the
        task's thread at a timed commit). Dead letter queue records are made durable first
        (they must be before the offsets that skip their records; no wait without a DLQ)."""
        self._errors.flush()
        snapshot = self._snapshot
        snapshot.offsets, snapshot.records = self.pending, self.pending_records
        snapshot.taken = time.perf_counter()
        snapshot.closed = True
        self.pending, self.pending_records = {}, 0
        self._writer.submit(snapshot)
        self._open_epoch()

    def _take_outcomes(self) -> None:
        """The writer's outcomes since the last call: metrics, then ``SourceTask.commit()``
        once if offsets were stored; invalid offsets fail the task."""
        metrics = self._metrics
        committed = False
        for outcome in self._writer.outcomes():
            metrics.records_produced += outcome.acknowledged
            if outcome.error is not None:
                metrics.offset_commit_failures += 1
                if outcome.fatal:
                    message = f"offset commit failed: {outcome.error!r}"
                    raise TaskFailure(self._id, TaskStage.TASK_COMMIT, message) from outcome.error
                continue
            metrics.records_committed += outcome.stored
            if outcome.wrote:
                metrics.offset_commits += 1
                metrics.commit_seconds.observe(outcome.seconds)
                committed = True
        if committed:
            try:
                self._task.commit()
            except Exception:
                log.exception("Task %s: exception in commit()", self._id)

    # -- the loop's hooks --------------------------------------------------------------------
    def commit(self, producer: KafkaProducer, check_delivery: Callable[[], None]) -> bool:
        """A timed commit: close the open epoch (see the module docstring). At stop, the
        commit that waits (:meth:`_commit_at_stop`). True unless that one left offsets
        unstored."""
        if self._final:
            return self._commit_at_stop(producer, check_delivery)
        check_delivery()
        if self.pending or self.pending_records:
            self._close_epoch()
        self._writer.process()
        self._take_outcomes()
        return True

    def _commit_at_stop(self, producer: KafkaProducer, check_delivery: Callable[[], None]) -> bool:
        """Close the last epoch, wait until the producer has every record acknowledged
        (``offset.flush.timeout.ms``), then until the writer stored their offsets."""
        if self.pending or self.pending_records:
            self._close_epoch()
        remaining = producer.flush(self._flush_timeout)
        if remaining == 0:
            self._writer.all_acknowledged(self._seq - 1)  # flushed: every closed epoch is
        idle = self._writer.wait_idle(self._flush_timeout)
        self._take_outcomes()
        check_delivery()
        if remaining > 0 or not idle:
            log.warning(
                "Task %s: %s within offset.flush.timeout.ms; the offsets after them not stored",
                self._id,
                f"{remaining} records not acknowledged"
                if remaining
                else "source offsets not written",
            )
            self._metrics.offset_commit_failures += 1
            return False
        return True

    def open(self, create: ProducerFactory, config: dict[str, Any]) -> KafkaProducer | None:
        return None  # the runner creates the producer once the task has started

    def dispatch(
        self, polled: Polled, producer: KafkaProducer, send: SendSegment, commit: Commit
    ) -> None:
        send(polled, producer)

    def after_poll(self, producer: KafkaProducer, polled: bool, commit: Commit) -> None:
        """Take what the writer stored since the last poll (usually nothing: one check)."""
        if self._writer.ready:
            self._writer.process()
            self._take_outcomes()

    def before_pause(self, commit: Commit) -> None:
        pass  # offsets keep until the next timed commit

    def on_stop(self, producer: KafkaProducer, failed: bool, commit: Commit) -> None:
        self._final = True
        commit()  # also after a failure: what was acknowledged before it is stored

    def close(self, producer: KafkaProducer | None) -> None:
        self._writer.close(min(self._flush_timeout, 5.0))
