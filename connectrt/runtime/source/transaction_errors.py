"""What a Kafka error means for an exactly-once source task's open transaction.

librdkafka's transactional API sorts its errors (``KafkaError``) three ways, and a task acts on
each differently (:mod:`connectrt.runtime.source.transactions`,
:class:`~connectrt.runtime.source.runner.SourceTaskRunner`):

* **retriable** (``retriable()``; a broker outage gives ``_TIMED_OUT`` "Failed to flush all
  outstanding messages within the API timeout"): the transaction is still valid and
  ``commit_transaction()`` may be called again. The commit is retried while the outage is
  shorter than the producer's ``max.block.ms`` and ``transaction.timeout.ms``;
* **abortable** (``txn_requires_abort()``; records that timed out in the producer's queue, the
  coordinator having aborted the transaction after ``transaction.timeout.ms``): the transaction
  is lost, the producer still works once it is aborted;
* **fatal** (``fatal()``): the producer is unusable; a new one must be created.

A transaction lost to an outage (:func:`lost_reason` says why) makes the task restart from its
committed offsets, on a new producer whose ``init_transactions()`` finishes what the old one
left open (:class:`TransactionLost`). Fencing is not an outage: ``PRODUCER_FENCED`` means a newer
instance of the task holds its transactional id (a zombie of a reassigned task), and restarting
would fence that instance in turn, so a fenced task fails as before. Nor are errors of a record
itself (too large, refused by the topic): a restart would meet them again.

Pure functions over errors; safe from any thread.
"""

from __future__ import annotations

from connectrt.runtime.clients.kafka import KafkaError, KafkaException
from connectrt.runtime.tasks.runner import TaskFailure, TaskStage

__all__ = ["TransactionLost", "is_fenced", "kafka_error", "lost_reason", "task_lost_reason"]

_RESTARTABLE_STAGES = frozenset((TaskStage.KAFKA_PRODUCE, TaskStage.TASK_COMMIT))
"""Stages of a task failure that may be a transaction lost to the broker (never the task's own
``poll()`` or a converter)."""

_FENCED = frozenset(
    code
    for code in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        getattr(KafkaError, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", None),
    )
    if code is not None
)
"""A newer producer holds the transactional id, or this one may not use it: never an outage."""

_OUTAGE = frozenset(
    code
    for code in (
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.INVALID_TXN_STATE,
        getattr(KafkaError, "TRANSACTION_ABORTABLE", None),
    )
    if code is not None
)
"""Delivery and transaction errors a broker outage (or the coordinator aborting a transaction
that outlived ``transaction.timeout.ms``) gives: the records are not at fault."""


class TransactionLost(Exception):
    """An exactly-once task's open transaction can no longer commit because of the broker
    (an outage longer than the commit may wait, an abortable or fatal producer error): the
    task's runner restarts the task from its committed offsets on a new producer instead of
    failing it. ``reason`` says what happened, for the log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def kafka_error(error: BaseException | None) -> KafkaError | None:
    """The ``KafkaError`` of ``error`` or of the first exception it was raised from (its
    ``__cause__``/``__context__`` chain), None if there is none."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, KafkaException) and error.args:
            first = error.args[0]
            if isinstance(first, KafkaError):
                return first
        error = error.__cause__ or error.__context__
    return None


def is_fenced(err: KafkaError) -> bool:
    """Whether ``err`` says a newer producer took over the transactional id."""
    return err.code() in _FENCED


def lost_reason(error: BaseException | None) -> str | None:
    """Why the open transaction is lost to the broker, restarting the task; None when
    ``error`` is not such a case (no Kafka error in its chain, fencing, a record at fault), and
    the task fails as it always did."""
    err = kafka_error(error)
    if err is None or is_fenced(err):
        return None
    text = err.str()
    if err.fatal():
        return f"the producer hit a fatal error ({text})"
    if err.txn_requires_abort():
        return f"the transaction must be aborted ({text})"
    if err.retriable() or err.code() in _OUTAGE:
        return f"the broker did not answer in time ({text})"
    return None


def task_lost_reason(error: BaseException) -> str | None:
    """What ends an exactly-once task's loop, seen by its runner: why its transaction was lost
    to the broker (the task then restarts in place), or None (the task fails, as it always
    did): a :class:`TransactionLost`, or a producer error (a bare ``KafkaException``, or a
    task failure in stage KAFKA_PRODUCE/TASK_COMMIT raised from one) that :func:`lost_reason`
    accepts."""
    if isinstance(error, TransactionLost):
        return error.reason
    if isinstance(error, TaskFailure) and error.stage not in _RESTARTABLE_STAGES:
        return None
    return lost_reason(error)
