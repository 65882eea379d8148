"""Sink conversion's two strategies (columns, record by record) hand ``put()`` the same records,
and a converter failure on one message makes the batch go record by record under the error
policy. Runs on the in-memory Kafka's messages (no broker)."""

from __future__ import annotations

from typing import Any

from connectrt.api.converter import Converter
from connectrt.api.records import SinkRecord
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.converters.string import StringConverter
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.conversion import SinkConversion
from connectrt.runtime.sink.message_records import RecordConversion
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.testing.fake_kafka import FakeKafka, FakeMessage


def _messages() -> list[FakeMessage]:
    kafka = FakeKafka()
    kafka.create_topic("a", 2)
    kafka.create_topic("b", 1)
    return [
        kafka.append("a", b"v0", b"k0", partition=0, headers=[("h", b"x")]),
        kafka.append("a", b"v1", None, partition=1),
        kafka.append("b", None, b"k2", partition=0, headers=[("h", b"y"), ("i", None)]),
        kafka.append("a", b"v3", b"k3", partition=0),
    ]


def _view(record: SinkRecord) -> tuple[Any, ...]:
    headers = [(h.key, h.value) for h in record.headers] if record.headers else []
    return (
        record.topic,
        record.kafka_partition,
        record.kafka_offset,
        record.key,
        record.value,
        record.value_schema,
        record.timestamp,
        record.timestamp_type,
        headers,
        record.original_topic,
        record.original_kafka_offset,
    )


def _conversion(value: Converter, tolerate: bool = False) -> tuple[SinkConversion, TaskMetrics]:
    header = SimpleHeaderConverter()
    header.configure({})
    metrics = TaskMetrics("c", 0)
    task_id = TaskId("c", 0)
    policy = ErrorPolicy.from_config({"errors.tolerance": "all" if tolerate else "none"})
    errors = ErrorHandler(task_id, policy, metrics)
    converters = TaskConverters(ByteArrayConverter(), value, header)
    return SinkConversion(converters, errors, metrics, None, None), metrics


def test_columns_and_records_strategies_give_the_same_records() -> None:
    msgs = _messages()
    conversion, _ = _conversion(ByteArrayConverter())
    columns = conversion.convert(msgs)
    assert columns.batch is not None
    records = RecordConversion(
        TaskConverters(ByteArrayConverter(), ByteArrayConverter(), SimpleHeaderConverter()),
        ErrorHandler(TaskId("c", 0), ErrorPolicy(), TaskMetrics("c", 0)),
        TaskMetrics("c", 0),
    ).convert(msgs)
    assert [_view(r) for r in columns.batch] == [_view(r) for r in records]
    assert len(records) == 4 and records[2].headers is not None
    assert dict(columns.next_offsets) == {("a", 0): 2, ("a", 1): 1, ("b", 0): 1}
    assert dict(columns.first_offsets) == {("a", 0): 0, ("a", 1): 0, ("b", 0): 0}


def test_a_batch_of_librdkafka_messages_keeps_each_ones_timestamp_type() -> None:
    """One timestamp type for a whole batch is found by one count; mixed types, and messages
    without a timestamp, still give each record its own (real librdkafka ``Message`` s)."""
    from confluent_kafka import Message

    from connectrt.api.records import TimestampType

    def msg(offset: int, kind: int) -> Message:
        return Message(topic="a", partition=0, offset=offset, value=b"v", timestamp=(kind, 7))

    conversion, _ = _conversion(ByteArrayConverter())
    same = conversion.convert([msg(0, 1), msg(1, 1)]).batch
    assert same is not None
    assert same.timestamp_types == (TimestampType.CREATE_TIME,) * 2 and same.timestamps == (7, 7)
    mixed = conversion.convert([msg(2, 1), msg(3, 2), msg(4, 0)]).batch
    assert mixed is not None
    assert [r.timestamp_type for r in mixed] == [
        TimestampType.CREATE_TIME,
        TimestampType.LOG_APPEND_TIME,
        TimestampType.NO_TIMESTAMP_TYPE,
    ]
    assert [r.timestamp for r in mixed] == [7, 7, None]


class _FailsOn(StringConverter):
    """A string converter that cannot read one value."""

    def to_connect_data(self, topic: str, value: bytes | None) -> Any:
        if value == b"v1":
            raise ValueError("unreadable")
        return super().to_connect_data(topic, value)

    def to_connect_columns(self, topic: str, values: Any) -> Any:
        if b"v1" in values:
            raise ValueError("unreadable")
        return super().to_connect_columns(topic, values)


def test_a_converter_failure_sends_the_batch_record_by_record_under_the_policy() -> None:
    value = _FailsOn()
    value.configure({}, False)
    conversion, metrics = _conversion(value, tolerate=True)
    converted = conversion.convert(_messages())
    assert converted.batch is not None
    assert [(r.topic, r.kafka_offset, r.value) for r in converted.batch] == [
        ("a", 0, "v0"),
        ("b", 0, None),
        ("a", 1, "v3"),
    ]
    assert metrics.records_skipped == 1
    # The skipped message still counts for the offsets: they advance past it.
    assert dict(converted.next_offsets)[("a", 1)] == 1
