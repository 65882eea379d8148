"""Exactly-once source settings and the validation that only configs can decide (KIP-618)."""

from __future__ import annotations

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.plugins.registry import registry

EOS_SOURCE = "tests.plugins.eos_sequence.EosSequenceSource"


def _worker(**props: str) -> WorkerConfig:
    return WorkerConfig.from_props({"exactly.once.source.support": "enabled", **props})


def test_settings_follow_kafka_connects_names_and_defaults() -> None:
    eos = exactly_once_settings(_worker(), {}, "orders", 3)
    assert eos is not None
    assert eos.transactional_id == "connect-cluster-orders-3"
    assert (eos.boundary, eos.interval_ms, eos.offsets_topic) == ("poll", 60000, "connect-offsets")
    eos = exactly_once_settings(
        _worker(**{"group.id": "g", "offset.flush.interval.ms": "700"}),
        {
            "transaction.boundary": "interval",
            "offsets.storage.topic": "orders-offsets",
        },
        "orders",
        0,
    )
    assert eos is not None
    assert (eos.transactional_id, eos.interval_ms, eos.offsets_topic) == (
        "g-orders-0",
        700,
        "orders-offsets",
    )
    interval = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "250"}
    eos = exactly_once_settings(_worker(), interval, "c", 0)
    assert eos is not None and eos.interval_ms == 250


@pytest.mark.parametrize("support", ["disabled", "preparing"])
def test_tasks_are_at_least_once_unless_the_worker_enables_it(support: str) -> None:
    wc = WorkerConfig.from_props({"exactly.once.source.support": support})
    assert exactly_once_settings(wc, {}, "c", 0) is None


@pytest.mark.parametrize("executor", ["threads", "processes", "spark"])
def test_every_executor_runs_tasks_transactionally_and_required_validates(executor: str) -> None:
    """Spark tasks too: a re-run attempt has the same transactional id, so its
    init_transactions() fences the attempt before it (KIP-618's zombie fencing)."""
    wc = _worker(**{"task.executor": executor, "group.id": "g"})
    eos = exactly_once_settings(wc, {}, "c", 2)
    assert eos is not None and eos.transactional_id == "g-c-2"
    result = validate_connector_config(
        {"name": "c", "connector.class": EOS_SOURCE, "exactly.once.support": "required"},
        registry,
        OverridePolicy("All"),
        executor=executor,
        exactly_once_source="enabled",
    )
    assert result.values["exactly.once.support"].errors == []
    assert result.error_count == 0


def test_required_on_spark_without_the_worker_support_gets_kafka_connects_error_only() -> None:
    result = validate_connector_config(
        {"name": "c", "connector.class": EOS_SOURCE, "exactly.once.support": "required"},
        registry,
        OverridePolicy("All"),
        executor="spark",
        exactly_once_source="disabled",
    )
    assert result.values["exactly.once.support"].errors == [
        "This worker does not have exactly-once source support enabled."
    ]
    assert result.error_count == 1


def test_exactly_once_needs_offsets_in_kafka() -> None:
    with pytest.raises(ConfigError, match=r"offset\.storage\.type=kafka"):
        exactly_once_settings(_worker(**{"offset.storage.type": "memory"}), {}, "c", 0)


def test_a_worker_with_exactly_once_and_no_kafka_offsets_refuses_to_start() -> None:
    from connectrt.runtime.worker.worker import Worker
    from connectrt.storage.offsets import MemoryOffsetStore

    worker = Worker(_worker(**{"offset.storage.type": "memory"}), MemoryOffsetStore())
    with pytest.raises(ConfigError, match=r"needs offset\.storage\.type=kafka"):
        worker.start()


def test_the_transaction_context_records_requests_and_an_abort_wins() -> None:
    from connectrt.api import SourceRecord
    from connectrt.runtime.source.transactions import TransactionContextImpl

    ctx = TransactionContextImpl()
    ctx.commit_transaction()
    assert ctx.pending == "commit"
    ctx.abort_transaction()
    ctx.commit_transaction()
    assert ctx.pending == "abort"
    record = SourceRecord({"p": 1}, {"o": 1}, "t", value="v")
    ctx.abort_transaction(record)
    ctx.commit_transaction(record)
    assert ctx.at == {id(record): (record, "abort")}


def test_a_task_can_be_tested_for_its_transaction_requests_without_a_worker() -> None:
    from connectrt.testing.contexts import RecordingTransactionContext, StandaloneSourceTaskContext
    from tests.plugins.eos_sequence import EosSequenceTask

    transactions = RecordingTransactionContext()
    task = EosSequenceTask()
    config = {"task.index": "0", "topic": "t", "batch.size": "10", "batch.interval.ms": "0"}
    task.initialize(StandaloneSourceTaskContext({}, transactions=transactions))
    task.start({**config, "commit.every": "5", "abort.seqs": "7"})
    records = task.poll()
    assert records is not None
    assert [(what, r.source_offset if r else None) for what, r in transactions.requests] == [
        ("commit", {"seq": 5}),
        ("abort", {"seq": 8}),
        ("commit", {"seq": 10}),
    ]
    plain = EosSequenceTask()
    plain.initialize(StandaloneSourceTaskContext({}))
    assert plain.context.transaction_context is None


class _FencedProducer:
    """A transactional producer whose commit fails as a fenced one does (a fatal error)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, *args: object) -> None:
        self.calls.append("produce")

    def commit_transaction(self, timeout: float) -> None:
        from confluent_kafka import KafkaError, KafkaException

        self.calls.append("commit")
        raise KafkaException(
            KafkaError(KafkaError._FENCED, "This instance has been fenced", fatal=True)
        )

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


def test_a_fenced_commit_fails_the_task_naming_the_id_and_does_not_try_to_abort() -> None:
    """A fenced producer cannot abort (librdkafka refuses, the broker aborts the transaction
    when the newer producer initializes): the task fails at TASK_COMMIT with its
    transactional id and the broker's reason, and the pending offsets are dropped."""
    from connectrt.runtime.metrics import TaskMetrics
    from connectrt.runtime.source.transactions import TransactionalOffsets
    from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
    from connectrt.runtime.tasks.runner import TaskFailure, TaskId
    from tests.plugins.eos_sequence import EosSequenceTask

    eos = exactly_once_settings(_worker(**{"group.id": "g"}), {}, "c", 0)
    assert eos is not None
    task_id, metrics = TaskId("c", 0), TaskMetrics("c", 0)
    txn = TransactionalOffsets(
        task_id,
        EosSequenceTask(),
        eos,
        store=None,  # type: ignore[arg-type]  # not opened here
        errors=ErrorHandler(task_id, ErrorPolicy(), metrics),
        metrics=metrics,
        timeout_s=1.0,
    )
    producer = _FencedProducer()
    txn.begin(producer)  # type: ignore[arg-type]
    txn.pending = {b"k": {"seq": 1}}
    with pytest.raises(TaskFailure) as failed:
        txn.commit(producer, lambda: None)  # type: ignore[arg-type]
    message = str(failed.value)
    assert "failed in stage TASK_COMMIT" in message
    assert "transactional.id g-c-0" in message and "fenced" in message
    assert producer.calls == ["begin", "produce", "commit"]  # no abort_transaction()
    assert not txn.in_transaction and txn.pending == {}
    assert metrics.offset_commit_failures == 1 and metrics.transactions_aborted == 1
