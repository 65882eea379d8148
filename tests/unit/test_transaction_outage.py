"""An exactly-once source task's commit during a broker outage (:mod:`.source_transactions`,
:mod:`.transaction_errors`): retried while librdkafka says the failure is retriable and the
transaction is valid; a transaction lost to the broker raises ``TransactionLost`` (the runner
restarts the task); fencing still fails the task.

The producer here is a stand-in scripted with the errors librdkafka 2.12 gave against a
SIGKILLed Apache Kafka 4.4 broker (recorded by hand, see the messages below); the real outage
is ``tests/integration/test_broker_outage.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.transaction_errors import (
    TransactionLost,
    lost_reason,
    task_lost_reason,
)
from connectrt.runtime.source.transactions import TransactionalOffsets
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from tests.plugins.eos_sequence import EosSequenceTask

_FLUSH_TIMEOUT = KafkaError(
    KafkaError._TIMED_OUT,
    "Failed to flush all outstanding messages within the API timeout: 100 message(s) remaining",
    retriable=True,
)
_TIMED_OUT_MESSAGES = KafkaError(
    KafkaError._TIMED_OUT, "100 message(s) timed out on t [0]", txn_requires_abort=True
)
_FENCED = KafkaError(KafkaError._FENCED, "This instance has been fenced", fatal=True)


class _Producer:
    """Answers ``commit_transaction`` with the scripted errors, then succeeds."""

    def __init__(self, *errors: KafkaError, abort_error: KafkaError | None = None) -> None:
        self.errors = list(errors)
        self.abort_error = abort_error
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, *args: object) -> None:
        self.calls.append("produce")

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        if self.errors:
            raise KafkaException(self.errors.pop(0))

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")
        if self.abort_error is not None:
            raise KafkaException(self.abort_error)


def _txn(metrics: TaskMetrics, timeout_ms: int = 60000) -> TransactionalOffsets:
    worker = WorkerConfig.from_props({"exactly.once.source.support": "enabled", "group.id": "g"})
    eos = exactly_once_settings(worker, {}, "c", 0)
    assert eos is not None
    eos = replace(eos, transaction_timeout_ms=timeout_ms, max_block_ms=timeout_ms)
    task_id = TaskId("c", 0)
    txn = TransactionalOffsets(
        task_id,
        EosSequenceTask(),
        eos,
        store=None,  # type: ignore[arg-type]  # not opened here
        errors=ErrorHandler(task_id, ErrorPolicy(), metrics),
        metrics=metrics,
        timeout_s=1.0,
    )
    txn.pending = {b"k": {"seq": 1}}
    txn.pending_records = 1
    return txn


def test_a_retriable_commit_is_called_again_until_the_broker_answers() -> None:
    """librdkafka's ``_TIMED_OUT`` "Failed to flush all outstanding messages within the API
    timeout" (retriable) while the broker is down: the same transaction commits once it is
    back; nothing is aborted, the records count as committed."""
    metrics = TaskMetrics("c", 0)
    txn = _txn(metrics)
    producer = _Producer(_FLUSH_TIMEOUT, _FLUSH_TIMEOUT)
    assert txn.commit(producer, lambda: None)  # type: ignore[arg-type]
    assert producer.calls == ["begin", "produce", "commit", "commit", "commit"]
    assert not txn.in_transaction
    assert metrics.records_committed == 1 and metrics.transactions_aborted == 0


def test_a_commit_still_retriable_past_the_timeouts_loses_the_transaction() -> None:
    """Past ``transaction.timeout.ms``/``max.block.ms`` the retries stop: ``TransactionLost``
    (the runner restarts the task), after one quick abort the dead broker cannot answer."""
    metrics = TaskMetrics("c", 0)
    txn = _txn(metrics, timeout_ms=0)
    producer = _Producer(_FLUSH_TIMEOUT, abort_error=_FLUSH_TIMEOUT)
    with pytest.raises(TransactionLost, match=r"could not commit within .*max\.block\.ms"):
        txn.commit(producer, lambda: None)  # type: ignore[arg-type]
    assert producer.calls == ["begin", "produce", "commit", "abort"]
    assert not txn.in_transaction and txn.pending == {} and txn.pending_records == 0
    assert metrics.records_committed == 0 and metrics.transactions_aborted == 1


def test_an_abortable_commit_loses_the_transaction() -> None:
    """Records that timed out in the producer (the outage outlived ``transaction.timeout.ms``):
    librdkafka says abort; the transaction is lost to the broker, not the task's fault."""
    metrics = TaskMetrics("c", 0)
    txn = _txn(metrics)
    producer = _Producer(_TIMED_OUT_MESSAGES)
    with pytest.raises(TransactionLost, match="must be aborted"):
        txn.commit(producer, lambda: None)  # type: ignore[arg-type]
    assert producer.calls == ["begin", "produce", "commit", "abort"]


def test_a_fenced_commit_still_fails_the_task() -> None:
    """Fencing is no outage: a newer instance holds the id, so no restart (it would fence that
    instance in turn); the task fails in TASK_COMMIT without trying to abort."""
    metrics = TaskMetrics("c", 0)
    txn = _txn(metrics)
    producer = _Producer(_FENCED)
    with pytest.raises(TaskFailure) as failed:
        txn.commit(producer, lambda: None)  # type: ignore[arg-type]
    assert failed.value.stage == TaskStage.TASK_COMMIT
    assert producer.calls == ["begin", "produce", "commit"]


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), True),
        (KafkaError(KafkaError._TRANSPORT, "Disconnected"), True),
        (_FLUSH_TIMEOUT, True),
        (_TIMED_OUT_MESSAGES, True),
        (KafkaError(KafkaError._STATE, "Erroneous state", fatal=True), True),
        (_FENCED, False),
        (KafkaError(KafkaError.PRODUCER_FENCED, "fenced"), False),
        (KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large"), False),
        (KafkaError(KafkaError.INVALID_RECORD, "Broker failed to validate record"), False),
    ],
)
def test_what_counts_as_a_transaction_lost_to_the_broker(error: KafkaError, lost: bool) -> None:
    """Delivery and commit errors as raised (a KafkaException, or a task failure raised from
    one): outages, abortable and fatal errors are; fencing and records at fault are not."""
    wrapped = TaskFailure(TaskId("c", 0), TaskStage.KAFKA_PRODUCE, "delivery failed")
    wrapped.__cause__ = KafkaException(error)
    assert (lost_reason(KafkaException(error)) is not None) is lost
    assert (lost_reason(wrapped) is not None) is lost
    assert lost_reason(RuntimeError("not Kafka")) is None


def test_only_producer_stages_restart_the_task() -> None:
    """A task's own ``poll()`` that fails on a Kafka client of its own is the task's failure,
    not a transaction lost to the broker: only KAFKA_PRODUCE/TASK_COMMIT failures and bare
    producer errors restart it."""
    cause = KafkaException(KafkaError(KafkaError._TRANSPORT, "Disconnected"))
    for stage, restarts in ((TaskStage.TASK_POLL, False), (TaskStage.KAFKA_PRODUCE, True)):
        failure = TaskFailure(TaskId("c", 0), stage, "failed")
        failure.__cause__ = cause
        assert (task_lost_reason(failure) is not None) is restarts
    assert task_lost_reason(cause) is not None
    assert task_lost_reason(TransactionLost("outage")) == "outage"
