"""What ``put()`` receives, on a real worker and broker: a SinkRecordBatch that a sink can use
as Kafka Connect's list (keep records across puts, change them, read them again) and as
columns, on the column path and on the record-by-record path (transformations, a malformed
record sent to the dead letter queue with the rest of its batch delivered once)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic
from tests.plugins import keeping_sink
from tests.plugins.keeping_sink import KEPT, PROBLEMS, PUTS, KeepingSink

pytestmark = pytest.mark.integration

registry.register_class(KeepingSink)

ENVELOPE = b'{"schema":{"type":"string","optional":false},"payload":"%s"}'
MALFORMED = b'{"schema":{"type":"string","optional":false},"payload":'  # cut short
BATCHES = {"consumer.max.poll.records": "40"}  # many puts for a few hundred records


def _produce(
    bootstrap: str, topic: str, per_partition: dict[int, list[bytes]], bad_header_at: int = -1
) -> None:
    """Each partition's values in order; a header ``n`` (the offset) on every even offset
    (``{oops`` instead at offset ``bad_header_at``)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition, values in per_partition.items():
        for offset, value in enumerate(values):
            text = b"{oops" if offset == bad_header_at else str(offset).encode()
            headers = [("n", text)] if offset % 2 == 0 else None
            producer.produce(topic, value, partition=partition, headers=headers)
    if producer.flush(30) != 0:
        raise RuntimeError("not all records were acknowledged")


def _kept(store: str) -> list[str]:
    with keeping_sink.LOCK:
        return [value for value, _ in KEPT.get(store, [])]


def _puts(store: str) -> list[tuple[list[int], bool]]:
    with keeping_sink.LOCK:
        return list(PUTS[store])


@pytest.fixture
def store() -> Iterator[str]:
    name = uuid.uuid4().hex
    yield name
    with keeping_sink.LOCK:
        for shared in (PROBLEMS, PUTS, KEPT):
            shared.pop(name, None)


def _start(h: WorkerHarness, name: str, topic: str, store: str, **extra: str) -> None:
    h.start_connector(
        name,
        {
            "connector.class": "KeepingSink",
            "topics": topic,
            "store.id": store,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            **extra,
        },
    )


@pytest.mark.parametrize("path", ["columns", "transformed"])
def test_a_sink_keeps_changes_and_rereads_records_across_puts(
    broker: EmbeddedBroker, unique_name, store: str, path: str
) -> None:
    topic = unique_name("keep")
    create_topic(broker.bootstrap_servers, topic, partitions=2)
    values = {p: [ENVELOPE % f"p{p}-{i}".encode() for i in range(150)] for p in range(2)}
    _produce(broker.bootstrap_servers, topic, values)
    expected = sorted(f"p{p}-{i}+kept" for p in range(2) for i in range(150))
    extra = {"expect.headers": "true"}
    if path == "transformed":  # an SMT chain: records are built one by one, then put
        extra = {
            "transforms": "tag",
            "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.tag.header": "via",
            "transforms.tag.value.literal": "smt",
        }
    with WorkerHarness(broker.bootstrap_servers, BATCHES) as h:
        _start(h, "keeper", topic, store, **extra)
        h.wait_until(
            lambda: h.metrics("keeper")[0].records_committed >= 300,
            90,
            "the sink to commit all 300 records (the group join included)",
        )
        h.wait_until(lambda: len(_kept(store)) == 300, 60, "the kept records to be published")
        assert h.task_states("keeper")[0].state is State.RUNNING
    with keeping_sink.LOCK:
        assert PROBLEMS[store] == []
    assert sorted(_kept(store)) == expected
    puts = _puts(store)
    assert len(puts) >= 300 // 40, "expected many puts of at most 40 records"
    assert all(len(offsets) <= 40 for offsets, _ in puts)
    assert {columns for _, columns in puts} == {path == "columns"}
    if path == "transformed":
        with keeping_sink.LOCK:
            assert all(headers[-1:] == ["via"] for _, headers in KEPT[store])


def test_a_pattern_subscription_converts_each_topics_records(
    broker: EmbeddedBroker, unique_name, store: str
) -> None:
    """Batches may mix topics (``topics.regex``): keys and values are converted per topic."""
    prefix = unique_name("multi")
    for name in ("a", "b"):
        create_topic(broker.bootstrap_servers, f"{prefix}-{name}", partitions=2)
        values = {p: [ENVELOPE % f"{name}{p}-{i}".encode() for i in range(60)] for p in range(2)}
        _produce(broker.bootstrap_servers, f"{prefix}-{name}", values)
    expected = sorted(f"{t}{p}-{i}+kept" for t in "ab" for p in range(2) for i in range(60))
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "multi",
            {
                "connector.class": "KeepingSink",
                "topics.regex": f"{prefix}-(a|b)",
                "store.id": store,
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "expect.headers": "true",
            },
        )
        h.wait_until(
            lambda: h.metrics("multi")[0].records_committed >= 240,
            90,
            "the sink to commit the 240 records of both topics (the group join included)",
        )
        h.wait_until(lambda: len(_kept(store)) == 240, 60, "the kept records to be published")
    with keeping_sink.LOCK:
        assert PROBLEMS[store] == []
    assert sorted(_kept(store)) == expected
    assert all(columns for _, columns in _puts(store))


def _dlq_values(bootstrap: str, topic: str) -> list[tuple[bytes | None, dict[str, str]]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.partition.eof": True}
    )
    consumer.assign([KafkaTopicPartition(topic, 0, -2)])
    out = []
    try:
        while True:
            msgs = consumer.consume(100, 10)
            if not msgs:
                break
            if msgs[-1].error() is not None:
                out += [(m.value(), dict(m.headers() or [])) for m in msgs[:-1]]
                break
            out += [(m.value(), dict(m.headers() or [])) for m in msgs]
    finally:
        consumer.close()
    return [(v, {k: h.decode() for k, h in headers.items()}) for v, headers in out]


def test_a_malformed_record_in_a_batch_goes_to_the_dlq_and_the_rest_once(
    broker: EmbeddedBroker, unique_name, store: str
) -> None:
    topic, dlq = unique_name("bad-in-batch"), unique_name("bad-in-batch-dlq")
    create_topic(broker.bootstrap_servers, topic)
    bad_at = 101
    values = [ENVELOPE % b"v%d" % i if i != bad_at else MALFORMED for i in range(200)]
    _produce(broker.bootstrap_servers, topic, {0: values})
    with WorkerHarness(broker.bootstrap_servers, BATCHES) as h:
        _start(
            h,
            "lenient",
            topic,
            store,
            **{
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("lenient")[0].records_committed >= 200,
            90,
            "the sink to commit all 200 offsets (the malformed record's through the DLQ)",
        )
        h.wait_until(lambda: len(_kept(store)) == 199, 60, "the kept records to be published")
        assert h.task_states("lenient")[0].state is State.RUNNING
        assert h.metrics("lenient")[0].records_skipped == 1
    with keeping_sink.LOCK:
        assert PROBLEMS[store] == []
    kept = Counter(_kept(store))
    assert kept == Counter(f"v{i}+kept" for i in range(200) if i != bad_at)  # each exactly once
    puts = _puts(store)
    delivered = [offset for offsets, _ in puts for offset in offsets]
    assert sorted(delivered) == [i for i in range(200) if i != bad_at]
    # Only the batch that held the malformed record went record by record.
    for offsets, columns in puts:
        if columns:
            assert not offsets[0] < bad_at < offsets[-1]
        else:
            assert offsets[0] - 1 <= bad_at <= offsets[-1] + 1, offsets
    assert sum(1 for _, columns in puts if not columns) <= 1
    assert sum(1 for _, columns in puts if columns) >= 2
    ((value, headers),) = _dlq_values(broker.bootstrap_servers, dlq)
    assert value == MALFORMED  # the original bytes
    assert headers["__connect.errors.offset"] == str(bad_at)
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"


def test_a_header_converter_failing_in_a_batch_sends_that_record_to_the_dlq(
    broker: EmbeddedBroker, unique_name, store: str
) -> None:
    """A header converter that may fail (JsonConverter) converts before put(), so the failure
    goes through errors.*; the rest of the batch, headers converted, is delivered once."""
    topic, dlq = unique_name("bad-header"), unique_name("bad-header-dlq")
    create_topic(broker.bootstrap_servers, topic)
    bad_at = 40
    _produce(
        broker.bootstrap_servers,
        topic,
        {0: [ENVELOPE % b"v%d" % i for i in range(100)]},
        bad_header_at=bad_at,
    )
    with WorkerHarness(broker.bootstrap_servers, BATCHES) as h:
        _start(
            h,
            "headers",
            topic,
            store,
            **{
                "header.converter": "org.apache.kafka.connect.json.JsonConverter",
                "header.converter.schemas.enable": "false",
                "expect.headers": "true",
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("headers")[0].records_committed >= 100,
            90,
            "the sink to commit all 100 offsets (the bad header's record through the DLQ)",
        )
        h.wait_until(lambda: len(_kept(store)) == 99, 60, "the kept records to be published")
    with keeping_sink.LOCK:
        assert PROBLEMS[store] == []
    assert Counter(_kept(store)) == Counter(f"v{i}+kept" for i in range(100) if i != bad_at)
    puts = _puts(store)
    assert sum(1 for _, columns in puts if not columns) <= 1
    assert sum(1 for _, columns in puts if columns) >= 2
    ((value, headers),) = _dlq_values(broker.bootstrap_servers, dlq)
    assert value == ENVELOPE % b"v%d" % bad_at
    assert headers["__connect.errors.offset"] == str(bad_at)
    assert headers["__connect.errors.stage"] == "HEADER_CONVERTER"
