"""SourceRecordBatch: the list of records it stands for, and the sender's column path.

The column path hands every value to ``produce`` from one C-level ``map``; these tests pin the
bookkeeping around it with a producer that fails on cue (a full queue at a given record, a
record ``produce`` refuses): which records were produced, in what order, which source offset
becomes pending and how many records count as pending. The same path against a real broker is
in ``tests/integration/test_source_record_batch_send.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaException

from connectrt.api import SourceRecord, SourceRecordBatch, SourceTask
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter
from connectrt.data import Schema
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.at_least_once import AtLeastOnceDelivery
from connectrt.runtime.source.sender import PARTITION_UA, SourceBatchSender
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskFailure, TaskId
from connectrt.storage.offset_codec import encode_key
from connectrt.storage.offsets import MemoryOffsetStore

STRING = Schema.STRING_SCHEMA
PART = {"file": "a"}


def make_batch(n: int, topic: str = "t", ts: int | None = None) -> SourceRecordBatch:
    return SourceRecordBatch(
        PART, [{"n": i} for i in range(n)], topic, [b"v%d" % i for i in range(n)], None, ts
    )


# -- the batch as a list ----------------------------------------------------------------------
def test_the_batch_is_the_list_of_records_it_stands_for():
    batch = SourceRecordBatch(PART, [{"n": 1}, {"n": 2}], "t", ("a", "b"), STRING, 7)
    expected = [
        SourceRecord(PART, {"n": 1}, "t", None, None, None, STRING, "a", 7),
        SourceRecord(PART, {"n": 2}, "t", None, None, None, STRING, "b", 7),
    ]
    assert not batch.records_built
    assert len(batch) == 2 and batch
    assert batch == expected and list(batch) == expected
    assert batch[-1] == expected[1] and batch[0:1] == expected[:1]
    assert batch.records_built
    assert batch[0] is batch[0]  # built once and kept
    assert [r.value for r in batch] == ["a", "b"]
    assert expected[0] in batch and batch.index(expected[1]) == 1
    assert not SourceRecordBatch(None, [], "t", [])


def test_a_changed_record_is_what_the_batch_holds():
    batch = make_batch(3)
    batch[1].value = b"changed"
    assert [r.value for r in batch] == [b"v0", b"changed", b"v2"]


def test_values_of_any_iterable_kind_are_taken_as_a_list():
    batch = SourceRecordBatch(None, [None] * 3, "t", (x for x in "abc"))  # type: ignore[arg-type]
    assert batch.values == ["a", "b", "c"]


def test_bad_batches_are_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="2 source offsets for 3 values"):
        SourceRecordBatch(PART, [{"n": 1}, {"n": 2}], "t", [1, 2, 3])
    with pytest.raises(ValueError, match="topic must be a non-empty string"):
        SourceRecordBatch(PART, [{"n": 1}], "", [1])


# -- the sender's column path -----------------------------------------------------------------
class StubProducer:
    """Records what ``produce`` got; raises BufferError before the records at ``full_at``
    (until ``poll`` was called ``room_after_polls`` times) and KafkaException for those at
    ``refuse_at``."""

    def __init__(
        self, full_at: int | None = None, room_after_polls: int = 1, refuse_at: int | None = None
    ) -> None:
        self.produced: list[tuple[Any, ...]] = []
        self.calls = 0
        self.full_at = full_at
        self.room_after_polls = room_after_polls
        self.refuse_at = refuse_at
        self.polls = 0

    def produce(self, *args: Any) -> None:
        i = self.calls
        if i == self.full_at and self.polls < self.room_after_polls:
            raise BufferError("queue full")
        self.calls += 1
        if i == self.refuse_at:
            raise KafkaException("message too large")
        self.produced.append(args)

    def poll(self, timeout: float = 0) -> int:
        self.polls += 1
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


class _Task(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


class _CommitRecordTask(_Task):
    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        pass


def make_sender(
    *,
    tolerate: bool = False,
    json: bool = False,
    stopping: bool = False,
    task: SourceTask | None = None,
) -> tuple[SourceBatchSender, AtLeastOnceDelivery, TaskMetrics]:
    task_id = TaskId("cols", 0)
    metrics = TaskMetrics("cols", 0)
    policy = ErrorPolicy.from_config({"errors.tolerance": "all"} if tolerate else {})
    errors = ErrorHandler(task_id, policy, metrics)
    store = MemoryOffsetStore()
    store.start()
    task = task or _Task()
    offsets = AtLeastOnceDelivery(task_id, task, store, errors, metrics, 5.0, 60.0)
    key = StringConverter()
    key.configure({}, True)
    value: Any
    if json:
        value = JsonConverter()
        value.configure({"schemas.enable": "true"}, False)
    else:
        value = ByteArrayConverter()
        value.configure({}, False)
    header = SimpleHeaderConverter()
    header.configure({})
    sender = SourceBatchSender(
        task_id,
        task,
        converters=TaskConverters(key, value, header),
        errors=errors,
        metrics=metrics,
        offsets=offsets,
        topic_creator=None,
        on_topic=lambda topic: None,
        stopping=lambda: stopping,
    )
    sender.topics.add("t")  # the topic is known: the batch takes the column path
    return sender, offsets, metrics


def pending_offset(offsets: AtLeastOnceDelivery) -> Any:
    return offsets.pending.get(encode_key("cols", PART))


def test_a_batch_is_produced_from_its_columns_without_building_records():
    sender, offsets, _ = make_sender()
    producer = StubProducer()
    batch = make_batch(5)
    sender.send(batch, producer)  # type: ignore[arg-type]
    cb = offsets.delivery_callback  # the open epoch's: at-least-once tracks acknowledgements
    assert cb is not None
    assert producer.produced == [("t", b"v%d" % i, None, PARTITION_UA, cb) for i in range(5)]
    assert not batch.records_built
    assert pending_offset(offsets) == {"n": 4} and offsets.pending_records == 5


def test_a_batch_timestamp_goes_to_every_record_positionally():
    sender, offsets, _ = make_sender()
    producer = StubProducer()
    sender.send(make_batch(2, ts=1_700_000_000_000), producer)  # type: ignore[arg-type]
    cb = offsets.delivery_callback
    assert producer.produced == [
        ("t", b"v%d" % i, None, PARTITION_UA, cb, None, 1_700_000_000_000) for i in range(2)
    ]


def test_a_full_queue_waits_for_room_and_goes_on_in_order():
    sender, offsets, _ = make_sender()
    producer = StubProducer(full_at=3, room_after_polls=2)
    sender.send(make_batch(6, ts=5), producer)  # type: ignore[arg-type]
    assert [args[1] for args in producer.produced] == [b"v%d" % i for i in range(6)]
    cb = offsets.delivery_callback
    assert producer.produced[3] == ("t", b"v3", None, PARTITION_UA, cb, None, 5, None)
    assert producer.polls == 2
    assert pending_offset(offsets) == {"n": 5} and offsets.pending_records == 6


def test_stopping_on_a_full_queue_leaves_the_rest_uncommitted():
    sender, offsets, _ = make_sender(stopping=True)
    producer = StubProducer(full_at=3, room_after_polls=99)
    sender.send(make_batch(6), producer)  # type: ignore[arg-type]
    assert [args[1] for args in producer.produced] == [b"v0", b"v1", b"v2"]
    assert pending_offset(offsets) == {"n": 2} and offsets.pending_records == 3


def test_a_refused_record_is_skipped_alone_under_tolerance():
    sender, offsets, metrics = make_sender(tolerate=True)
    producer = StubProducer(refuse_at=2)
    sender.send(make_batch(5), producer)  # type: ignore[arg-type]
    assert [args[1] for args in producer.produced] == [b"v0", b"v1", b"v3", b"v4"]
    assert metrics.records_skipped == 1 and metrics.errors == 1
    assert pending_offset(offsets) == {"n": 4} and offsets.pending_records == 4


def test_a_refused_record_fails_the_task_with_the_offsets_before_it():
    sender, offsets, _ = make_sender()
    producer = StubProducer(refuse_at=2)
    with pytest.raises(TaskFailure, match="KAFKA_PRODUCE"):
        sender.send(make_batch(5), producer)  # type: ignore[arg-type]
    assert [args[1] for args in producer.produced] == [b"v0", b"v1"]
    assert pending_offset(offsets) == {"n": 1} and offsets.pending_records == 2


def test_the_first_batch_to_a_topic_takes_the_general_path():
    sender, offsets, _ = make_sender()
    producer = StubProducer()
    first = make_batch(2, topic="new")
    sender.send(first, producer)  # type: ignore[arg-type]
    assert first.records_built and "new" in sender.topics
    second = make_batch(2, topic="new")
    sender.send(second, producer)  # type: ignore[arg-type]
    assert not second.records_built
    assert [args[:2] for args in producer.produced] == [("new", b"v0"), ("new", b"v1")] * 2
    assert offsets.pending_records == 4


def test_json_values_convert_in_one_call_and_a_bad_one_goes_record_by_record():
    sender, offsets, metrics = make_sender(tolerate=True, json=True)
    producer = StubProducer()
    good = SourceRecordBatch(PART, [{"n": 0}, {"n": 1}], "t", ["a", "b"], STRING)
    sender.send(good, producer)  # type: ignore[arg-type]
    assert not good.records_built
    s = b'{"schema":{"type":"string","optional":false},"payload":'
    assert [args[1] for args in producer.produced] == [s + b'"a"}', s + b'"b"}']
    bad = SourceRecordBatch(PART, [{"n": 2}, {"n": 3}], "t", [1, "d"], STRING)
    sender.send(bad, producer)  # type: ignore[arg-type]
    assert bad.records_built  # the error policy applies per record
    assert [args[1] for args in producer.produced][2:] == [s + b'"d"}']
    assert metrics.records_skipped == 1
    assert pending_offset(offsets) == {"n": 3} and offsets.pending_records == 3


def test_a_task_overriding_commit_record_gets_its_callbacks_through_the_records():
    sender, offsets, _ = make_sender(task=_CommitRecordTask())
    producer = StubProducer()
    batch = make_batch(3)
    sender.send(batch, producer)  # type: ignore[arg-type]
    assert batch.records_built
    assert [args[:2] for args in producer.produced] == [("t", b"v%d" % i) for i in range(3)]
    assert all(callable(args[4]) for args in producer.produced)  # the delivery callback
    assert pending_offset(offsets) == {"n": 2} and offsets.pending_records == 3


def test_the_bytes_produced_from_columns_count_for_a_bytes_rate_limit():
    """task.rate.limit.bytes.per.sec charges what was produced: the column path counts its
    values' bytes (a tombstone counts 0) like the list path does."""
    sender, _, _ = make_sender()
    sender.count_bytes = True
    batch = SourceRecordBatch(PART, [{"n": i} for i in range(3)], "t", [b"abc", None, b"de"])
    sender.send(batch, StubProducer())  # type: ignore[arg-type]
    assert not batch.records_built
    assert sender.take_sent_bytes() == 5
    sender.send([SourceRecord(PART, {"n": 3}, "t", value=b"xyz")], StubProducer())  # type: ignore[arg-type]
    assert sender.take_sent_bytes() == 3
