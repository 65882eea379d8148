"""SourceRecordBatch: the list of records it stands for, and the sender's column path.

The column path hands every value to ``produce`` from one C-level ``map``; these tests pin the
bookkeeping around it with a producer that fails on cue (a full queue at a given record, a
record ``produce`` refuses): which records were produced, in what order, which source offset
becomes pending and how many records count as pending. The same path against a real broker is
in ``tests/integration/test_source_record_batch_send.py``.

A list of plain records takes the same mapped produce (with the C extension: its
``SlotFiller.plain_values`` gives the values); the list tests compare everything a send did with
what the per-record loop (the path without the extension) does on the same list.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaException

from connectrt.api import Header, SourceRecord, SourceRecordBatch, SourceTask
from connectrt.api.records import SOURCE_FILLER
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

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        return None


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


# -- the sender's list path: a list of plain records from its values --------------------------
needs_c = pytest.mark.skipif(SOURCE_FILLER is None, reason="connectrt._speedups not in use")
TS = 1_700_000_000_000


def make_list(n: int, topic: str = "t", ts: int | None = None) -> list[SourceRecord]:
    return [SourceRecord(PART, {"n": i}, topic, value=b"v%d" % i, timestamp=ts) for i in range(n)]


class _SubRecord(SourceRecord):
    __slots__ = ()


def sent(
    make: Callable[[], list[Any]],
    *,
    per_record: bool,
    full_at: int | None = None,
    room_after_polls: int = 1,
    refuse_at: int | None = None,
    added: dict[int, Any] | None = None,
    **sender_kw: Any,
) -> dict[str, Any]:
    """Everything sending ``make()`` (to senders that know topics t and u) did: the produce
    calls (the delivery callback as "cb", a record's own callback as "own cb"), the pending
    offsets and counters, the error raised, whether the mapped produce ran; ``per_record``:
    through the per-record loop only (the path without the C extension)."""
    sender, offsets, metrics = make_sender(**sender_kw)
    sender.topics.add("u")
    sender.count_bytes = True
    if per_record:
        sender._plain_values = None
    mapped: list[int] = []
    produce_all = sender._produce_all

    def spy(*args: Any) -> int:
        mapped.append(len(args[2]))
        return produce_all(*args)

    sender._produce_all = spy  # type: ignore[method-assign]
    producer = StubProducer(full_at, room_after_polls, refuse_at)
    error = None
    try:
        sender.send(make(), producer, added)  # type: ignore[arg-type]
    except Exception as e:  # TaskFailure, ToleranceExceeded
        error = f"{type(e).__name__}: {e}"
    cb = offsets.delivery_callback

    def shown(arg: Any) -> Any:
        if arg is not None and arg is cb:
            return "cb"
        return "own cb" if callable(arg) else arg

    return {
        "produced": [tuple(map(shown, args)) for args in producer.produced],
        "polls": producer.polls,
        "pending": dict(offsets.pending),
        "pending_records": offsets.pending_records,
        "sender_produced": sender.produced,
        "skipped": metrics.records_skipped,
        "errors": metrics.errors,
        "bytes": sender.take_sent_bytes(),
        "error": error,
        "topics": sorted(sender.topics),
        "mapped": bool(mapped),
    }


def same_as_per_record(
    make: Callable[[], list[Any]], ignore: tuple[str, ...] = (), **kw: Any
) -> dict[str, Any]:
    """What the list path did, checked to be what the per-record loop does (but for which of
    them ran, and the items named in ``ignore``)."""
    fast = sent(make, per_record=False, **kw)
    slow = sent(make, per_record=True, **kw)
    assert not slow["mapped"]
    skip = dict.fromkeys(("mapped", *ignore))
    assert {**fast, **skip} == {**slow, **skip}
    return fast


def test_a_plain_list_is_produced_by_the_mapped_produce():
    got = same_as_per_record(lambda: make_list(5))
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert got["produced"] == [("t", b"v%d" % i, None, PARTITION_UA, "cb") for i in range(5)]
    assert got["pending"] == {encode_key("cols", PART): {"n": 4}}
    assert got["pending_records"] == got["sender_produced"] == 5 and got["bytes"] == 10


def test_a_plain_list_with_one_timestamp_passes_it_positionally():
    def make() -> list[SourceRecord]:
        records = make_list(3, ts=TS)
        records[1].timestamp = int(str(TS))  # equal, not the same int object
        return records

    got = same_as_per_record(make)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert got["produced"] == [
        ("t", b"v%d" % i, None, PARTITION_UA, "cb", None, TS) for i in range(3)
    ]


def test_tombstones_empty_headers_and_an_equal_topic_string_stay_plain():
    def make() -> list[SourceRecord]:
        records = make_list(4)
        records[1].value = None
        records[2].headers = []
        records[3].topic = "".join(["t"])  # equal, another object
        return records

    got = same_as_per_record(make)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v0", None, b"v2", b"v3"]
    assert got["bytes"] == 6


def test_a_plain_list_over_two_source_partitions_notes_each():
    other = {"file": "b"}

    def make() -> list[SourceRecord]:
        records = make_list(4)
        records[0].source_partition = other
        records[2].source_partition = other
        return records

    got = same_as_per_record(make)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert got["pending"] == {
        encode_key("cols", other): {"n": 2},
        encode_key("cols", PART): {"n": 3},
    }


def _with(i: int, **changes: Any) -> Callable[[], list[Any]]:
    def make() -> list[Any]:
        records: list[Any] = make_list(4, ts=TS)
        for name, value in changes.items():
            setattr(records[i], name, value)
        return records

    return make


def _subclass_at(i: int) -> list[Any]:
    records: list[Any] = make_list(4)
    r = records[i]
    records[i] = _SubRecord(r.source_partition, r.source_offset, r.topic, value=r.value)
    return records


def _not_a_record_at(i: int) -> list[Any]:
    records: list[Any] = make_list(4)
    r = records[i]
    records[i] = SimpleNamespace(
        **{name: getattr(r, name) for name in SourceRecord.__dataclass_fields__}
    )
    return records


@pytest.mark.parametrize(
    "make",
    [
        _with(2, key="k"),
        _with(0, key_schema=STRING, key="k"),
        _with(3, headers=[Header("h", "x")]),
        _with(1, kafka_partition=0),
        _with(2, headers=(Header("h", "x"),)),
    ],
    ids=["key", "key-schema-first", "headers-last", "partition", "headers-tuple"],
)
def test_a_record_that_is_not_plain_is_sent_alone_in_its_place(
    make: Callable[[], list[Any]],
) -> None:
    """A key, headers or an explicit partition (a traced record's traceparent header, say):
    the other records still go by the C loop, that one the general way, in order."""
    got = same_as_per_record(make)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v%d" % i for i in range(4)]
    assert got["pending"] == {encode_key("cols", PART): {"n": 3}}
    assert got["pending_records"] == 4


def _headers_at(*at: int, n: int = 8) -> Callable[[], list[Any]]:
    def make() -> list[Any]:
        records: list[Any] = make_list(n)
        for i in at:
            records[i].headers = [Header("traceparent", f"00-{i:032x}-{i:016x}-01")]
        return records

    return make


@pytest.mark.parametrize("at", [(0,), (7,), (3, 4), (0, 1, 2, 3, 4, 5, 6, 7), (1, 5)])
def test_records_of_their_own_anywhere_in_the_list(at: tuple[int, ...]) -> None:
    got = same_as_per_record(_headers_at(*at))
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v%d" % i for i in range(8)]
    with_headers = [i for i, args in enumerate(got["produced"]) if len(args) > 5 and args[-1]]
    assert with_headers == list(at)


@pytest.mark.parametrize(
    "failure",
    [
        {"full_at": 2, "room_after_polls": 2},
        {"full_at": 3, "room_after_polls": 2},
        {"full_at": 3, "room_after_polls": 99, "stopping": True},
        {"full_at": 5, "room_after_polls": 99, "stopping": True},
        {"refuse_at": 3, "tolerate": True},
        {"refuse_at": 3},
        {"refuse_at": 5, "tolerate": True},
        {"refuse_at": 5},
    ],
    ids=[
        "full-before-own",
        "full-at-own",
        "stop-at-own",
        "stop-after-own",
        "refused-own-tolerated",
        "refused-own",
        "refused-after-own-tolerated",
        "refused-after-own",
    ],
)
def test_a_full_queue_or_a_refusal_around_a_record_of_its_own(failure: dict[str, Any]) -> None:
    """The record at index 3 has headers: back-pressure, stopping and refusals at it, before and
    after it leave what the per-record loop leaves (produced calls, offsets, counters, error)."""
    same_as_per_record(_headers_at(3, n=7), **failure)


@pytest.mark.parametrize(
    "make",
    [
        _with(2, topic="u"),
        _with(0, topic="u"),
        _with(2, timestamp=TS + 1),
        _with(3, timestamp=None),
        lambda: _subclass_at(0),
        lambda: _subclass_at(2),
        lambda: _not_a_record_at(1),
    ],
    ids=[
        "two-topics",
        "two-topics-first",
        "two-timestamps",
        "timestamp-and-none",
        "subclass-first",
        "subclass",
        "not-a-record",
    ],
)
def test_a_list_not_all_of_one_topic_timestamp_and_class_takes_the_per_record_loop(
    make: Callable[[], list[Any]],
) -> None:
    got = same_as_per_record(make)
    assert not got["mapped"]
    assert [args[1] for args in got["produced"]] == [b"v%d" % i for i in range(4)]


@pytest.mark.parametrize("tolerate", [True, False])
def test_a_str_value_through_the_bytearray_converter_is_sent_alone(tolerate: bool):
    # The byte count for the rate limit: the list path counts the plain values of the batch
    # before producing it (as the per-record loop does for values converted as a batch), the
    # loop converting one by one counts as it goes; they differ only when the task fails.
    ignore = () if tolerate else ("bytes",)
    got = same_as_per_record(_with(1, value="text"), ignore=ignore, tolerate=tolerate)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert (got["error"] is None) is tolerate
    if tolerate:
        assert got["bytes"] == 6  # v0, v2, v3


def test_a_task_overriding_commit_record_takes_the_per_record_loop():
    got = same_as_per_record(lambda: make_list(3), task=_CommitRecordTask())
    assert not got["mapped"]
    assert [args[4] for args in got["produced"]] == ["own cb"] * 3


def test_the_first_list_to_a_topic_takes_the_per_record_loop_then_the_next_is_mapped():
    for per_record in (False, True):
        sender, offsets, _ = make_sender()
        if per_record:
            sender._plain_values = None
        producer = StubProducer()
        first = make_list(2, topic="new")
        sender._produce_all = lambda *a: pytest.fail("mapped")  # type: ignore[method-assign]
        sender.send(first, producer)  # type: ignore[arg-type]
        assert "new" in sender.topics
        del sender._produce_all
        sender.send(make_list(3, topic="new"), producer)  # type: ignore[arg-type]
        assert [args[:2] for args in producer.produced] == [
            ("new", b"v0"),
            ("new", b"v1"),
            ("new", b"v0"),
            ("new", b"v1"),
            ("new", b"v2"),
        ]
        assert offsets.pending_records == 5 and pending_offset(offsets) == {"n": 2}


class _MetadataProducer(StubProducer):
    """Notes each metadata request: its topic, whether the sender tracked the topic by then
    (topic creation done), and how many records had been produced; ``refuse`` fails them."""

    def __init__(self, sender: SourceBatchSender, refuse: bool = False) -> None:
        super().__init__()
        self.sender, self.refuse = sender, refuse
        self.requests: list[tuple[str | None, bool, int]] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        self.requests.append((topic, topic in self.sender.topics, len(self.produced)))
        if self.refuse:
            raise KafkaException("timed out")


def test_a_producer_asks_for_its_producer_id_before_its_first_record_only():
    """librdkafka's idempotent producer would otherwise wait its 500 ms retry for an id (see
    ``request_producer_id``): two metadata requests for the first record's topic, once the
    topic is tracked (created) and before the record; none for later records or topics."""
    sender, _, _ = make_sender()
    producer = _MetadataProducer(sender)
    sender.send(make_list(2, topic="new"), producer)  # type: ignore[arg-type]
    assert producer.requests == [("new", True, 0), ("new", True, 0)]
    sender.send(make_list(3, topic="new"), producer)  # type: ignore[arg-type]
    sender.send(make_list(1, topic="other"), producer)  # type: ignore[arg-type]
    assert len(producer.requests) == 2 and len(producer.produced) == 6


def test_a_failed_producer_id_request_leaves_the_record_to_the_produce_path():
    sender, offsets, _ = make_sender()
    producer = _MetadataProducer(sender, refuse=True)
    sender.send(make_list(2, topic="new"), producer)  # type: ignore[arg-type]
    assert producer.requests == [("new", True, 0)]  # the second request is not made
    assert [args[:2] for args in producer.produced] == [("new", b"v0"), ("new", b"v1")]
    assert offsets.pending_records == 2


def test_a_full_queue_mid_list_is_waited_out_in_order():
    got = same_as_per_record(lambda: make_list(6, ts=5), full_at=3, room_after_polls=2)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v%d" % i for i in range(6)]
    assert got["produced"][3] == ("t", b"v3", None, PARTITION_UA, "cb", None, 5, None)
    assert got["polls"] == 2 and got["pending_records"] == 6


def test_stopping_on_a_full_queue_mid_list_notes_the_offsets_before_it():
    got = same_as_per_record(lambda: make_list(6), full_at=3, room_after_polls=99, stopping=True)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v0", b"v1", b"v2"]
    assert got["pending"] == {encode_key("cols", PART): {"n": 2}}
    assert got["pending_records"] == 3


def test_a_refused_record_mid_list_is_skipped_alone_under_tolerance():
    got = same_as_per_record(lambda: make_list(5), refuse_at=2, tolerate=True)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert [args[1] for args in got["produced"]] == [b"v0", b"v1", b"v3", b"v4"]
    assert got["skipped"] == 1 and got["errors"] == 1
    assert got["pending"] == {encode_key("cols", PART): {"n": 4}}
    assert got["pending_records"] == 4


def test_a_refused_record_mid_list_fails_the_task_with_the_offsets_before_it():
    got = same_as_per_record(lambda: make_list(5), refuse_at=2)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    assert got["error"] is not None and "KAFKA_PRODUCE" in got["error"]
    assert [args[1] for args in got["produced"]] == [b"v0", b"v1"]
    assert got["pending"] == {encode_key("cols", PART): {"n": 1}}
    assert got["pending_records"] == 2


def test_a_tuple_of_plain_records_takes_the_per_record_loop():
    got = same_as_per_record(lambda: tuple(make_list(3)))  # type: ignore[arg-type,return-value]
    assert not got["mapped"] and len(got["produced"]) == 3


def test_a_refused_first_record_fails_the_task_with_no_offset():
    got = same_as_per_record(lambda: make_list(3), refuse_at=0)
    assert got["error"] is not None and got["pending"] == {} and got["pending_records"] == 0


# -- headers added to some records (a tracer's traceparent) --------------------------------------
def _added(*at: int) -> dict[int, Any]:
    return {i: [("traceparent", b"00-%032x-%016x-01" % (i + 1, i + 1))] for i in at}


@pytest.mark.parametrize(
    "at, own",
    [((0,), ()), ((7,), ()), ((2, 3), ()), (tuple(range(8)), ()), ((1, 5), (5,)), ((1,), (4,))],
    ids=["first", "last", "adjacent", "all", "one-of-them-with-headers", "beside-own-headers"],
)
def test_added_headers_go_to_their_records_after_their_own(
    at: tuple[int, ...], own: tuple[int, ...]
) -> None:
    """The C loop gives the plain records their added headers, a record with headers of its
    own gets them after its own: what the per-record loop does (the same calls, offsets and
    bytes), the rest of the list still on the C loop."""
    added = _added(*at)
    got = same_as_per_record(_headers_at(*own), added=added)
    assert got["mapped"] is (SOURCE_FILLER is not None)
    produced = got["produced"]
    assert [args[1] for args in produced] == [b"v%d" % i for i in range(8)]
    for i, args in enumerate(produced):
        own_headers = [("traceparent", b"00-%032x-%016x-01" % (i, i))] if i in own else []
        want = own_headers + added.get(i, [])
        assert (args[7] if len(args) > 7 else None) == (want or None)
        if i in added:
            assert args[:7] == ("t", b"v%d" % i, None, PARTITION_UA, "cb", None, 0)


@pytest.mark.parametrize(
    "failure",
    [
        {"full_at": 3, "room_after_polls": 2},
        {"full_at": 3, "room_after_polls": 99, "stopping": True},
        {"refuse_at": 3, "tolerate": True},
        {"refuse_at": 3},
        {"refuse_at": 4},
    ],
    ids=["full-at-added", "stop-at-added", "refused-added-tolerated", "refused-added", "after"],
)
def test_a_full_queue_or_a_refusal_at_a_record_with_added_headers(failure: dict[str, Any]):
    """Back-pressure at a record the C loop gives added headers retries it with them; stopping
    and refusals there leave what the per-record loop leaves (the bytes of the added headers
    are counted for the batch before it is produced, as its values are)."""
    got = same_as_per_record(lambda: make_list(6), ("bytes",), added=_added(1, 3), **failure)
    if "full_at" in failure and not failure.get("stopping"):
        assert got["produced"][3][7] == _added(3)[3]


def test_a_batch_with_added_headers_is_produced_from_its_columns():
    sender, offsets, _ = make_sender()
    sender.count_bytes = True
    producer = StubProducer()
    batch = make_batch(5, ts=7)
    sender.send(batch, producer, _added(0, 3))  # type: ignore[arg-type]
    cb = offsets.delivery_callback
    head = (None, PARTITION_UA, cb, None, 7)
    assert producer.produced == [
        ("t", b"v0", *head, _added(0)[0]),
        ("t", b"v1", *head),
        ("t", b"v2", *head),
        ("t", b"v3", *head, _added(3)[3]),
        ("t", b"v4", *head),
    ]
    assert batch.records_built is (SOURCE_FILLER is None)  # built for the per-record loop
    assert pending_offset(offsets) == {"n": 4} and offsets.pending_records == 5
    assert sender.take_sent_bytes() == 5 * 2 + 2 * (len("traceparent") + 55)


@pytest.mark.parametrize("task", [_Task(), _CommitRecordTask()], ids=["plain", "commit-record"])
def test_json_values_and_commit_record_tasks_get_added_headers_in_the_per_record_loop(
    task: SourceTask,
) -> None:
    sender, offsets, _ = make_sender(json=True, task=task)
    producer = StubProducer()
    records = [
        SourceRecord(PART, {"n": i}, "t", value_schema=STRING, value=f"s{i}") for i in range(4)
    ]
    sender.send(records, producer, _added(2))  # type: ignore[arg-type]
    assert [b'"s%d"' % i in args[1] for i, args in enumerate(producer.produced)] == [True] * 4
    headers = [args[7] if len(args) > 7 else None for args in producer.produced]
    assert headers == [None, None, _added(2)[2], None]
    assert offsets.pending_records == 4


# -- SlotFiller.plain_values against a Python reference -----------------------------------------
def plain_values_py(
    records: list[Any],
) -> tuple[str, int | None, list[Any], bool, list[int]] | None:
    """What ``SOURCE_FILLER.plain_values(records)`` answers, in Python."""
    if not records or type(records[0]) is not SourceRecord:
        return None
    fields = (
        "source_partition", "key", "key_schema", "kafka_partition", "headers", "topic",
        "timestamp", "value",
    )  # fmt: skip
    try:
        topic, ts = records[0].topic, records[0].timestamp
        partition = records[0].source_partition
        if type(topic) is not str or not (ts is None or type(ts) is int):
            return None
        values: list[Any] = []
        own: list[int] = []
        for i, r in enumerate(records):
            if type(r) is not SourceRecord:
                return None
            for name in fields:
                getattr(r, name)  # unset: AttributeError
            if not (r.topic is topic or (type(r.topic) is str and r.topic == topic)) or not (
                r.timestamp is ts
                or (ts is not None and type(r.timestamp) is int and r.timestamp == ts)
            ):
                return None
            if (
                r.key is not None
                or r.key_schema is not None
                or r.kafka_partition is not None
                or not (r.headers is None or (type(r.headers) is list and not r.headers))
                or not (r.value is None or type(r.value) is bytes)
            ):
                own.append(i)
                values.append(None)
            else:
                values.append(r.value)
    except AttributeError:  # an unset slot
        return None
    one = all(r.source_partition is partition for r in records)
    return topic, ts, values, one, own


class _Str(str):
    pass


class _Bytes(bytes):
    pass


_VARIANTS: dict[str, list[Any]] = {
    "topic": ["u", "".join(["t"]), _Str("t"), 7],
    "key": [b"k", "k", 0],
    "key_schema": [STRING],
    "kafka_partition": [0, 3],
    "headers": [[], [], [Header("h", b"x")], (), [None]],
    "timestamp": [TS, int(str(TS)), TS + 1, None, True, 5.0, 0],
    "value": [None, None, "s", bytearray(b"x"), _Bytes(b"x"), 1, b""],
    "source_partition": [PART, dict(PART), None, {"other": 1}],
}


def _random_list(rng: random.Random) -> list[Any]:
    n = rng.choice([0, 1, 1, 2, 3, 5, 8])
    ts = rng.choice([None, None, TS, 0])
    records: list[Any] = [
        SourceRecord(PART, {"n": i}, "t", value=b"v%d" % i, timestamp=ts) for i in range(n)
    ]
    for i in range(n):
        if rng.random() < 0.7:
            continue
        what = rng.choice([*_VARIANTS, "type", "unset", "subclass"])
        if what == "type":
            records[i] = SimpleNamespace(**{f: getattr(records[i], f) for f in _VARIANTS})
        elif what == "unset":
            delattr(records[i], rng.choice(list(_VARIANTS)))
        elif what == "subclass":
            r = records[i]
            records[i] = _SubRecord(PART, {"n": i}, r.topic, value=r.value, timestamp=r.timestamp)
        else:
            setattr(records[i], what, rng.choice(_VARIANTS[what]))
    return records


@needs_c
def test_plain_values_answers_as_the_python_reference():
    assert SOURCE_FILLER is not None
    rng = random.Random(20261130)
    kinds = set()
    for _ in range(5000):
        records = _random_list(rng)
        expected = plain_values_py(records)
        got = SOURCE_FILLER.plain_values(records)
        assert got == expected, records
        if got is not None:
            assert type(got[0]) is str and got[0] is records[0].topic
            assert got[1] is records[0].timestamp
            assert all(
                v is (None if i in got[4] else r.value)
                for i, (v, r) in enumerate(zip(got[2], records, strict=True))
            )
        kinds.add(None if got is None else (got[3], bool(got[4])))
    # every answer was seen: None, one partition or not, records of their own or not
    assert kinds == {None, (True, False), (False, False), (True, True), (False, True)}


@needs_c
def test_plain_values_refuses_what_it_cannot_read():
    assert SOURCE_FILLER is not None
    with pytest.raises(TypeError, match="takes a list"):
        SOURCE_FILLER.plain_values(tuple(make_list(2)))
    assert SOURCE_FILLER.plain_values([]) is None
    from connectrt import _speedups

    partial_filler = _speedups.SlotFiller(SourceRecord, ("topic", "value"))
    with pytest.raises(TypeError, match="has no slot for every one"):
        partial_filler.plain_values(make_list(1))
