"""The partitions a sink task owns, kept in step with its consumer's rebalance callbacks.

:class:`SinkAssignment` is what the consumer's ``on_assign``/``on_revoke``/``on_lost`` do for
a :class:`~connectrt.runtime.sink.runner.SinkTaskRunner`, for every rebalance protocol:

* **eager** assignors (``range``, ``roundrobin``): every rebalance revokes the whole assignment
  and then assigns the whole new one; librdkafka wants ``assign(partitions)`` / ``unassign()``;
* **incremental**: the classic protocol with ``cooperative-sticky``, and the KIP-848 consumer
  protocol (``group.protocol=consumer``): a rebalance adds or removes only some partitions and
  librdkafka wants ``incremental_assign`` / ``incremental_unassign`` with just those (``assign``
  answers ``_STATE``, "Erroneous state"). Which one applies comes from the consumer's config
  (:func:`~connectrt.runtime.clients.group_protocol.assigns_incrementally`).

Either way the task sees the SinkTask contract: ``open()`` with only the partitions added,
``close()`` with only those removed, and the offsets ``put()`` took of a revoked partition
committed (after ``pre_commit()``) before it goes; a lost partition (the group moved on
without this member) is closed without a commit, which could no longer succeed.

An exception must never escape a callback into librdkafka (confluent-kafka's C code then
fails later with an unrelated ``SystemError`` and the assignment is left half-done): each
callback keeps its first failure and :meth:`SinkAssignment.raise_failure`, called by the
runner once ``consume()`` returned, raises it as a readable
:class:`~connectrt.runtime.tasks.runner.TaskFailure`.

Threading: used on the task thread only (librdkafka runs the callbacks inside ``consume()``
and ``close()`` on the thread calling them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.api.task import SinkTask
from connectrt.runtime.clients.kafka import KafkaConsumer
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.sink.offsets import SinkOffsetCommitter
from connectrt.runtime.sink.start_offsets import start_unstarted
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage

log = logging.getLogger(__name__)

__all__ = ["SinkAssignment"]


class SinkAssignment:
    """One sink task's partitions and its consumer's rebalance callbacks (see the module).

    ``assigned`` is the set of partitions the task owns (shared with the runner, which reads
    it for pause/resume, commits and rewinds); ``epoch`` grows whenever partitions leave it.
    ``rewinds`` is the runner's dict of offsets to seek to: a rewind pending for a partition is
    applied as it is assigned. ``offsets`` is the task's offset bookkeeping (forgotten for
    partitions that leave); ``commit(only)`` commits the put offsets of ``only``;
    ``paused(tp)`` says whether a partition must start paused; ``on_topic`` is told each topic
    the first time one of its partitions arrives. ``start_reset`` (set by the runner from the
    consumer's ``auto.offset.reset``; None: left to librdkafka) is where a partition the group
    has no committed offset for starts
    (:func:`~connectrt.runtime.sink.start_offsets.start_unstarted`).
    """

    def __init__(
        self,
        task_id: TaskId,
        task: SinkTask,
        rewinds: dict[TopicPartition, int],
        offsets: SinkOffsetCommitter,
        commit: Callable[[set[TopicPartition]], None],
        paused: Callable[[TopicPartition], bool],
        on_topic: Callable[[str], None],
    ) -> None:
        self._id = task_id
        self._task = task
        self._rewinds = rewinds
        self._offsets = offsets
        self._commit = commit
        self._paused = paused
        self._on_topic = on_topic
        self._topics_seen: set[str] = set()
        self.assigned: set[TopicPartition] = set()
        self.epoch = 0
        self.incremental = False
        self.start_reset: int | None = None
        self._failure: TaskFailure | None = None

    # -- the consumer's callbacks ---------------------------------------------------------------
    def on_assign(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        self._guarded("assignment", partitions, lambda: self._assign(consumer, partitions))

    def on_revoke(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        self._guarded("revocation", partitions, lambda: self._revoke(consumer, partitions))

    def on_lost(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        self._guarded("loss", partitions, lambda: self._lose(consumer, partitions))

    # -- for the runner -------------------------------------------------------------------------
    def raise_failure(self) -> None:
        """Raise (once) the TaskFailure of a callback that failed since the last call."""
        failure = self._failure
        if failure is not None:
            self._failure = None
            raise failure

    def still_assigned(self, msgs: list[Any]) -> list[Any]:
        """``msgs`` without the messages of partitions the task no longer owns (for a batch
        consumed while partitions were revoked: they are the new owner's to deliver; librdkafka
        normally purges them itself). Error events are kept."""
        assigned = self.assigned
        return [
            m
            for m in msgs
            if m.error() is not None or TopicPartition(m.topic(), m.partition()) in assigned
        ]

    def release(self, tps: Collection[TopicPartition]) -> None:
        """The task no longer owns ``tps`` (revoked, lost, or the task stops)."""
        self.assigned.difference_update(tps)
        self._offsets.forget(tps)

    # -- the work of each callback --------------------------------------------------------------
    def _guarded(
        self, what: str, partitions: list[KafkaTopicPartition], body: Callable[[], None]
    ) -> None:
        try:
            body()
        except BaseException as e:
            names = ", ".join(f"{p.topic}-{p.partition}" for p in partitions)
            log.error("Task %s: handling the %s of %s failed: %r", self._id, what, names, e)
            if self._failure is None:
                failure = TaskFailure(
                    self._id,
                    TaskStage.KAFKA_CONSUME,
                    f"handling the {what} of partitions [{names}] failed: {e!r}",
                )
                failure.__cause__ = e
                self._failure = failure

    def _assign(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        """Open the partitions added, apply pending rewinds, hand them to librdkafka and pause
        those that must start paused."""
        tps = [
            tp
            for p in partitions
            if (tp := TopicPartition(p.topic, p.partition)) not in self.assigned
        ]
        self.assigned.update(tps)
        for tp in tps:
            if tp.topic not in self._topics_seen:
                self._topics_seen.add(tp.topic)
                self._on_topic(tp.topic)
        if tps:
            self._task.open(tps)
        for p in partitions:
            tp = TopicPartition(p.topic, p.partition)
            if tp in self._rewinds:
                p.offset = self._rewinds.pop(tp)
                self._offsets.moved(tp, p.offset)
        start_unstarted(consumer, partitions, self.start_reset)  # no 100 ms reset backoff
        if self.incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        paused = [p for p in partitions if self._paused(TopicPartition(p.topic, p.partition))]
        if paused:
            consumer.pause(paused)
        if tps:
            log.info("Task %s assigned %s", self._id, ", ".join(map(str, tps)))

    def _revoke(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        """Commit what ``put()`` took of the revoked partitions, close them, release them."""
        mine = [
            tp for p in partitions if (tp := TopicPartition(p.topic, p.partition)) in self.assigned
        ]
        try:
            if mine:
                self.epoch += 1
                self._commit(set(mine))
                self.release(mine)
                self._task.close(mine)
                log.info("Task %s revoked %s", self._id, ", ".join(map(str, mine)))
        finally:
            self._unassign(consumer, partitions)

    def _lose(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        """Close the lost partitions without a commit and release them."""
        mine = [
            tp for p in partitions if (tp := TopicPartition(p.topic, p.partition)) in self.assigned
        ]
        try:
            if mine:
                self.epoch += 1
                self.release(mine)
                self._task.close(mine)
                log.warning("Task %s lost %s", self._id, ", ".join(map(str, mine)))
        finally:
            self._unassign(consumer, partitions)

    def _unassign(self, consumer: KafkaConsumer, partitions: list[KafkaTopicPartition]) -> None:
        if self.incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()
