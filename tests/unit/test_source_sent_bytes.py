"""The source sender's produced-bytes count (task.rate.limit.bytes.per.sec): every path counts
the converted key, value and header bytes, whatever the value type.

A real producer whose broker is unreachable: ``produce`` only queues, which is all the sender
needs; the expected sizes are computed by converting the same records independently.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from connectrt.api import Header, SourceRecord, SourceTask
from connectrt.api.converter import Converter
from connectrt.converters import ByteArrayConverter, JsonConverter, StringConverter
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.at_least_once import AtLeastOnceDelivery
from connectrt.runtime.source.sender import SourceBatchSender
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.storage.offsets import MemoryOffsetStore

SCHEMA = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("s", Schema.STRING_SCHEMA)
VALUE_SCHEMA = SCHEMA.build()


class _Task(SourceTask):
    def start(self, config: Any) -> None: ...

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None: ...


@pytest.fixture
def producer() -> Iterator[Producer]:
    p = Producer({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 1000})
    yield p
    p.purge()


def _converter(cls: type[Converter], is_key: bool, **config: str) -> Converter:
    c = cls()
    c.configure(config, is_key)
    return c


def _sender(key: Converter, value: Converter) -> SourceBatchSender:
    task_id = TaskId("c", 0)
    metrics = TaskMetrics("c", 0)
    errors = ErrorHandler(task_id, ErrorPolicy(), metrics)
    task = _Task()
    header = SimpleHeaderConverter()
    header.configure({})
    sender = SourceBatchSender(
        task_id,
        task,
        converters=TaskConverters(key, value, header),
        errors=errors,
        metrics=metrics,
        offsets=AtLeastOnceDelivery(task_id, task, MemoryOffsetStore(), errors, metrics, 5.0, 60.0),
        topic_creator=None,
        on_topic=lambda topic: None,
        stopping=lambda: False,
    )
    sender.topics.add("t")  # known: the plain path applies
    sender.count_bytes = True
    return sender


def _struct(i: int) -> Struct:
    return Struct(VALUE_SCHEMA).put("id", i).put("s", "x" * (i % 7))


def test_structs_through_the_json_batch_path_count_their_serialized_size(producer: Producer):
    value = _converter(JsonConverter, False)
    sender = _sender(_converter(StringConverter, True), value)
    records = [
        SourceRecord({}, {}, "t", None, None, None, VALUE_SCHEMA, _struct(i)) for i in range(20)
    ]
    sender.send(records, producer)
    expected = sum(len(value.from_connect_data("t", VALUE_SCHEMA, r.value)) for r in records)
    assert sender.take_sent_bytes() == expected > 20 * 30
    assert sender.take_sent_bytes() == 0  # taken


def test_values_converted_one_by_one_count_too(producer: Producer):
    """StringConverter has no batch path: each value is converted as it is produced."""
    value = _converter(StringConverter, False)
    sender = _sender(_converter(StringConverter, True), value)
    records = [SourceRecord({}, {}, "t", None, None, None, None, {"n": i}) for i in range(10)]
    records.append(SourceRecord({}, {}, "t", None, None, None, None, None))  # a null value
    sender.send(records, producer)
    expected = sum(len(str({"n": i}).encode()) for i in range(10))
    assert sender.take_sent_bytes() == expected


def test_keys_and_headers_count_on_the_general_path(producer: Producer):
    value = _converter(JsonConverter, False, **{"schemas.enable": "false"})
    key = _converter(StringConverter, True)
    sender = _sender(key, value)
    records = [
        SourceRecord(
            {},
            {},
            "t",
            None,
            Schema.STRING_SCHEMA,
            f"key-{i}",
            None,
            {"a": i},
            headers=[Header("h", "v" * 10, Schema.STRING_SCHEMA)],
        )
        for i in range(5)
    ]
    sender.send(records, producer)
    expected = sum(
        len(f"key-{i}") + len(value.from_connect_data("t", None, {"a": i})) + len("h") + 10
        for i in range(5)
    )
    assert sender.take_sent_bytes() == expected


def test_bytes_pass_through_and_nothing_is_counted_when_off(producer: Producer):
    raw = _converter(ByteArrayConverter, False)
    sender = _sender(_converter(ByteArrayConverter, True), raw)
    records = [SourceRecord({}, {}, "t", None, None, None, None, b"x" * i) for i in range(1, 6)]
    sender.send(records, producer)
    assert sender.take_sent_bytes() == 15
    sender.count_bytes = False
    sender.send(records, producer)
    assert sender.take_sent_bytes() == 0
