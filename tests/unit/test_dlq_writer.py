"""The dead letter queue writer of :class:`ErrorHandler`, over the in-memory Kafka: no broker.

Each test names the rule it guards; the integration tests (``test_error_handling.py``) keep
checking the same writer against a real broker.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from connectrt.api.records import SourceRecord
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaAdmin, KafkaProducer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.tasks.dlq_headers import CONTEXT_PREFIX
from connectrt.runtime.tasks.dlq_sizing import TRUNCATED_HEADER
from connectrt.runtime.tasks.error_handling import (
    DeadLetterQueueInitError,
    ErrorHandler,
    ErrorPolicy,
    ToleranceExceeded,
)
from connectrt.runtime.tasks.runner import TaskId, TaskStage
from connectrt.testing.fake_kafka import FakeKafka, FakeMessage, FakeProducer
from connectrt.testing.fake_kafka_admin import FakeAdmin

DLQ = "dlq"
TASK = TaskId("conn", 3)


class Cluster:
    """One fake cluster and the clients the handler built from it."""

    def __init__(self, brokers: int = 1) -> None:
        self.kafka = FakeKafka()
        self.admin = FakeAdmin(self.kafka, brokers=brokers)
        self.producers: list[FakeProducer] = []

    def producer(self, config: dict[str, Any]) -> KafkaProducer:
        producer = self.kafka.producer(config)
        self.producers.append(producer)
        return producer

    def admin_client(self, config: dict[str, Any]) -> KafkaAdmin:
        return self.admin

    def handler(self, **policy: Any) -> ErrorHandler:
        settings: dict[str, Any] = {"tolerate_all": True, "dlq_topic": DLQ}
        settings.update(policy)
        return ErrorHandler(
            TASK,
            ErrorPolicy(**settings),
            TaskMetrics(TASK.connector, TASK.task),
            producer_config={"bootstrap.servers": "fake:9092"},
            admin_config={"bootstrap.servers": "fake:9092"},
            producer_factory=self.producer,
            admin_factory=self.admin_client,
        )


def _fail(error: BaseException) -> Any:
    def fn() -> Any:
        raise error

    return fn


def _consumed(cluster: Cluster, value: bytes = b"not json") -> FakeMessage:
    cluster.kafka.create_topic("orders", 2)
    cluster.kafka.append("orders", b"skip", partition=1)
    return cluster.kafka.append(
        "orders", value, key=b"k1", partition=1, headers=[("trace", b"abc")]
    )


def _headers(message: FakeMessage) -> dict[str, bytes | None]:
    return dict(message.headers() or [])


def test_open_creates_the_missing_topic_with_one_partition_before_any_record() -> None:
    cluster = Cluster(brokers=3)
    handler = cluster.handler(dlq_replication_factor=3)
    handler.open()
    assert cluster.kafka.partitions == {DLQ: 1}
    assert cluster.kafka.records(DLQ) == []
    assert len(cluster.producers) == 1
    handler.open()  # idempotent: no second topic request, no second producer
    assert cluster.admin.calls.count("create_topics") == 1
    assert len(cluster.producers) == 1


def test_an_existing_topic_is_not_created_again() -> None:
    cluster = Cluster()
    cluster.kafka.create_topic(DLQ, 4)
    cluster.handler(dlq_replication_factor=1).open()
    assert "create_topics" not in cluster.admin.calls
    assert cluster.kafka.partitions[DLQ] == 4


def test_a_factor_above_the_broker_count_fails_open_naming_the_topic_without_creating_it() -> None:
    cluster = Cluster(brokers=1)
    handler = cluster.handler(dlq_replication_factor=3)
    with pytest.raises(DeadLetterQueueInitError) as failure:
        handler.open()
    assert str(failure.value) == f"Could not initialize dead letter queue with topic={DLQ}"
    assert "replication" in str(failure.value.__cause__).lower()
    assert "create_topics" not in cluster.admin.calls
    assert DLQ not in cluster.kafka.partitions and cluster.producers == []


def test_a_tolerated_sink_failure_writes_the_original_record_with_context_headers() -> None:
    cluster = Cluster()
    handler = cluster.handler(dlq_replication_factor=1, dlq_context_headers=True)
    raw = _consumed(cluster)
    ok, result = handler.call(
        TaskStage.VALUE_CONVERTER, "my.Converter", _fail(ValueError("bad json")), raw=raw
    )
    assert (ok, result) == (False, None)
    handler.flush()
    [written] = cluster.kafka.records(DLQ)
    assert (written.key(), written.value()) == (b"k1", b"not json")
    headers = _headers(written)
    assert headers["trace"] == b"abc"  # the original headers first, kept
    assert headers[CONTEXT_PREFIX + "topic"] == b"orders"
    assert headers[CONTEXT_PREFIX + "partition"] == b"1"
    assert headers[CONTEXT_PREFIX + "offset"] == b"1"
    assert headers[CONTEXT_PREFIX + "connector.name"] == b"conn"
    assert headers[CONTEXT_PREFIX + "task.id"] == b"3"
    assert headers[CONTEXT_PREFIX + "stage"] == b"VALUE_CONVERTER"
    assert headers[CONTEXT_PREFIX + "class.name"] == b"my.Converter"
    assert headers[CONTEXT_PREFIX + "exception.class.name"] == b"builtins.ValueError"
    assert headers[CONTEXT_PREFIX + "exception.message"] == b"bad json"
    assert handler.metrics.deadletterqueue_produce_requests == 1
    assert handler.metrics.errors == 1


def test_without_context_headers_only_the_original_headers_are_written() -> None:
    cluster = Cluster()
    handler = cluster.handler(dlq_replication_factor=1)
    raw = _consumed(cluster)
    handler.call(TaskStage.TRANSFORMATION, "my.Smt", _fail(ValueError("x")), raw=raw)
    handler.flush()
    [written] = cluster.kafka.records(DLQ)
    assert written.headers() == [("trace", b"abc")]


def test_a_failure_the_policy_does_not_tolerate_is_still_written_then_fails_the_task() -> None:
    cluster = Cluster()
    handler = cluster.handler(dlq_replication_factor=1, tolerate_all=False)
    raw = _consumed(cluster)
    with pytest.raises(ToleranceExceeded, match="stage VALUE_CONVERTER"):
        handler.call(TaskStage.VALUE_CONVERTER, "my.Converter", _fail(ValueError("x")), raw=raw)
    handler.flush()
    assert [m.value() for m in cluster.kafka.records(DLQ)] == [b"not json"]


def test_a_source_failure_is_written_as_a_json_document_of_the_record() -> None:
    cluster = Cluster()
    handler = cluster.handler(dlq_replication_factor=1)
    record = SourceRecord(
        source_partition={"file": "a"},
        source_offset={"line": 7},
        topic="lines",
        value="seven",
    )
    handler.call(TaskStage.TRANSFORMATION, "my.Smt", _fail(ValueError("x")), record=record)
    handler.flush()
    [written] = cluster.kafka.records(DLQ)
    assert written.key() is None
    document = json.loads(written.value() or b"")
    assert document["topic"] == "lines"
    assert document["stage"] == "TRANSFORMATION"
    assert document["source_offset"] == {"line": 7}


def test_a_record_above_the_topics_limit_is_written_truncated_and_marked() -> None:
    cluster = Cluster()
    cluster.kafka.create_topic(DLQ)
    cluster.admin.topic_configs[DLQ] = {"max.message.bytes": "2000"}
    handler = cluster.handler(dlq_replication_factor=1, dlq_context_headers=True)
    handler.open()
    assert cluster.producers[0].config["message.max.bytes"] == 2000
    raw = _consumed(cluster, value=b"v" * 10_000)
    handler.call(TaskStage.VALUE_CONVERTER, "my.Converter", _fail(ValueError("x")), raw=raw)
    handler.flush()
    [written] = cluster.kafka.records(DLQ)
    headers = _headers(written)
    assert int(headers[TRUNCATED_HEADER] or b"0") > 10_000
    assert len(written.value() or b"") < 2000
    assert headers[CONTEXT_PREFIX + "offset"] == b"1"  # still names the original


def test_the_brokers_limit_sizes_the_producer_when_the_topic_cannot_be_described() -> None:
    cluster = Cluster()
    cluster.admin.refuse_describe_configs = True
    handler = cluster.handler(dlq_replication_factor=1)
    handler.open()
    assert cluster.producers[0].config["message.max.bytes"] == 1_048_588  # Kafka's default
    cluster.admin.refuse_describe_configs = False
    cluster.admin.broker_configs["message.max.bytes"] = "5000"
    cluster.kafka.create_topic("dlq2")
    other = cluster.handler(dlq_replication_factor=1, dlq_topic="dlq2")
    other.open()  # dlq2 describes no max.message.bytes: the broker's limit applies
    assert cluster.producers[1].config["message.max.bytes"] == 5000


def test_a_failed_dlq_delivery_fails_the_next_flush_once_and_is_counted() -> None:
    cluster = Cluster()
    handler = cluster.handler(dlq_replication_factor=1)
    handler.open()
    cluster.producers[0].fail_deliveries(1)
    raw = _consumed(cluster)
    handler.call(TaskStage.VALUE_CONVERTER, "my.Converter", _fail(ValueError("x")), raw=raw)
    with pytest.raises(ConnectError, match="Writing to the dead letter queue failed"):
        handler.flush()
    assert handler.metrics.deadletterqueue_produce_failures == 1
    assert cluster.kafka.records(DLQ) == []
    handler.flush()  # reported once; the handler goes on
