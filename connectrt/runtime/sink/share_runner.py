"""Runs a SinkTask as a member of a share group (KIP-932; ``consumer.group.type=share``).

Every task of the connector subscribes the share group ``connect-<name>`` to the connector's
topics; the broker hands each record to one member at a time (*acquires* it for the group's
``share.record.lock.duration.ms``), so any number of tasks read one partition and ``tasks.max``
may exceed the partition count. Per acquired batch, on the task thread, in chunks of
``max.poll.records`` (the broker acquires whole record batches, so one poll may bring many
more; what is still in hand half a lock duration after the poll is released for the other
tasks, :meth:`ShareSinkTaskRunner._handle`):

1. the batch is converted (and transformed) as in a consumer-group sink
   (:class:`~connectrt.runtime.sink.conversion.SinkConversion`): failures go through
   ``errors.*`` (retried, tolerated, sent to the dead letter queue);
2. ``put(batch)``, then the commit step (the dead letter queue flushed, then
   ``pre_commit(offsets)``, by default ``flush``) with, per partition, the offset after the
   batch's last record;
3. the batch is acknowledged (:class:`~connectrt.runtime.sink.share_acks.BatchAcks`): ACCEPT
   what was written or skipped, REJECT what a tolerated failure dropped without a dead letter
   queue, and the acknowledgements sent before the next poll (librdkafka's explicit mode wants
   every record of a poll acknowledged before the next; each chunk's are sent at once).

A RetriableError from ``put()`` RELEASEs the whole batch for redelivery (to any task) and this
task backs off (``context.timeout()``, at least 100 ms) before it polls again: the broker's
delivery count is the retry budget. A batch whose records are on their last delivery is not
released (the broker would archive it): each of them is a failure of stage TASK_PUT under
``errors.*``, so ``errors.tolerance=all`` sends it to the dead letter queue (then ACCEPTs it)
or REJECTs it, and ``none`` fails the task. Any other exception fails the task: its
unacknowledged records go back to the group when its consumer leaves, or when their locks
expire if the process died. So a crash redelivers at most the batch in hand (at-least-once).

What a share group cannot do: seek (``context.offset()`` is logged and ignored), pause single
partitions (``context.pause()`` likewise; pausing the connector stops polling),
``topics.regex`` (refused by validation). ``open()`` is called for a partition the first time
a record of it arrives, ``close()`` for all of them when the task stops. Before the first
poll the runtime sets the group's configs through the admin API
(:func:`~connectrt.runtime.clients.share_consumer.configure_share_group`): a broker without
share groups fails the task with that reason.

What does not depend on the kind of group (the task's context requests, the conversion, the
record inspector's stages, consumer error events) is
:class:`~connectrt.runtime.sink.runner_base.SinkRunnerBase`'s; the inspector samples each chunk
as consumed and as handed to ``put()``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.api.task import SinkTask
from connectrt.errors import RetriableError
from connectrt.runtime.clients.kafka import KafkaException
from connectrt.runtime.clients.share_consumer import (
    KafkaShareConsumer,
    ShareGroupsUnavailable,
    configure_share_group,
    new_share_consumer,
    share_consumer_config,
)
from connectrt.runtime.sink.lifecycle import pre_commit
from connectrt.runtime.sink.runner_base import SinkRunnerBase, subscription
from connectrt.runtime.sink.share_acks import BatchAcks, Coordinates, coordinates
from connectrt.runtime.status import TargetState
from connectrt.runtime.tasks.contexts import SinkTaskContextImpl
from connectrt.runtime.tasks.error_handling import Failure
from connectrt.runtime.tasks.rate_limit import message_bytes
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage, class_path
from connectrt.runtime.tasks.settings import SinkRunnerSettings

log = logging.getLogger(__name__)

__all__ = ["ShareSinkRunnerSettings", "ShareSinkTaskRunner"]

_POLL_TIMEOUT_S = 0.5
_MIN_RETRY_BACKOFF_S = 0.1
_ADMIN_TIMEOUT_S = 30.0
_DEFAULT_DELIVERY_LIMIT = 5
_DEFAULT_LOCK_MS = 30000
_LOCK_BUDGET = 0.5  # of the lock duration, to write what one poll acquired


@dataclass(frozen=True)
class ShareSinkRunnerSettings(SinkRunnerSettings):
    """A share-group sink runner's settings: those of a sink runner (``consumer_config`` is the
    consumer-group config the share consumer's is derived from), the share group's id and the
    group configs to set (``group_settings``) with the admin client config to set them
    (``group_configurer`` sets them; unit tests pass their own, and a share consumer
    factory)."""

    group_id: str = ""
    admin_config: dict[str, Any] = field(default_factory=dict)
    group_settings: dict[str, str] = field(default_factory=dict)
    share_consumer_factory: Callable[[dict[str, Any]], KafkaShareConsumer] = new_share_consumer
    # (admin config, group id, group configs to set, timeout) -> the group's share.* configs
    group_configurer: Callable[[dict[str, Any], str, dict[str, str], float], dict[str, str]] = (
        configure_share_group
    )


class ShareSinkTaskRunner(SinkRunnerBase):
    """Runs one SinkTask in a share group on its own thread (see the module docstring)."""

    def __init__(self, task_id: TaskId, task: SinkTask, settings: ShareSinkRunnerSettings) -> None:
        super().__init__(task_id, task, settings)
        self._settings = settings
        self._consumer: KafkaShareConsumer | None = None
        self.assigned: set[TopicPartition] = set()  # partitions opened (records seen)
        self.group_configs: dict[str, str] = {}
        self._delivery_limit = _DEFAULT_DELIVERY_LIMIT
        self._lock_s = _DEFAULT_LOCK_MS / 1000
        self._tolerated: set[Coordinates] = set()

    # -- SinkTaskControls: what a share group cannot do is logged -----------------------------
    def pause_partitions(self, partitions: Collection[TopicPartition]) -> None:
        log.warning(
            "Task %s: a share-group sink cannot pause single partitions; ignoring pause(%s)",
            self.id,
            sorted(partitions),
        )

    def resume_partitions(self, partitions: Collection[TopicPartition]) -> None:
        pass

    # -- main loop ------------------------------------------------------------------------------
    def execute(self) -> None:
        settings = self._settings
        self.errors.open()
        self.errors.on_tolerated = self._on_tolerated
        self.task.initialize(SinkTaskContextImpl(self))
        self.call_clock.enter("start")
        self.task.start(self.task_config)
        self.call_clock.leave()
        try:
            self.group_configs = settings.group_configurer(
                settings.admin_config, settings.group_id, settings.group_settings, _ADMIN_TIMEOUT_S
            )
            consumer = self._consumer = settings.share_consumer_factory(
                share_consumer_config(settings.consumer_config, settings.max_poll_records)
            )
        except (ShareGroupsUnavailable, ValueError) as e:
            self._stop_task()
            raise TaskFailure(self.id, TaskStage.KAFKA_CONSUME, str(e)) from e
        limit = self.group_configs.get("share.delivery.count.limit", "")
        self._delivery_limit = int(limit) if limit.isdigit() else _DEFAULT_DELIVERY_LIMIT
        lock = self.group_configs.get("share.record.lock.duration.ms", "")
        self._lock_s = (int(lock) if lock.isdigit() else _DEFAULT_LOCK_MS) / 1000
        log.info(
            "Task %s: member of share group %s (%s)",
            self.id,
            settings.group_id,
            ", ".join(f"{k}={v}" for k, v in sorted(self.group_configs.items())),
        )
        consumer.subscribe(subscription(self.task_config))
        self.report_running_or_paused()
        try:
            self._loop(consumer)
        except BaseException:
            self._shutdown()
            raise
        self._shutdown()

    def _loop(self, consumer: KafkaShareConsumer) -> None:
        acks = BatchAcks(self.id, consumer, self.metrics, self._delivery_limit)
        while not self.stopping:
            if self.target_state is TargetState.PAUSED and not self.wait_while_paused():
                break
            polled_at = time.monotonic()
            try:
                msgs = list(consumer.poll(_POLL_TIMEOUT_S))
            except KafkaException as e:
                raise TaskFailure(self.id, TaskStage.KAFKA_CONSUME, str(e)) from e
            if not msgs:
                continue
            msgs = self._messages_of(msgs)
            if not msgs:
                continue
            self.metrics.share_acquired += len(msgs)
            self.metrics.records_polled += len(msgs)
            t0 = time.perf_counter()
            self._handle(msgs, acks, polled_at + self._lock_s * _LOCK_BUDGET)
            self.metrics.observe_batch(time.perf_counter() - t0)

    def _handle(self, msgs: list[Any], acks: BatchAcks, deadline: float) -> None:
        """One acquired batch, in chunks of ``max.poll.records``, each converted, put, flushed
        and acknowledged before the next. The broker acquires whole record batches, so an
        acquisition may be far larger than ``max.poll.records``: what is still in hand once
        ``deadline`` (half the lock duration after the poll) passed is released for another
        task rather than written after its lock may have expired (which would duplicate it),
        except records on their last delivery (released, they would be archived)."""
        self._open_new(msgs)
        size = max(1, self._settings.max_poll_records)
        pending = msgs
        first = True
        while pending:
            if not first and (self.stopping or time.monotonic() > deadline):
                give = [m for m in pending if not acks.last_delivery(m)]
                if give:
                    pending = [m for m in pending if acks.last_delivery(m)]
                    log.debug(
                        "Task %s: releasing %d record(s) not written within half the lock duration",
                        self.id,
                        len(give),
                    )
                    acks.release(give, "not written within half the lock duration")
                if not pending:
                    return
            first = False
            chunk, pending = pending[:size], pending[size:]
            limiter = self.rate_limiter
            if limiter is not None and not limiter.admit(
                len(chunk), message_bytes(chunk) if limiter.limits_bytes else 0
            ):
                acks.release(chunk + pending, "the task stopped while rate limited")
                return
            error = self._deliver(chunk, acks)
            if error is not None:
                self._retriable(chunk + pending, acks, error)
                return

    def _deliver(self, msgs: list[Any], acks: BatchAcks) -> RetriableError | None:
        """Convert, put, flush and acknowledge ``msgs``; the RetriableError ``put()`` raised
        instead (nothing acknowledged then)."""
        self._tolerated = set()
        tap = self.tap  # the record inspector: None unless someone watches
        if tap is not None:
            tap.on_sink_consumed(msgs)
        converted = self._conversion.convert(msgs)
        offsets = {TopicPartition(*tp): o for tp, o in converted.next_offsets.items()}
        if converted.batch is not None:
            batch = converted.batch
            if tap is not None:
                tap.on_sink_put(batch)
            count = len(batch)
            self.call_clock.enter("put")
            try:
                self.task.put(batch)
            except RetriableError as e:
                self.metrics.retries += 1
                return e
            except Exception as e:
                raise TaskFailure(self.id, TaskStage.TASK_PUT, repr(e)) from e
            finally:
                self.call_clock.leave()
            self.metrics.records_put += count
        self._flush(offsets)
        rejected = set() if self.errors.policy.dlq_topic else self._tolerated
        acks.settle(msgs, rejected)
        self.metrics.records_committed += len(msgs)
        return None

    def _flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """The commit step before acknowledging: DLQ flushed, then ``pre_commit``/``flush``."""
        self.call_clock.enter("commit")
        try:
            pre_commit(self.task, self.errors, offsets)
            self.metrics.offset_commits += 1
        except Exception as e:
            self.metrics.offset_commit_failures += 1
            raise TaskFailure(self.id, TaskStage.TASK_COMMIT, repr(e)) from e
        finally:
            self.call_clock.leave()

    def _retriable(self, msgs: list[Any], acks: BatchAcks, error: RetriableError) -> None:
        """put() raised ``error``: RELEASE the batch, except the records on their last delivery,
        which go through ``errors.*`` as TASK_PUT failures (DLQ then ACCEPT, REJECT, or the
        task fails); then back off."""
        last = [m for m in msgs if acks.last_delivery(m)]
        again = [m for m in msgs if not acks.last_delivery(m)] if last else msgs
        if again:
            log.warning(
                "Task %s: retriable error from put(), releasing %d record(s) for redelivery: %s",
                self.id,
                len(again),
                error,
            )
            acks.release(again, repr(error))
        if last:
            self._tolerated = set()
            for msg in last:
                try:
                    self.errors.failed(
                        Failure(TaskStage.TASK_PUT, class_path(self.task), error, msg)
                    )
                except Exception:
                    acks.release(last, "errors.tolerance=none: the task fails on its last delivery")
                    raise
            self.errors.flush()
            rejected = set() if self.errors.policy.dlq_topic else self._tolerated
            acks.settle(last, rejected)
        self._stopping.wait(max(self.retry_timeout_s, _MIN_RETRY_BACKOFF_S))

    def _on_tolerated(self, failure: Failure) -> None:
        raw = failure.raw
        if raw is not None:
            self._tolerated.add(coordinates(raw))

    def _open_new(self, msgs: list[Any]) -> None:
        """``task.open()`` for the partitions of ``msgs`` not seen before."""
        new = {TopicPartition(m.topic(), m.partition()) for m in msgs} - self.assigned
        if new:
            self.call_clock.enter("open")
            try:
                self.task.open(sorted(new))
            finally:
                self.call_clock.leave()
            self.assigned.update(new)
            for tp in new:
                self.on_topic(tp.topic)
        if self.rewinds:
            log.warning(
                "Task %s: a share-group sink cannot seek; ignoring offset(%s)",
                self.id,
                dict(self.rewinds),
            )
            self.rewinds.clear()

    def _stop_task(self) -> None:
        try:
            self.call_clock.enter("stop")
            self.task.stop()
        finally:
            self.call_clock.leave()
            self.errors.close()

    def _shutdown(self) -> None:
        """Leave the group (acknowledgements already sent; records in hand go back to the
        group), close the task's partitions and stop it."""
        consumer = self._consumer
        self._consumer = None
        try:
            if self.assigned:
                self.task.close(sorted(self.assigned))
                self.assigned.clear()
        finally:
            try:
                self.call_clock.enter("stop")
                self.task.stop()
            finally:
                self.call_clock.leave()
                if consumer is not None:
                    try:
                        consumer.close()
                    except Exception:
                        log.exception("Task %s: error closing the share consumer", self.id)
                self.errors.close()
                self._close_transforms()
