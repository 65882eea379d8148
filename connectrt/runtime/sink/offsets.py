"""A sink task's consumer offsets: what ``put()`` accepted, what was committed, the commit.

Consumer offsets are committed only for records ``put()`` accepted, and only after
``SinkTask.pre_commit()`` (by default ``flush()``) returned; the runner commits every
``offset.flush.interval.ms``, on ``context.request_commit()``, before partitions are revoked,
and on stop. A crash therefore redelivers at most what was put since the last commit
(at-least-once); nothing committed is ever lost. When ``pre_commit()`` fails, the task's
partitions are rewound to their last committed offsets, so what it had not flushed is
delivered again. The commit step and the rule of what is committable are the sink lifecycle's
(:mod:`connectrt.runtime.sink.lifecycle`), shared with the Spark bridge.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping

from connectrt.api.records import TopicPartition
from connectrt.api.task import SinkTask
from connectrt.runtime.clients.kafka import KafkaConsumer, KafkaException
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.lifecycle import committable, pre_commit
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskId

log = logging.getLogger(__name__)

__all__ = ["SinkOffsetCommitter"]


class SinkOffsetCommitter:
    """The offsets of one sink task's partitions, and their commit.

    Per partition it keeps the put offset, the offset after the last record ``put()``
    accepted (moved by seeks too), and the committed offset, the last one committed (at first,
    the offset of the first record received: everything before it was committed already). Its
    state is its own: the runner and the assignment tell it what happened (:meth:`accepted`,
    :meth:`moved`, :meth:`forget`) and ask it to :meth:`commit`. Owned by the task's
    :class:`~connectrt.runtime.sink.runner.SinkTaskRunner` and used on its thread only; the
    consumer is passed in because it exists only while the task runs.
    """

    def __init__(
        self, task_id: TaskId, task: SinkTask, errors: ErrorHandler, metrics: TaskMetrics
    ) -> None:
        self._id = task_id
        self._task = task
        self._errors = errors
        self._metrics = metrics
        self._put: dict[tuple[str, int], int] = {}  # next offset after what put() took
        self._committed: dict[tuple[str, int], int] = {}

    def put_offsets(self) -> dict[tuple[str, int], int]:
        """A copy of the put offsets: per partition, the offset after what ``put()`` took."""
        return dict(self._put)

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        """A copy of the offsets committed (or taken as committed) per partition."""
        return dict(self._committed)

    def accepted(
        self,
        first_offsets: Mapping[tuple[str, int], int],
        next_offsets: Mapping[tuple[str, int], int],
    ) -> None:
        """``put()`` accepted a batch: per partition, its first offset and the one after it."""
        committed = self._committed
        for tp, offset in first_offsets.items():
            # Everything before the first record we received was committed already (or is the
            # start of the partition): the baseline for records_committed.
            committed.setdefault(tp, offset)
        self._put.update(next_offsets)

    def moved(self, tp: tuple[str, int], offset: int) -> None:
        """The consumer of ``tp`` was moved to ``offset`` (a rewind applied by a seek, or an
        assignment starting there): the next record ``put()`` can take is the one at
        ``offset``, so no commit goes beyond it until ``put()`` took more."""
        self._put[tp] = offset

    def forget(self, tps: Collection[TopicPartition]) -> None:
        """The task no longer owns these partitions."""
        for tp in tps:
            self._put.pop(tp, None)
            self._committed.pop(tp, None)

    def commit(
        self,
        consumer: KafkaConsumer,
        assigned: Collection[TopicPartition],
        only: set[TopicPartition] | None = None,
    ) -> None:
        """Commit what ``pre_commit()`` allows of the put offsets of the ``assigned``
        partitions (of ``only`` those, if given). A failed commit is retried next time."""
        current = {
            TopicPartition(*tp): off
            for tp, off in self._put.items()
            if tp in assigned and (only is None or tp in only)
        }
        if not current:
            return
        started = time.perf_counter()
        try:
            answer = pre_commit(self._task, self._errors, current)
        except Exception:
            log.exception(
                "Task %s: pre_commit()/flush() failed; rewinding to the last committed offsets",
                self._id,
            )
            self._metrics.offset_commit_failures += 1
            self._rewind_to_committed(consumer, current)
            return
        final = committable(self._id, answer, self._put, self._committed)
        if not final:
            return
        try:
            consumer.commit(
                offsets=[KafkaTopicPartition(t, p, o) for (t, p), o in final.items()],
                asynchronous=False,
            )
        except KafkaException as e:
            self._metrics.offset_commit_failures += 1
            log.warning("Task %s: offset commit failed (will retry): %s", self._id, e)
            return
        committed_records = sum(o - self._committed.get(k, o) for k, o in final.items())
        self._committed.update(final)
        self._metrics.offset_commits += 1
        self._metrics.commit_seconds.observe(time.perf_counter() - started)
        self._metrics.records_committed += max(committed_records, 0)

    def _rewind_to_committed(
        self, consumer: KafkaConsumer, current: Mapping[TopicPartition, int]
    ) -> None:
        tps = [KafkaTopicPartition(t, p) for t, p in current]
        try:
            committed = consumer.committed(tps, timeout=10)
        except KafkaException:
            committed = []
        for c in committed:
            offset = c.offset if c.offset >= 0 else 0
            try:
                consumer.seek(KafkaTopicPartition(c.topic, c.partition, offset))
                self._put[(c.topic, c.partition)] = offset
            except KafkaException as e:
                log.warning(
                    "Task %s: could not rewind %s-%d: %s", self._id, c.topic, c.partition, e
                )
