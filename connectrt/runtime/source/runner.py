"""Runs a SourceTask: poll -> transform -> convert and produce -> commit, one loop for all tasks.

The task's thread polls a batch, applies the SMT chain, and hands the batch to the task's
:class:`~connectrt.runtime.source.sender.SourceBatchSender`, which converts and produces it (the
hot path: batch conversion, positional ``produce`` calls without per-record callbacks, the
batch's source offsets noted once) and watches for failed deliveries.

How the produced records and their offsets become durable is the task's delivery guarantee, a
:class:`~connectrt.runtime.source.delivery.SourceDelivery` chosen when the runner is built, whose
hooks the loop calls (see :mod:`connectrt.runtime.source.delivery` for their order):

* at-least-once (:class:`~connectrt.runtime.source.at_least_once.AtLeastOnceDelivery`): every
  ``offset.flush.interval.ms`` the pending offsets are handed to a background writer, which
  stores them once every record produced before them is acknowledged (the task keeps
  polling); on stop the producer is flushed and they are stored; never lost;
* exactly-once, KIP-618 (:class:`~connectrt.runtime.source.transactional.TransactionalDelivery`):
  records and their offsets are written in one transaction per boundary
  (``transaction.boundary``); on a failure, and on stop with connector-defined boundaries, the
  open transaction is aborted.

A transaction lost to the broker (an outage longer than a commit may ride out:
:mod:`connectrt.runtime.source.transaction_errors`) does not fail the task: the runner restarts
it in place, on its own thread, from the committed offsets
(:meth:`SourceTaskRunner._restart_in_place`): the old task is stopped and its producer
destroyed, a new producer's ``init_transactions()`` (retried until the broker answers) fences the
old one and finishes its transaction, the offsets topic is read again, and a new instance of the
task class starts from what the last committed transaction stored
(:mod:`connectrt.runtime.source.transaction_restart`). The task reports RESTARTING meanwhile. The
task's context lives in :mod:`connectrt.runtime.tasks.contexts`.

``poll()`` returns None, a list (or tuple) of records or a ``SourceRecordBatch``; anything else
fails the task with a message naming its class and what it returned
(:mod:`connectrt.runtime.source.poll_results`).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Sequence
from typing import Any, overload

from connectrt.api.records import SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import SourceTask
from connectrt.errors import RetriableError
from connectrt.runtime.clients.kafka import KafkaProducer
from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl
from connectrt.runtime.source.at_least_once import AtLeastOnceDelivery
from connectrt.runtime.source.delivery import SourceDelivery
from connectrt.runtime.source.latency import AckLatency
from connectrt.runtime.source.poll_results import (
    BadPollResult,
    bad_item_message,
    checked_poll_result,
)
from connectrt.runtime.source.sender import RecordMetadata, SourceBatchSender
from connectrt.runtime.source.transaction_restart import fresh_task
from connectrt.runtime.source.transactional import TransactionalDelivery
from connectrt.runtime.status import State, TargetState
from connectrt.runtime.tasks.contexts import SourceTaskContextImpl
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.runtime.tasks.settings import SettingsBuiltRunner, SourceRunnerSettings
from connectrt.runtime.tasks.transforms import transform_records

log = logging.getLogger(__name__)

__all__ = ["RecordMetadata", "SourceTaskRunner"]


class SourceTaskRunner(SettingsBuiltRunner[SourceRecord]):
    """Runs one SourceTask on its own thread (see the module docstring)."""

    def __init__(self, task_id: TaskId, task: SourceTask, settings: SourceRunnerSettings) -> None:
        super().__init__(task_id, settings)
        self.task = task
        self._producer_config = settings.producer_config
        self._producer_factory = settings.producer_factory
        self._flush_timeout = settings.offset_flush_timeout_ms / 1000.0
        self._producer: KafkaProducer | None = None
        self._client_config: dict[str, Any] = {}  # the producer's, set by execute()
        self.failed_already = False
        self._delivery: SourceDelivery
        eos = settings.exactly_once
        if eos is not None:
            assert settings.exactly_once_store is not None
            self._delivery = TransactionalDelivery(
                task_id,
                task,
                eos,
                settings.exactly_once_store,
                self.errors,
                self.metrics,
                max(self._flush_timeout, 30.0),
                stopping=lambda: self.stopping,
            )
        else:
            self._delivery = AtLeastOnceDelivery(
                task_id,
                task,
                settings.offset_store,
                self.errors,
                self.metrics,
                self._flush_timeout,
                settings.offset_flush_interval_ms / 1000.0,
            )
        self._sender = SourceBatchSender(
            task_id,
            task,
            converters=settings.converters,
            errors=self.errors,
            metrics=self.metrics,
            offsets=self._delivery,
            topic_creator=settings.topic_creator,
            on_topic=lambda topic: self.on_topic(topic),
            stopping=lambda: self.stopping,
        )
        self._delivery.track_deliveries(self._sender.on_delivery_error)
        self._acks = AckLatency(self.metrics)

    @property
    def topics(self) -> set[str]:
        """Topics this task has produced to (for topic tracking)."""
        return set(self._sender.topics)

    @property
    def tap_kind(self) -> str:
        return "source"

    def on_stop_requested(self) -> None:
        self.errors.stop()
        try:
            self.task.stop()
        except Exception:
            log.exception("Error calling stop() on source task %s", self.id)

    def execute(self) -> None:
        self.errors.open()  # the dead letter queue, before anything is polled
        cfg = dict(self._producer_config)
        if not self._sender.wants_commit_record:
            cfg["delivery.report.only.error"] = True
        cfg["on_delivery"] = self._sender.on_delivery_error
        self._client_config = cfg
        # Exactly-once fences older instances and reads the committed offsets first.
        self._producer = self._delivery.open(self._producer_factory, cfg)
        self._start_task(self.task)
        if self._producer is None:
            self._producer = self._producer_factory(cfg)
        self.report_running_or_paused()
        try:
            while True:
                reason = self._loop_until_lost()
                if reason is None or not self._restart_in_place(reason):
                    break  # done, or stopped while restarting
        except BaseException:
            self._close_transforms()
            self.failed_already = True
            try:
                self._final_commit()
            except Exception:
                log.exception("Task %s: final offset commit after failure failed", self.id)
            raise
        self._close_transforms()
        self._final_commit()

    def _start_task(self, task: SourceTask) -> None:
        """Initialize ``task`` on a reader of the committed offsets, and start it."""
        delivery = self._delivery
        reader = OffsetStorageReaderImpl(delivery.store, self.id.connector)
        task.initialize(
            SourceTaskContextImpl(
                self.task_config, reader, self.plugin_metrics, delivery.transaction_context
            )
        )
        self.call_clock.enter("start")
        try:
            task.start(self.task_config)
        finally:
            self.call_clock.leave()

    def _loop_until_lost(self) -> str | None:
        """Run the loop; None when it ends (the task stops), or why the delivery wants the
        task restarted in place. Returns outside the ``except`` clause on purpose: the
        exception's traceback holds the frames that refer to the old producer, and that
        producer must be destroyed before a new one initializes (a live one re-acquires its
        producer id in the background and would fence the new one)."""
        try:
            self._loop()
        except Exception as e:
            reason = self._delivery.lost_reason(e)
            if reason is None:
                raise
            return reason
        return None

    def _restart_in_place(self, reason: str) -> bool:
        """Restart a task whose delivery lost its producer (an exactly-once task's transaction
        lost to the broker), from its committed offsets (see the module docstring). Waits,
        retrying with a doubling backoff, until the broker answers ``init_transactions()`` and
        the offsets topic can be read. False when the task is stopped meanwhile; the new task
        is then stopped too."""
        self.metrics.transaction_restarts += 1
        if not self._abandoned:
            self.status.put(self.id.connector, self.id.task, State.RESTARTING)
        old, self._producer = self._producer, None
        if old is not None:
            self._delivery.lose(old, reason)
            del old  # the last reference: librdkafka destroys the producer now
            gc.collect()  # and at once, should a reference cycle still hold it
        self._sender.delivery_error = None
        try:
            self.task.stop()
        except Exception:
            log.exception("Task %s: error calling stop() before its restart", self.id)
        producer = self._delivery.reopen(
            self._producer_factory,
            self._client_config,
            lambda: self.stopping,
            self._stopping.wait,
        )
        if producer is None:
            return False
        self._producer = producer
        if self.stopping:
            return False
        self._start_new_task()
        if self.stopping:
            self.on_stop_requested()
            return False
        self.report_running_or_paused()
        log.warning("Task %s: restarted from its last committed offsets", self.id)
        return True

    def _start_new_task(self) -> None:
        """A new instance of the task's class, started on a fresh reader of the committed
        offsets (the old instance was stopped; its ``poll`` timing is carried over)."""
        task = fresh_task(self.task, self.metrics)
        self._delivery.restarted(task)
        self.task = task
        self._sender.task = task
        try:
            self._start_task(task)
        except Exception as e:
            raise TaskFailure(self.id, TaskStage.TASK_START, repr(e)) from e

    def _loop(self) -> None:
        producer = self._producer
        assert producer is not None
        task = self.task
        metrics = self.metrics
        delivery = self._delivery
        dispatch = delivery.dispatch
        after_poll = delivery.after_poll
        send = self._send
        commit = self.commit_offsets
        check_delivery = self._sender.check_delivery
        clock = self.call_clock
        sender = self._sender
        acks = self._acks
        acks.reset()  # a new producer (the loop starts again after a restart in place)
        tracer = self.tracer  # tracing.enabled (connectrt.runtime.source.tracing), else None
        interval = delivery.commit_interval_s  # None: no commits on a timer
        # task.rate.limit.bytes.per.sec counts the produced bytes, which the sender then sums.
        self._sender.count_bytes = self.rate_limiter is not None and self.rate_limiter.limits_bytes
        next_commit = time.monotonic() + (interval or 0.0)
        while not self.stopping:
            if self.target_state is TargetState.PAUSED:
                delivery.before_pause(commit)
                if not self.wait_while_paused():
                    break
            clock.enter("poll")
            try:
                records = task.poll() if tracer is None else tracer.poll(task)
            except RetriableError as e:
                log.warning("Task %s: retriable error from poll(), polling again: %s", self.id, e)
                metrics.retries += 1
                records = None
            except Exception as e:
                if self.stopping:
                    break
                raise TaskFailure(self.id, TaskStage.TASK_POLL, repr(e)) from e
            finally:
                clock.leave()
            if records is not None and type(records) is not list:
                records = self._checked(records)  # a batch, a tuple, or the task fails
            if records:
                limiter = self.rate_limiter  # task.rate.limit.*, before produce
                if limiter is not None and not limiter.admit(len(records)):
                    break  # stopping: not produced, so not committed; polled again later
                t0 = time.perf_counter()
                polled_at = time.monotonic()
                produced_before = sender.produced
                metrics.records_polled += len(records)
                try:
                    dispatch(records, producer, send, commit)
                except (AttributeError, TypeError) as e:
                    if type(records) is list:
                        self._check_items(records, e)  # an item that is not a record
                    raise
                if limiter is not None and limiter.limits_bytes:
                    limiter.charge(self._sender.take_sent_bytes())  # waited off at next admit
                metrics.observe_batch(time.perf_counter() - t0)
                acks.sent(polled_at, sender.produced - produced_before, sender.produced)
            after_poll(producer, bool(records), commit)
            producer.poll(0)
            check_delivery()
            acks.acknowledged(sender.produced, len(producer))
            if interval is not None and time.monotonic() >= next_commit:
                commit()
                next_commit = time.monotonic() + interval

    def _send(
        self, records: list[SourceRecord] | SourceRecordBatch, producer: KafkaProducer
    ) -> None:
        """Transform (if the task has an SMT chain), convert and produce a run of polled
        records: what every delivery guarantee sends."""
        tap = self.tap  # the record inspector: None unless someone watches
        if tap is not None:
            tap.on_source_polled(_sampleable(records))
        if self._transforms is None:
            self._sender.send(records, producer)
            return
        listed = records if type(records) is list else list(records)  # a batch: its records
        self._check_items(listed)  # not a tolerable transformation failure
        self._sender.send(self._transform(listed), producer)

    def while_paused(self) -> None:
        if self._producer is not None:
            self._producer.poll(0)

    def _checked(self, polled: Any) -> list[SourceRecord] | SourceRecordBatch:
        """A ``poll()`` result that is neither None nor a list, as delivered; fails the task
        with a readable message when it is not a batch or a tuple
        (:mod:`connectrt.runtime.source.poll_results`)."""
        try:
            return checked_poll_result(self.task, polled)
        except BadPollResult as e:
            raise TaskFailure(self.id, TaskStage.TASK_POLL, str(e)) from None

    def _check_items(self, records: list[Any], cause: BaseException | None = None) -> None:
        """Fail the task, naming it and the item, if a polled list holds a non-record."""
        message = bad_item_message(self.task, records)
        if message is not None:
            raise TaskFailure(self.id, TaskStage.TASK_POLL, message) from cause

    def _transform(self, records: list[SourceRecord]) -> list[SourceRecord]:
        """Apply the SMT chain; dropped or tolerated records are skipped (their offsets still
        committed, ``commit_record(r, None)``)."""
        assert self._transforms is not None
        return transform_records(self._transforms, records, self.errors, self._sender.skipped)

    def commit_offsets(self) -> bool:
        """Make the pending offsets durable, once all produced records are acknowledged (or in
        the open transaction, exactly-once).

        Returns True when a commit happened (or there was nothing to commit).
        """
        producer = self._producer
        if producer is None:
            return False
        self.call_clock.enter("commit")  # waits for acks, then commit()/commit_record()
        try:
            return self._delivery.commit(producer, self._sender.check_delivery)
        finally:
            self.call_clock.leave()
            self._acks.acknowledged(self._sender.produced, len(producer))  # flushed: acked

    def _commit_at_stop(self) -> bool:
        """The last commit: none after a failed delivery, whose offset must not be stored."""
        if self._sender.delivery_error is not None:
            return False
        return self.commit_offsets()

    def _final_commit(self) -> None:
        try:
            if self._producer is not None:
                self._delivery.on_stop(self._producer, self.failed_already, self._commit_at_stop)
        finally:
            self._close_producer()

    def _close_producer(self) -> None:
        self.errors.close()
        producer, self._producer = self._producer, None
        self._delivery.close(producer)
        if producer is not None:
            producer.flush(min(self._flush_timeout, 5.0))

    def close_after_failure(self) -> None:
        try:
            self.task.stop()
        finally:
            self._close_producer()


def _sampleable(records: SourceRecordBatch | list[SourceRecord]) -> Sequence[SourceRecord]:
    """The polled records for the tap, without building a columnar batch's records (which
    would take the batch off its fast path)."""
    if isinstance(records, SourceRecordBatch):
        return records.records() if records.records_built else _BatchRecords(records)
    return records


class _BatchRecords(Sequence[SourceRecord]):
    """A columnar batch seen as a sequence of records, each built when asked for (the tap's
    sampling reads a few)."""

    def __init__(self, batch: SourceRecordBatch) -> None:
        self._batch = batch

    def __len__(self) -> int:
        return len(self._batch)

    @overload
    def __getitem__(self, i: int) -> SourceRecord: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[SourceRecord]: ...

    def __getitem__(self, i: int | slice) -> SourceRecord | Sequence[SourceRecord]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        b = self._batch
        return SourceRecord(
            b.source_partition,
            b.source_offsets[i],
            b.topic,
            value_schema=b.value_schema,
            value=b.values[i],
            timestamp=b.timestamp,
        )
