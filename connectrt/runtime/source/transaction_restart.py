"""The producer side of restarting an exactly-once source task whose transaction was lost.

Used by :class:`~connectrt.runtime.source.runner.SourceTaskRunner` on the task's thread when a
transaction was lost to the broker (:mod:`connectrt.runtime.source.transaction_errors`):

* :func:`discard` purges the old producer's queued and in-flight records, so it sends nothing
  more; the caller then drops its last reference, and librdkafka destroys it. It must be gone
  before the new producer initializes: a live one re-acquires its producer id in the background
  once the broker is back, bumping the epoch and fencing the new one;
* :func:`reopen` creates new producers and calls ``init_transactions()`` on them (through
  :meth:`~connectrt.runtime.source.transactions.TransactionalOffsets.open_transactions`, which
  then reads the offsets topic again), waiting between attempts with a doubling backoff until
  the broker answers or the task is stopped. That call fences the old producer and has the
  coordinator finish the transaction it left open (abort it, or complete a commit it had
  recorded);
* :func:`fresh_task` is a new instance of the task's class, its ``poll`` timed as the old one's
  was, to start from the committed offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from connectrt.api.task import SourceTask
from connectrt.runtime.clients.kafka import KafkaProducer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.transactions import TransactionalOffsets
from connectrt.runtime.tasks.runner import TaskId
from connectrt.runtime.tasks.timing import time_task_calls

log = logging.getLogger(__name__)

__all__ = ["discard", "fresh_task", "reopen"]

BACKOFF_S = (1.0, 30.0)
"""The first and the longest wait between attempts while the broker does not answer."""


def discard(producer: KafkaProducer) -> None:
    """Purge a dropped producer's queued and in-flight records (their delivery reports say
    so, and are ignored), so that it sends nothing more."""
    try:
        producer.purge()
        producer.poll(0)
    except Exception:
        log.debug("purging a dropped producer failed", exc_info=True)


def reopen(
    task_id: TaskId,
    txn: TransactionalOffsets,
    create: Callable[[dict[str, Any]], KafkaProducer],
    config: dict[str, Any],
    stopping: Callable[[], bool],
    wait: Callable[[float], object],
) -> KafkaProducer | None:
    """A new producer of ``config`` whose transactions are initialized (and the offsets topic
    read again), after as many attempts as the broker needs; None when ``stopping()`` first.
    ``wait(seconds)`` sleeps between attempts and returns early when the task is stopped."""
    delay, longest = BACKOFF_S
    while not stopping():
        producer = create(config)
        failure = _open(txn, producer)
        if failure is None:
            return producer
        del producer  # destroyed before the next one initializes
        log.warning(
            "Task %s: cannot restart yet (%s); trying again in %.0f s", task_id, failure, delay
        )
        wait(delay)
        delay = min(delay * 2, longest)
    return None


def _open(txn: TransactionalOffsets, producer: KafkaProducer) -> str | None:
    """``txn.open_transactions(producer)``; None when done, else why not (the producer is then
    purged and the offsets reader stopped)."""
    try:
        txn.open_transactions(producer)
    except Exception as e:
        discard(producer)
        txn.close_store()
        return str(e)
    return None


def fresh_task(old: SourceTask, metrics: TaskMetrics) -> SourceTask:
    """A new, not yet initialized instance of ``old``'s class; its ``poll`` is timed into
    ``metrics`` when ``old``'s was (the runner factory wraps it)."""
    task = type(old)()
    if "poll" in vars(old):
        time_task_calls(task, metrics)
    return task
