"""Runs a SinkTask: consume in batches -> convert -> put -> commit offsets after flush.

Consumer offsets are committed only for records ``put()`` accepted, and only after
``SinkTask.pre_commit()`` (by default ``flush()``) returned, every ``offset.flush.interval.ms``,
on ``context.request_commit()``, before partitions are revoked, and on stop
(:class:`~connectrt.runtime.sink.offsets.SinkOffsetCommitter` keeps the offsets and commits
them). A crash therefore redelivers at most what was put since the last commit
(at-least-once); nothing committed is ever lost.

Rebalance callbacks run inside ``consume()`` on the task thread, so the task's ``open``/
``close`` are called on the same thread as ``put``, with only the partitions added or removed,
whatever the rebalance protocol (eager, ``cooperative-sticky`` or KIP-848's
``group.protocol=consumer``; :mod:`connectrt.runtime.sink.assignment`): the offsets of a revoked
partition are committed before it goes, and a failure inside a callback fails the task once
``consume()`` returned. Memory is bounded by the consumer's
prefetch cap (``queued.max.messages.kbytes``) and the batch size (``max.poll.records``): a slow
``put`` simply stops the consumer from fetching more.

Hot path: ``put()`` receives a :class:`~connectrt.api.SinkRecordBatch`, built by
:mod:`connectrt.runtime.sink.conversion` (as columns, or record by record with transformations
or when a converter failed on a message of the batch). Once ``put()`` took a batch (or when
every record of it was skipped), the offsets advance, per partition, to after its last
consumed message.

This module is the per-batch loop (consume, convert, put) and what must happen between its
batches on the task thread (rebalance callbacks, pause/resume, rewinds). ``put()`` with retries
and the commit step are the sink lifecycle's (:mod:`connectrt.runtime.sink.lifecycle`, shared
with the Spark bridge); the offset bookkeeping and the task's context live in
:mod:`connectrt.runtime.sink.offsets` and :mod:`connectrt.runtime.tasks.contexts`. The consumer
is any :class:`~connectrt.runtime.clients.kafka.KafkaConsumer` (``consumer_factory``; the unit
tests of the commit rules pass the in-memory one of :mod:`connectrt.testing.fake_kafka`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from typing import Any

from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import TopicPartition
from connectrt.api.task import SinkTask
from connectrt.errors import RetriableError
from connectrt.runtime.clients.group_protocol import assigns_incrementally
from connectrt.runtime.clients.kafka import KafkaConsumer, KafkaException
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.sink.assignment import SinkAssignment
from connectrt.runtime.sink.latency import observe_put, timestamps_sample
from connectrt.runtime.sink.lifecycle import put_with_retries
from connectrt.runtime.sink.offsets import SinkOffsetCommitter
from connectrt.runtime.sink.runner_base import SinkRunnerBase, subscription
from connectrt.runtime.sink.start_offsets import reset_offset
from connectrt.runtime.status import TargetState
from connectrt.runtime.tasks.contexts import SinkTaskContextImpl
from connectrt.runtime.tasks.rate_limit import message_bytes
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.runtime.tasks.settings import SinkRunnerSettings
from connectrt.runtime.tasks.topic_schemas import note_topic_schema

log = logging.getLogger(__name__)

__all__ = ["SinkTaskRunner"]

_MIN_RETRY_BACKOFF_S = 0.1

_CONSUME_TIMEOUT_S = 0.5

# librdkafka notices a subscribed topic created after the group join only at its next metadata
# refresh (5 minutes by default), and a sink started beside the source that creates its topic
# then idles that long. For named topics the refresh asks about those topics alone, so a short
# interval is cheap; a ``topics.regex`` subscription refreshes the whole cluster's metadata and
# keeps librdkafka's default. ``consumer.topic.metadata.refresh.interval.ms`` (or the
# ``consumer.override.`` form) still wins.
_NAMED_TOPICS_METADATA_REFRESH_MS = 5000


class SinkTaskRunner(SinkRunnerBase):
    """Runs one SinkTask on its own thread (see the module docstring)."""

    def __init__(self, task_id: TaskId, task: SinkTask, settings: SinkRunnerSettings) -> None:
        super().__init__(task_id, task, settings)
        self._consumer_config = settings.consumer_config
        self._consumer_factory = settings.consumer_factory
        self._flush_interval = settings.offset_flush_interval_ms / 1000.0
        self._max_poll = settings.max_poll_records
        self._consumer: KafkaConsumer | None = None
        self._user_paused: set[TopicPartition] = set()
        self._all_paused = False
        self._schema_looks = 100  # batches whose first record's schema is noted (lineage)
        self._offsets = SinkOffsetCommitter(task_id, task, self.errors, self.metrics)
        self._assignment = SinkAssignment(
            task_id,
            task,
            self.rewinds,
            self._offsets,
            self._commit,
            lambda tp: self._all_paused or tp in self._user_paused,
            lambda topic: self.on_topic(topic),
        )
        self.assigned = self._assignment.assigned  # the same set, read by the context

    # -- pause/resume ---------------------------------------------------------------------------
    def pause_partitions(self, partitions: Collection[TopicPartition]) -> None:
        self._user_paused.update(partitions)
        if self._consumer is not None:
            tps = [KafkaTopicPartition(t, p) for t, p in partitions if (t, p) in self.assigned]
            if tps:
                self._consumer.pause(tps)

    def resume_partitions(self, partitions: Collection[TopicPartition]) -> None:
        self._user_paused.difference_update(partitions)
        if self._consumer is not None and not self._all_paused:
            tps = [KafkaTopicPartition(t, p) for t, p in partitions if (t, p) in self.assigned]
            if tps:
                self._consumer.resume(tps)

    def _apply_target_state(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        want_paused = self.target_state is TargetState.PAUSED
        if want_paused == self._all_paused:
            return
        tps = [KafkaTopicPartition(t, p) for t, p in self.assigned]
        if want_paused:
            if tps:
                consumer.pause(tps)
        else:
            resume = [tp for tp in tps if (tp.topic, tp.partition) not in self._user_paused]
            if resume:
                consumer.resume(resume)
        self._all_paused = want_paused
        self.report_running_or_paused()

    # -- main loop --------------------------------------------------------------------------
    def execute(self) -> None:
        self.errors.open()  # the dead letter queue, before anything is consumed
        self.task.initialize(SinkTaskContextImpl(self))
        self.call_clock.enter("start")
        self.task.start(self.task_config)
        self.call_clock.leave()
        config = dict(self._consumer_config)
        if not self.task_config.get("topics.regex", "").strip():
            config.setdefault(
                "topic.metadata.refresh.interval.ms", _NAMED_TOPICS_METADATA_REFRESH_MS
            )
        assignment = self._assignment
        assignment.incremental = assigns_incrementally(config)
        assignment.start_reset = reset_offset(config)
        consumer = self._consumer = self._consumer_factory(config)
        topics = subscription(self.task_config)
        consumer.subscribe(
            topics,
            on_assign=assignment.on_assign,
            on_revoke=assignment.on_revoke,
            on_lost=assignment.on_lost,
        )
        self.report_running_or_paused()
        self._all_paused = False
        try:
            self._loop(consumer)
        except BaseException:
            self._shutdown(commit=False)  # a failed task's buffered writes are not trusted
            raise
        self._shutdown(commit=True)

    def _loop(self, consumer: KafkaConsumer) -> None:
        next_commit = time.monotonic() + self._flush_interval
        metrics = self.metrics
        assignment = self._assignment
        tracer = self.tracer  # tracing.enabled (connectrt.runtime.sink.tracing), else None
        while not self.stopping:
            self._apply_target_state()
            epoch = assignment.epoch
            try:
                if tracer is None:
                    msgs = consumer.consume(self._max_poll, _CONSUME_TIMEOUT_S)
                else:
                    msgs = tracer.consume(consumer, self._max_poll, _CONSUME_TIMEOUT_S)
            except KafkaException as e:
                assignment.raise_failure()
                raise TaskFailure(self.id, TaskStage.KAFKA_CONSUME, str(e)) from e
            assignment.raise_failure()  # a rebalance callback failed inside consume()
            if msgs and epoch != assignment.epoch:
                msgs = assignment.still_assigned(msgs)
            if msgs:
                limiter = self.rate_limiter  # task.rate.limit.*: nothing consumed while waiting
                if limiter is not None and not limiter.admit(
                    len(msgs), message_bytes(msgs) if limiter.limits_bytes else 0
                ):
                    break  # stopping: the batch is not put, so not committed
                t0 = time.perf_counter()
                self._handle(msgs)
                metrics.observe_batch(time.perf_counter() - t0)
            if self.rewinds:
                self._apply_rewinds(consumer)
            if self.commit_requested or time.monotonic() >= next_commit:
                self.commit_requested = False
                self._commit()
                next_commit = time.monotonic() + self._flush_interval

    def _handle(self, msgs: list[Any]) -> None:
        """One consumed batch: converted (:mod:`connectrt.runtime.sink.conversion`), then
        ``put()``. Once ``put()`` took the batch, the offsets advance over every consumed
        message, delivered or skipped; a batch whose every record was skipped is not put, its
        offsets advance all the same."""
        msgs = self._messages_of(msgs)
        if not msgs:
            return
        self.metrics.records_polled += len(msgs)
        tap = self.tap  # the record inspector: None unless someone watches
        if tap is not None:
            tap.on_sink_consumed(msgs)
        stamps = timestamps_sample(msgs)  # end-to-end latency, observed once put() took them
        converted = self._conversion.convert(msgs)
        if converted.batch is None:
            # Every record was skipped (tolerated, sent to the DLQ, or dropped by a
            # transform): commit past them as Kafka does, or a restart redelivers them
            # (and duplicates them in the DLQ).
            self._offsets.accepted(converted.first_offsets, converted.next_offsets)
            return
        batch = converted.batch
        if tap is not None:
            tap.on_sink_put(batch)
        if self._schema_looks and len(batch):  # the first batches: their topics' value schemas
            self._schema_looks -= 1
            note_topic_schema(self.metrics, batch.topics[0], batch.value_schemas[0])
        self._deliver(batch, converted.first_offsets, converted.next_offsets, stamps)

    def _deliver(
        self,
        batch: SinkRecordBatch,
        first_offsets: Mapping[tuple[str, int], int],
        next_offsets: Mapping[tuple[str, int], int],
        stamps: list[int],
    ) -> None:
        """put() with retries on RetriableError (:func:`~.lifecycle.put_with_retries`); then
        advance the put offsets and observe the batch's end-to-end latency (``stamps``: a
        sample of its Kafka timestamps, :mod:`connectrt.runtime.sink.latency`)."""
        epoch = self._assignment.epoch
        count = len(batch)  # before put(): the task may change the batch

        def retry(error: RetriableError, _attempt: int) -> bool:
            self.metrics.retries += 1
            delay = max(self.retry_timeout_s, _MIN_RETRY_BACKOFF_S)
            log.warning(
                "Task %s: retriable error from put(), redelivering the batch of %d in %.1fs: %s",
                self.id,
                count,
                delay,
                error,
            )
            if self._stopping.wait(delay):
                return False  # not put: uncommitted, so redelivered after restart
            if epoch != self._assignment.epoch:
                # Not put. Revoked partitions are redelivered to their new owner; those
                # still owned (incremental rebalances keep them) are read again from here.
                for tp, offset in first_offsets.items():
                    if TopicPartition(*tp) in self.assigned:
                        self.rewinds.setdefault(TopicPartition(*tp), offset)
                return False
            return True

        try:
            took = put_with_retries(self.task, batch, retry, self.call_clock)
        except Exception as e:
            raise TaskFailure(self.id, TaskStage.TASK_PUT, repr(e)) from e
        if took:
            self._offsets.accepted(first_offsets, next_offsets)
            self.metrics.records_put += count
            observe_put(self.metrics, stamps, count)

    def _apply_rewinds(self, consumer: KafkaConsumer) -> None:
        for tp, offset in list(self.rewinds.items()):
            if tp not in self.assigned:
                continue  # applied by the assignment when the partition arrives
            try:
                consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
            except KafkaException as e:
                log.debug("Task %s: seek %s to %d deferred: %s", self.id, tp, offset, e)
                continue
            del self.rewinds[tp]
            self._offsets.moved(tp, offset)

    def _commit(self, only: set[TopicPartition] | None = None) -> None:
        consumer = self._consumer
        if consumer is None or not self.assigned:
            return
        self.call_clock.enter("commit")  # pre_commit()/flush() and the consumer commit
        try:
            self._offsets.commit(consumer, self.assigned, only)
        finally:
            self.call_clock.leave()

    def _shutdown(self, commit: bool) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        try:
            if commit:
                self._commit()
        finally:
            mine = list(self.assigned)
            self._assignment.release(mine)
            self._consumer = None
            try:
                if mine:
                    self.task.close(mine)
            finally:
                try:
                    self.call_clock.enter("stop")
                    self.task.stop()
                finally:
                    consumer.close()
                    self.errors.close()
                    self._close_transforms()
