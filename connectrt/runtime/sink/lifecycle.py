"""The sink task lifecycle every executor of sink tasks shares: put with retries, the commit
step, and what of its answer may be committed.

Both the consumer loop (:class:`~connectrt.runtime.sink.runner.SinkTaskRunner`, with
:class:`~connectrt.runtime.sink.offsets.SinkOffsetCommitter`) and the Spark bridge's executor
side (:mod:`connectrt.spark.datasource.sink_task`) call these, so a sink task meets one
contract wherever it runs:

* :func:`put_with_retries`: ``put(batch)``, and again with the same batch after each
  :class:`~connectrt.errors.RetriableError` for as long as the caller's retry policy says so
  (it waits before it answers). A batch counts as put only once ``put()`` returned; any other
  exception propagates to the caller, which fails the task.
* :func:`pre_commit`: the commit step. The dead letter queue is flushed first (a record sent
  there is safe before the offsets that skip it are committed), then the task's
  ``pre_commit(offsets)`` (by default ``flush(offsets)``) answers what may be committed.
* :func:`committable`: of that answer, what is committed: only partitions whose records
  ``put()`` took, never beyond what ``put()`` took, and nothing already committed.

Stateless functions; they run on the calling task's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import TopicPartition
from connectrt.api.task import SinkTask
from connectrt.errors import RetriableError
from connectrt.runtime.tasks.error_handling import ErrorHandler

log = logging.getLogger(__name__)

__all__ = ["Offsets", "PutClock", "RetryPolicy", "committable", "pre_commit", "put_with_retries"]

Offsets = Mapping[tuple[str, int], int]
RetryPolicy = Callable[[RetriableError, int], bool]
"""``retry(error, attempt)`` after ``put()`` raised ``error`` for the ``attempt``-th time
(1, 2, ...): waits, then True to put the batch again or False to give up without putting it;
may raise to fail the task instead."""


class PutClock(Protocol):
    """Brackets each ``put()`` attempt (the runner's call clock, read by the stall watchdog)."""

    def enter(self, call: str) -> None: ...
    def leave(self) -> None: ...


def put_with_retries(
    task: SinkTask, batch: SinkRecordBatch, retry: RetryPolicy, clock: PutClock | None = None
) -> bool:
    """``task.put(batch)`` under ``retry``; True once ``put()`` took the batch, False when
    ``retry`` gave up (the batch was not put: its offsets must not be committed). Exceptions
    other than :class:`RetriableError` propagate. ``clock`` brackets each attempt with its
    retry wait."""
    attempt = 0
    while True:
        if clock is not None:
            clock.enter("put")
        try:
            task.put(batch)
            return True
        except RetriableError as e:
            attempt += 1
            if not retry(e, attempt):
                return False
        finally:
            if clock is not None:
                clock.leave()


def pre_commit(
    task: SinkTask, errors: ErrorHandler | None, offsets: Mapping[TopicPartition, int]
) -> Mapping[TopicPartition, int]:
    """The commit step: the dead letter queue flushed, then ``task.pre_commit(offsets)``
    (``offsets``: per partition, the offset after what ``put()`` took). Returns the task's
    answer; any exception propagates (nothing may then be committed)."""
    if errors is not None:
        errors.flush()  # DLQ records are safe before the offsets that skip them
    return task.pre_commit(offsets)


def committable(
    task_id: object,
    answer: Mapping[TopicPartition, int] | Offsets,
    put: Offsets,
    committed: Offsets,
) -> dict[tuple[str, int], int]:
    """What of ``pre_commit``'s ``answer`` is committed: per partition, the offset the task
    answered when ``put()`` took records of that partition (``put``: the offset after them)
    and the answer is not beyond that, unless it is already ``committed``. A partition the
    task answered for that ``put`` does not know, or an offset beyond it, is ignored with a
    warning naming ``task_id``."""
    final: dict[tuple[str, int], int] = {}
    for tp, off in answer.items():
        key = (tp[0], tp[1])
        consumed = put.get(key)
        if consumed is None or off > consumed:
            log.warning(
                "Task %s: ignoring offset %s for %s from pre_commit(): beyond what was consumed "
                "(%s)",
                task_id,
                off,
                tp,
                consumed,
            )
            continue
        if committed.get(key) != off:
            final[key] = off
    return final
