"""The source runner's send path against a real broker: every field of every record arrives.

The runner converts a polled batch at once and produces plain records (no key, headers or
partition) with positional ``produce`` calls, others the general way; these tests mix all kinds
of records in one batch and read each message back with its metadata, then check the offsets
the runner stored.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api import Header, SourceRecord, SourceRecordBatch, SourceTask
from connectrt.broker import EmbeddedBroker
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter
from connectrt.data import Schema
from connectrt.runtime.clients.settings import PRODUCER_DEFAULTS
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.runner import SourceTaskRunner
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.settings import SourceRunnerSettings
from connectrt.storage.offset_codec import decode_key
from connectrt.storage.offsets import MemoryOffsetStore
from connectrt.testing.harness import create_topic
from connectrt.transforms.chain import TransformationChain

pytestmark = pytest.mark.integration

STRING = Schema.STRING_SCHEMA
INT32 = Schema.INT32_SCHEMA


class ScriptedTask(SourceTask):
    """Returns the given batches, one per poll, then idles; ``done`` is set after the last."""

    def __init__(self, batches: list[list[SourceRecord]] | list[SourceRecordBatch]) -> None:
        self._batches: list[Any] = list(batches)
        self.done = threading.Event()
        self._stop = threading.Event()

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None:
        if self._batches:
            return self._batches.pop(0)
        self.done.set()
        self._stop.wait(0.05)
        return None

    def stop(self) -> None:
        self._stop.set()


def run_task(
    bootstrap: str,
    batches: list[list[SourceRecord]] | list[SourceRecordBatch],
    *,
    tolerate: bool = False,
    producer: Mapping[str, Any] | None = None,
    schemas: bool = True,
    transforms: Mapping[str, str] | None = None,
) -> tuple[SourceTaskRunner, MemoryOffsetStore]:
    """Run the batches through a SourceTaskRunner (JsonConverter values, with schemas unless
    ``schemas`` is false; String keys), stop it (final commit) and return it with its offset
    store."""
    key = StringConverter()
    key.configure({}, True)
    value = JsonConverter()
    value.configure({"schemas.enable": str(schemas).lower()}, False)
    header = SimpleHeaderConverter()
    header.configure({})
    task_id = TaskId(f"send-{uuid.uuid4().hex[:6]}", 0)
    errors = None
    if tolerate:
        errors = ErrorHandler(
            task_id,
            ErrorPolicy.from_config({"errors.tolerance": "all"}),
            TaskMetrics(task_id.connector, 0),
        )
    store = MemoryOffsetStore()
    store.start()
    task = ScriptedTask(batches)
    settings = SourceRunnerSettings(
        task_config={},
        converters=TaskConverters(key, value, header),
        status=StatusBoard("test"),
        offset_flush_interval_ms=60_000,
        errors=errors,
        producer_config={**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap, **(producer or {})},
        offset_store=store,
        offset_flush_timeout_ms=30_000,
        transforms=TransformationChain(transforms) if transforms else None,
    )
    runner = SourceTaskRunner(task_id, task, settings)
    runner.start()
    try:
        assert task.done.wait(60), "the task was not polled for all its batches within 60 s"
    finally:
        runner.stop()
        runner.join(60)
    assert not runner.is_alive(), "the runner did not stop within 60 s"
    return runner, store


def read_messages(bootstrap: str, topic: str, timeout: float = 60.0) -> list[Message]:
    """Every message of ``topic``, partition by partition, up to each partition's EOF."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([KafkaTopicPartition(topic, p, -2) for p in parts])
        out: list[Message] = []
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(eof) < len(parts):
            assert time.monotonic() < deadline, f"no EOF on {topic} within {timeout} s"
            for m in consumer.consume(1000, 0.5):
                err = m.error()
                if err is not None:
                    assert err.code() == KafkaError._PARTITION_EOF, err.str()
                    eof.add(m.partition() or 0)
                    continue
                eof.discard(m.partition() or 0)
                out.append(m)
        return out
    finally:
        consumer.close()


def envelope(schema: str, payload: str) -> bytes:
    return b'{"schema":' + schema.encode() + b',"payload":' + payload.encode() + b"}"


def stored_offsets(store: MemoryOffsetStore) -> dict[str, Any]:
    out = {}
    for k, v in store.all().items():
        decoded = decode_key(k)
        assert decoded is not None
        out[orjson.dumps(decoded[1]).decode()] = orjson.loads(v)
    return out


def test_a_mixed_batch_arrives_field_by_field(broker: EmbeddedBroker, unique_name):
    """Plain records, timestamps, keys, headers, explicit partitions, a second topic and a
    second schema, interleaved in one batch: each message carries exactly its record's
    fields, in order within each partition."""
    bs = broker.bootstrap_servers
    main, other, split = unique_name("mixed"), unique_name("mixed-other"), unique_name("split")
    create_topic(bs, main)
    create_topic(bs, other)
    create_topic(bs, split, partitions=2)
    part = {"file": "a"}
    ts = 1_700_000_000_123
    batch = [
        SourceRecord(part, {"n": 1}, main, None, None, None, STRING, "plain"),
        SourceRecord(part, {"n": 2}, main, None, None, None, STRING, "stamped", ts),
        SourceRecord(part, {"n": 3}, main, None, STRING, "k1", STRING, "keyed", ts + 1),
        SourceRecord(
            part,
            {"n": 4},
            main,
            None,
            None,
            None,
            STRING,
            "with headers",
            ts + 2,
            [Header("h", "v", STRING)],
        ),
        SourceRecord(part, {"n": 5}, split, 1, None, None, STRING, "partition 1", ts + 3),
        SourceRecord(part, {"n": 6}, other, None, None, None, STRING, "other topic", ts + 4),
        SourceRecord(part, {"n": 7}, main, None, None, None, INT32, 42, ts + 5),
        SourceRecord(part, {"n": 8}, main, None, None, None, None, None),  # tombstone
        SourceRecord(part, {"n": 9}, main, 0, None, None, STRING, "partition 0", ts + 6),
        SourceRecord(part, {"n": 10}, main, None, None, None, STRING, "last", ts + 7),
    ]
    runner, store = run_task(bs, [batch, batch[:2]])  # the second time, all topics are known
    assert runner.failed is None
    assert runner.metrics.records_produced == 12
    s = '{"type":"string","optional":false}'
    i32 = '{"type":"int32","optional":false}'
    got = [(m.key(), m.value(), m.timestamp()[1], m.headers()) for m in read_messages(bs, main)]
    assert [(k, v) for k, v, _, _ in got] == [
        (None, envelope(s, '"plain"')),
        (None, envelope(s, '"stamped"')),
        (b"k1", envelope(s, '"keyed"')),
        (None, envelope(s, '"with headers"')),
        (None, envelope(i32, "42")),
        (None, None),
        (None, envelope(s, '"partition 0"')),
        (None, envelope(s, '"last"')),
        (None, envelope(s, '"plain"')),
        (None, envelope(s, '"stamped"')),
    ]
    stamps = [t for _, _, t, _ in got]
    expected = [ts, ts + 1, ts + 2, ts + 5, ts + 6, ts + 7, ts]
    assert stamps[1:5] + stamps[6:8] + stamps[9:] == expected
    assert [h for *_, h in got] == [None] * 3 + [[("h", b"v")]] + [None] * 6
    (m,) = read_messages(bs, split)
    assert (m.partition(), m.value(), m.timestamp()[1]) == (1, envelope(s, '"partition 1"'), ts + 3)
    (o,) = read_messages(bs, other)
    assert (o.value(), o.timestamp()[1]) == (envelope(s, '"other topic"'), ts + 4)
    assert stored_offsets(store) == {'{"file":"a"}': {"n": 2}}


def test_records_without_timestamp_get_the_producer_time(broker: EmbeddedBroker, unique_name):
    bs = broker.bootstrap_servers
    topic = unique_name("now")
    create_topic(bs, topic)
    before = int(time.time() * 1000)
    runner, _ = run_task(bs, [[SourceRecord(None, None, topic, None, None, None, STRING, "x")]])
    (m,) = read_messages(bs, topic)
    assert runner.failed is None
    assert before - 1000 <= m.timestamp()[1] <= int(time.time() * 1000) + 1000


def test_latest_offset_of_each_source_partition_is_stored(broker: EmbeddedBroker, unique_name):
    """Records of two source partitions interleaved (fresh but equal maps for one of them),
    and records without a source partition: the latest offset of each partition is stored."""
    bs = broker.bootstrap_servers
    topic = unique_name("parts")
    create_topic(bs, topic)
    a = {"table": "a"}
    batches = [
        [
            SourceRecord(a, {"id": 1}, topic, None, None, None, STRING, "a1"),
            SourceRecord({"table": "b"}, {"id": 10}, topic, None, None, None, STRING, "b10"),
            SourceRecord(a, {"id": 2}, topic, None, None, None, STRING, "a2"),
            SourceRecord({"table": "b"}, {"id": 11}, topic, None, None, None, STRING, "b11"),
            SourceRecord(None, None, topic, None, None, None, STRING, "no partition"),
        ],
        [SourceRecord({"table": "b"}, {"id": 12}, topic, None, None, None, STRING, "b12")],
    ]
    runner, store = run_task(bs, batches)
    assert runner.failed is None
    assert len(read_messages(bs, topic)) == 6
    assert stored_offsets(store) == {'{"table":"a"}': {"id": 2}, '{"table":"b"}': {"id": 12}}


def test_a_bad_value_is_skipped_alone_under_tolerance(broker: EmbeddedBroker, unique_name):
    """One value that does not fit its schema in a batch of one schema: the batch conversion
    fails, the records are converted one by one, only the bad one is skipped, and the offset
    of the last record is stored."""
    bs = broker.bootstrap_servers
    topic = unique_name("bad")
    create_topic(bs, topic)
    part = {"p": 1}
    batch = [
        SourceRecord(part, {"n": n}, topic, None, None, None, INT32, n if n != 3 else "three")
        for n in range(6)
    ]
    runner, store = run_task(bs, [batch], tolerate=True)
    assert runner.failed is None
    i32 = '{"type":"int32","optional":false}'
    assert [m.value() for m in read_messages(bs, topic)] == [
        envelope(i32, str(n)) for n in (0, 1, 2, 4, 5)
    ]
    assert runner.metrics.records_skipped == 1
    assert runner.metrics.records_produced == 5
    assert stored_offsets(store) == {'{"p":1}': {"n": 5}}


def test_schemaless_values_a_batch_refuses_are_converted_one_by_one(
    broker: EmbeddedBroker, unique_name
):
    """JsonConverter without envelopes: a batch holding a value orjson cannot write is
    converted value by value, and that value is skipped alone under tolerance."""
    bs = broker.bootstrap_servers
    topic = unique_name("schemaless")
    create_topic(bs, topic)
    part = {"p": 1}
    values: list[Any] = [{"n": n} for n in range(6)]
    values[2] = {"n": object()}
    batch = [SourceRecord(part, {"n": n}, topic, value=v) for n, v in enumerate(values)]
    runner, store = run_task(bs, [batch, batch[:1]], tolerate=True, schemas=False)
    assert runner.failed is None
    got = [orjson.loads(m.value()) for m in read_messages(bs, topic)]
    assert got == [{"n": n} for n in (0, 1, 3, 4, 5, 0)]
    assert runner.metrics.records_skipped == 1
    assert stored_offsets(store) == {'{"p":1}': {"n": 0}}


def test_a_bad_value_fails_the_task_without_tolerance(broker: EmbeddedBroker, unique_name):
    """Without tolerance the bad record fails the task; the records before it were produced and
    their offset is what the final commit stores, nothing after it."""
    bs = broker.bootstrap_servers
    topic = unique_name("bad-fail")
    create_topic(bs, topic)
    part = {"p": 1}
    batch = [
        SourceRecord(part, {"n": n}, topic, None, None, None, INT32, n if n != 3 else "three")
        for n in range(6)
    ]
    key = StringConverter()
    key.configure({}, True)
    value = JsonConverter()
    value.configure({"schemas.enable": "true"}, False)
    header = SimpleHeaderConverter()
    header.configure({})
    store = MemoryOffsetStore()
    store.start()
    task = ScriptedTask([batch])
    runner = SourceTaskRunner(
        TaskId("bad-fail", 0),
        task,
        SourceRunnerSettings(
            task_config={},
            converters=TaskConverters(key, value, header),
            status=StatusBoard("test"),
            offset_flush_interval_ms=60_000,
            producer_config={**PRODUCER_DEFAULTS, "bootstrap.servers": bs},
            offset_store=store,
            offset_flush_timeout_ms=30_000,
        ),
    )
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the failed runner did not end within 60 s"
    assert runner.failed is not None and "VALUE_CONVERTER" in str(runner.failed)
    i32 = '{"type":"int32","optional":false}'
    assert [m.value() for m in read_messages(bs, topic)] == [
        envelope(i32, str(n)) for n in range(3)
    ]
    assert stored_offsets(store) == {'{"p":1}': {"n": 2}}


class CommitRecordTask(ScriptedTask):
    """Records every ``commit_record`` call: (value, metadata as a tuple or None)."""

    def __init__(self, batches: list[list[SourceRecord]]) -> None:
        super().__init__(batches)
        self.committed: list[tuple[Any, tuple[str, int, int] | None]] = []

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        meta = None if metadata is None else (metadata.topic, metadata.partition, metadata.offset)
        self.committed.append((record.value, meta))


def test_commit_record_reports_each_acknowledged_or_skipped_record(
    broker: EmbeddedBroker, unique_name
):
    """A task overriding commit_record gets one call per record: Kafka's coordinates for each
    produced record (plain ones, with a partition, with headers), None for the one skipped."""
    bs = broker.bootstrap_servers
    topic = unique_name("commit-record")
    create_topic(bs, topic, partitions=2)
    part = {"p": 1}
    batch = [
        SourceRecord(part, {"n": 0}, topic, 0, None, None, INT32, 0),
        SourceRecord(part, {"n": 1}, topic, 1, None, None, INT32, 1, 1_700_000_000_000),
        SourceRecord(part, {"n": 2}, topic, 0, None, None, INT32, "bad"),
        SourceRecord(
            part, {"n": 3}, topic, 0, None, None, INT32, 3, None, [Header("h", "v", STRING)]
        ),
    ]
    task = CommitRecordTask([batch])
    key = StringConverter()
    key.configure({}, True)
    value = JsonConverter()
    value.configure({"schemas.enable": "true"}, False)
    header = SimpleHeaderConverter()
    header.configure({})
    task_id = TaskId("commit-record", 0)
    store = MemoryOffsetStore()
    store.start()
    runner = SourceTaskRunner(
        task_id,
        task,
        SourceRunnerSettings(
            task_config={},
            converters=TaskConverters(key, value, header),
            status=StatusBoard("test"),
            offset_flush_interval_ms=60_000,
            errors=ErrorHandler(
                task_id,
                ErrorPolicy.from_config({"errors.tolerance": "all"}),
                TaskMetrics(task_id.connector, 0),
            ),
            producer_config={**PRODUCER_DEFAULTS, "bootstrap.servers": bs},
            offset_store=store,
            offset_flush_timeout_ms=30_000,
        ),
    )
    runner.start()
    try:
        assert task.done.wait(60), "the task was not polled for its batch within 60 s"
    finally:
        runner.stop()
        runner.join(60)
    assert runner.failed is None
    by_value = dict(task.committed)
    assert sorted(by_value, key=str) == [0, 1, 3, "bad"]
    assert by_value["bad"] is None
    messages = {orjson.loads(m.value())["payload"]: m for m in read_messages(bs, topic)}
    for v in (0, 1, 3):
        m = messages[v]
        assert by_value[v] == (topic, m.partition(), m.offset())
    assert (messages[0].partition(), messages[1].partition(), messages[3].partition()) == (0, 1, 0)
    assert messages[1].timestamp()[1] == 1_700_000_000_000
    assert messages[3].headers() == [("h", b"v")]
    assert stored_offsets(store) == {'{"p":1}': {"n": 3}}


def test_record_batches_arrive_from_their_columns_through_a_full_queue(
    broker: EmbeddedBroker, unique_name
):
    """SourceRecordBatches (the first to the topic takes the general path, the others the
    column path) through a producer queue of 100 messages: every value arrives once, in order,
    with the batch's timestamp, and the last record's source offset is stored."""
    bs = broker.bootstrap_servers
    topic = unique_name("columns")
    create_topic(bs, topic)
    part = {"file": "a"}
    ts = 1_700_000_000_000
    batches = [
        SourceRecordBatch(
            part,
            [{"n": b * 2000 + i} for i in range(2000)],
            topic,
            [f"v{b * 2000 + i}" for i in range(2000)],
            STRING,
            ts + b,
        )
        for b in range(3)
    ]
    runner, store = run_task(bs, batches, producer={"queue.buffering.max.messages": 100})
    assert runner.failed is None
    assert not batches[1].records_built and not batches[2].records_built  # the column path
    assert runner.metrics.records_produced == 6000
    messages = read_messages(bs, topic)
    s = '{"type":"string","optional":false}'
    assert [m.value() for m in messages] == [envelope(s, f'"v{i}"') for i in range(6000)]
    assert [m.timestamp()[1] for m in messages] == [ts + i // 2000 for i in range(6000)]
    assert stored_offsets(store) == {'{"file":"a"}': {"n": 5999}}


def test_a_record_batch_goes_through_the_transformation_chain(broker: EmbeddedBroker, unique_name):
    """With SMTs the batch's records are built and transformed like a polled list's."""
    bs = broker.bootstrap_servers
    topic = unique_name("columns-smt")
    routed = f"{topic}-routed"
    create_topic(bs, routed)
    part = {"file": "b"}
    batch = SourceRecordBatch(part, [{"n": i} for i in range(3)], topic, ["a", "b", "c"], STRING)
    smt = {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-routed",
    }
    runner, store = run_task(bs, [batch], transforms=smt)
    assert runner.failed is None
    s = '{"type":"string","optional":false}'
    assert [m.value() for m in read_messages(bs, routed)] == [envelope(s, f'"{v}"') for v in "abc"]
    assert stored_offsets(store) == {'{"file":"b"}': {"n": 2}}
