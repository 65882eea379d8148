"""Runs a SourceTask: poll -> transform -> convert and produce -> commit acknowledged offsets.

The task's thread polls a batch, applies the SMT chain, and hands the batch to the task's
:class:`~connectrt.runtime.source.sender.SourceBatchSender`, which converts and produces it (the
hot path: batch conversion, positional ``produce`` calls without per-record callbacks, the
batch's source offsets noted once) and watches for failed deliveries.

Offsets are committed every ``offset.flush.interval.ms`` and on stop, once every record
produced before them is acknowledged: at-least-once, never lost (see
:class:`~connectrt.runtime.source.offsets.SourceOffsetCommitter`, which holds and commits them).
A connector running exactly-once (KIP-618) instead writes records and their offsets in one
transaction per boundary (``transaction.boundary``: after each non-empty poll, every
``transaction.boundary.interval.ms``, or when the task asks through its
``TransactionContext``); see :mod:`connectrt.runtime.source.transactions`. On a failure, and on
stop with connector-defined boundaries, the open transaction is aborted. A transaction lost to the
broker (an outage longer than a commit may ride out:
:mod:`connectrt.runtime.source.transaction_errors`) does not fail the task: the runner restarts it
in place, on its own thread, from the committed offsets
(:meth:`SourceTaskRunner._restart_transactional`,
:mod:`connectrt.runtime.source.transaction_restart`): the old task is stopped and its producer
destroyed, a new producer's ``init_transactions()`` (retried until the broker answers) fences the
old one and finishes its transaction, the offsets topic is read again, and a new instance of the
task class starts from what the last committed transaction stored. The task reports RESTARTING
meanwhile. The task's context lives in :mod:`connectrt.runtime.tasks.contexts`.

``poll()`` returns None, a list (or tuple) of records or a ``SourceRecordBatch``; anything else
fails the task with a message naming its class and what it returned
(:mod:`connectrt.runtime.source.poll_results`).

Why one module a little over the house size: the loop, its boundaries and the in-place restart
all change what ``_loop`` runs with (task, producer, transaction state) and read together.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

from confluent_kafka import Producer

from connectrt.api.records import SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import SourceTask
from connectrt.errors import RetriableError
from connectrt.runtime.config.exactly_once import (
    BOUNDARY_CONNECTOR,
    BOUNDARY_INTERVAL,
    BOUNDARY_POLL,
)
from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl
from connectrt.runtime.source.offsets import SourceOffsetCommitter
from connectrt.runtime.source.poll_results import (
    BadPollResult,
    bad_item_message,
    checked_poll_result,
)
from connectrt.runtime.source.sender import RecordMetadata, SourceBatchSender
from connectrt.runtime.source.transaction_errors import TransactionLost, task_lost_reason
from connectrt.runtime.source.transaction_restart import discard, fresh_task, reopen
from connectrt.runtime.source.transactions import TransactionalOffsets, TransactionContextImpl
from connectrt.runtime.status import State, TargetState
from connectrt.runtime.tasks.contexts import SourceTaskContextImpl
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskRunner, TaskStage
from connectrt.runtime.tasks.settings import SourceRunnerSettings
from connectrt.runtime.tasks.transforms import transform_records
from connectrt.transforms.chain import TransformationChain

log = logging.getLogger(__name__)

__all__ = ["RecordMetadata", "SourceTaskRunner"]


class SourceTaskRunner(TaskRunner):
    """Runs one SourceTask on its own thread (see the module docstring)."""

    def __init__(self, task_id: TaskId, task: SourceTask, settings: SourceRunnerSettings) -> None:
        super().__init__(
            task_id, settings.task_config, settings.status, settings.target_state, settings.on_topic
        )
        self._transforms: TransformationChain[SourceRecord] | None = (
            settings.transforms if settings.transforms else None
        )
        self.errors = settings.errors or ErrorHandler(task_id, ErrorPolicy(), self.metrics)
        self.errors.metrics = self.metrics
        self.task = task
        self.converters = settings.converters
        self._producer_config = settings.producer_config
        self._producer_factory = settings.producer_factory
        self._store = settings.offset_store
        self._flush_interval = settings.offset_flush_interval_ms / 1000.0
        self._flush_timeout = settings.offset_flush_timeout_ms / 1000.0
        self._producer: Producer | None = None
        self._client_config: dict[str, Any] = {}  # the producer's, set by execute()
        self.failed_already = False
        self._txn: TransactionalOffsets | None = None
        self._txn_context: TransactionContextImpl | None = None
        self._offsets: SourceOffsetCommitter | TransactionalOffsets
        eos = settings.exactly_once
        if eos is not None:
            assert settings.exactly_once_store is not None
            self._txn = TransactionalOffsets(
                task_id,
                task,
                eos,
                settings.exactly_once_store,
                self.errors,
                self.metrics,
                max(self._flush_timeout, 30.0),
                stopping=lambda: self.stopping,
            )
            self._offsets = self._txn
            if eos.boundary == BOUNDARY_CONNECTOR:
                self._txn_context = TransactionContextImpl()
            if eos.boundary == BOUNDARY_INTERVAL:
                self._flush_interval = eos.interval_ms / 1000.0
        else:
            self._offsets = SourceOffsetCommitter(
                task_id, task, self._store, self.errors, self.metrics, self._flush_timeout
            )
        self._sender = SourceBatchSender(
            task_id,
            task,
            converters=settings.converters,
            errors=self.errors,
            metrics=self.metrics,
            offsets=self._offsets,
            topic_creator=settings.topic_creator,
            on_topic=lambda topic: self.on_topic(topic),
            stopping=lambda: self.stopping,
        )

    @property
    def topics(self) -> set[str]:
        """Topics this task has produced to (for topic tracking)."""
        return set(self._sender.topics)

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
        store = self._store
        if self._txn is not None:
            # Exactly-once: fence older instances and read the committed offsets first, so
            # the task starts from what the last committed transaction stored.
            self._producer = self._producer_factory(cfg)
            self._txn.open(self._producer)
            store = self._txn.store
        reader = OffsetStorageReaderImpl(store, self.id.connector)
        self.task.initialize(
            SourceTaskContextImpl(self.task_config, reader, self.plugin_metrics, self._txn_context)
        )
        self.call_clock.enter("start")
        self.task.start(self.task_config)
        self.call_clock.leave()
        if self._producer is None:
            self._producer = self._producer_factory(cfg)
        self.report_running_or_paused()
        try:
            while True:
                reason = self._loop_until_lost()
                if reason is None or not self._restart_transactional(reason):
                    break  # done, or stopped while restarting
        except BaseException:
            self._close_transforms()
            # At-least-once: still store the offsets of what was acknowledged before the
            # failure. Exactly-once: abort the open transaction.
            self.failed_already = True
            try:
                self._final_commit()
            except Exception:
                log.exception("Task %s: final offset commit after failure failed", self.id)
            raise
        self._close_transforms()
        self._final_commit()

    def _loop_until_lost(self) -> str | None:
        """Run the loop; None when it ends (the task stops), or why its transaction was lost
        to the broker. Returns outside the ``except`` clause on purpose: the exception's
        traceback holds the frames that refer to the old producer, and that producer must be
        destroyed before a new one initializes (a live one re-acquires its producer id in the
        background and would fence the new one)."""
        try:
            self._loop()
        except Exception as e:
            reason = None if self._txn is None else task_lost_reason(e)
            if reason is None:
                raise
            return reason
        return None

    def _restart_transactional(self, reason: str) -> bool:
        """Restart an exactly-once task whose transaction was lost to the broker, from its
        committed offsets (see the module docstring). Waits, retrying with a doubling backoff,
        until the broker answers ``init_transactions()`` and the offsets topic can be read.
        False when the task is stopped meanwhile; the new task is then stopped too."""
        txn = self._txn
        assert txn is not None
        self.metrics.transaction_restarts += 1
        log.warning(
            "Task %s: %s; restarting the task from its last committed offsets on a new "
            "producer (transactional.id %s)",
            self.id,
            reason,
            txn.settings.transactional_id,
        )
        if not self._abandoned:
            self.status.put(self.id.connector, self.id.task, State.RESTARTING)
        old, self._producer = self._producer, None
        if old is not None:
            txn.drop(old, reason, fatal=False)
            discard(old)
            del old  # the last reference: librdkafka destroys the producer now
            gc.collect()  # and at once, should a reference cycle still hold it
        self._sender.delivery_error = None
        try:
            self.task.stop()
        except Exception:
            log.exception("Task %s: error calling stop() before its restart", self.id)
        txn.close()
        producer = reopen(
            self.id,
            txn,
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
        txn = self._txn
        assert txn is not None
        task = fresh_task(self.task, self.metrics)
        if self._txn_context is not None:
            self._txn_context = TransactionContextImpl()
        reader = OffsetStorageReaderImpl(txn.store, self.id.connector)
        task.initialize(
            SourceTaskContextImpl(self.task_config, reader, self.plugin_metrics, self._txn_context)
        )
        self.task = task
        self._sender.task = task
        txn.set_task(task)
        self.call_clock.enter("start")
        try:
            task.start(self.task_config)
        except Exception as e:
            raise TaskFailure(self.id, TaskStage.TASK_START, repr(e)) from e
        finally:
            self.call_clock.leave()

    def _close_transforms(self) -> None:
        if self._transforms is not None:
            try:
                self._transforms.close()
            except Exception:
                log.exception("Task %s: error closing transformations", self.id)

    def _loop(self) -> None:
        producer = self._producer
        assert producer is not None
        task = self.task
        metrics = self.metrics
        send = self._sender.send
        check_delivery = self._sender.check_delivery
        clock = self.call_clock
        txn = self._txn
        # At-least-once: offsets every offset.flush.interval.ms; exactly-once: only the
        # interval boundary commits on a timer (transaction.boundary.interval.ms).
        timed_commits = txn is None or txn.settings.boundary == BOUNDARY_INTERVAL
        # task.rate.limit.bytes.per.sec counts the produced bytes, which the sender then sums.
        self._sender.count_bytes = self.rate_limiter is not None and self.rate_limiter.limits_bytes
        next_commit = time.monotonic() + self._flush_interval
        while not self.stopping:
            if self.target_state is TargetState.PAUSED:
                if txn is not None and txn.settings.boundary != BOUNDARY_CONNECTOR:
                    self.commit_offsets()  # no transaction left open while paused
                if not self.wait_while_paused():
                    break
            clock.enter("poll")
            try:
                records = task.poll()
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
                metrics.records_polled += len(records)
                try:
                    if txn is not None:
                        self._send_in_transactions(records, producer)
                    elif self._transforms is not None:  # a SourceRecordBatch: its records
                        listed = records if type(records) is list else list(records)
                        self._check_items(listed)  # not a tolerable transformation failure
                        send(self._transform(listed), producer)
                    else:
                        send(records, producer)
                except (AttributeError, TypeError) as e:
                    if type(records) is list:
                        self._check_items(records, e)  # an item that is not a record
                    raise
                if limiter is not None and limiter.limits_bytes:
                    limiter.charge(self._sender.take_sent_bytes())  # waited off at next admit
                metrics.observe_batch(time.perf_counter() - t0)
            if txn is not None:
                self._at_boundary(producer, bool(records))
            producer.poll(0)
            check_delivery()
            if timed_commits and time.monotonic() >= next_commit:
                self.commit_offsets()
                next_commit = time.monotonic() + self._flush_interval

    def _send_in_transactions(
        self, polled: list[SourceRecord] | SourceRecordBatch, producer: Producer
    ) -> None:
        """Exactly-once: send a polled batch inside the open transaction (opening one). With
        connector-defined boundaries the batch is cut after each record the task named in a
        ``commit_transaction(record)``/``abort_transaction(record)``, which is acted on there."""
        txn = self._txn
        assert txn is not None
        ctx = self._txn_context
        records: list[SourceRecord] | SourceRecordBatch = polled
        if isinstance(polled, SourceRecordBatch) and (
            self._transforms is not None or ctx is not None
        ):
            records = list(polled)  # a batch cut into segments or transformed: its records
        segments: list[tuple[list[SourceRecord] | SourceRecordBatch, str | None]] = [
            (records, None)
        ]
        if ctx is not None and ctx.at:
            segments = []
            start = 0
            for i, record in enumerate(records):
                request = ctx.at.pop(id(record), None)
                if request is not None and request[0] is record:
                    segments.append((records[start : i + 1], request[1]))
                    start = i + 1
            if start < len(records):
                segments.append((records[start:], None))
        for segment, action in segments:
            txn.begin(producer)
            if self._transforms is not None:
                segment = self._transform(segment if isinstance(segment, list) else list(segment))
            self._sender.send(segment, producer)
            if action == "commit":
                self.commit_offsets()
            elif action == "abort":
                txn.abort(producer, reason="abort_transaction(record) by the task")

    def _at_boundary(self, producer: Producer, polled: bool) -> None:
        """Exactly-once, after a poll: commit at a ``poll`` boundary (a non-empty batch), or
        act on the task's ``commit_transaction()``/``abort_transaction()`` request."""
        txn = self._txn
        assert txn is not None
        ctx = self._txn_context
        if ctx is None:
            if polled and txn.settings.boundary == BOUNDARY_POLL:
                self.commit_offsets()
            return
        request, ctx.pending = ctx.pending, None
        if request == "commit":
            self.commit_offsets()
        elif request == "abort":
            txn.abort(producer, reason="abort_transaction() by the task")

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
        """Store the pending offsets once all produced records are acknowledged.

        Returns True when a commit happened (or there was nothing to commit).
        """
        producer = self._producer
        if producer is None:
            return False
        self.call_clock.enter("commit")  # waits for acks, then commit()/commit_record()
        try:
            return self._offsets.commit(producer, self._sender.check_delivery)
        finally:
            self.call_clock.leave()

    def _final_commit(self) -> None:
        try:
            txn = self._txn
            if (
                txn is not None
                and self._producer is not None
                and (self.failed_already or txn.settings.boundary == BOUNDARY_CONNECTOR)
            ):
                # A failed task's open transaction, or one the task did not end itself
                # (connector-defined boundaries), is aborted, never committed.
                txn.abort(self._producer, reason="task stopping")
                return
            if self._producer is not None and self._sender.delivery_error is None:
                try:
                    self.commit_offsets()
                except TransactionLost as e:
                    # Stopping while the broker is away: what did not commit is re-polled by
                    # the task's next start, whose init_transactions() ends this transaction.
                    log.warning("Task %s: last transaction not committed at stop: %s", self.id, e)
        finally:
            self._close_producer()

    def _close_producer(self) -> None:
        self.errors.close()
        producer, self._producer = self._producer, None
        if producer is not None:
            if self._txn is not None and self._txn.in_transaction:
                self._txn.abort(producer, reason="producer closing")
            producer.flush(min(self._flush_timeout, 5.0))
        if self._txn is not None:
            self._txn.close()

    def close_after_failure(self) -> None:
        try:
            self.task.stop()
        finally:
            self._close_producer()
