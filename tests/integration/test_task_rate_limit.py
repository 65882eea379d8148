"""``task.rate.limit.records.per.sec`` and ``...bytes.per.sec`` with the real worker, REST server
and embedded broker, on the threads and the processes executors (the Spark executor's test is
``tests/spark/test_rate_limit_spark.py``).

The rate is measured over a window of at least 10 s after a warm-up, from what was committed
(:mod:`tests.rate_support`): the source's committed offset, the sink's committed consumer offset
(both through REST, the same wherever the task runs) or, for the bytes limit of a sink, the
records its ``put()`` accepted. The records limits are asserted within 10% both ways
(:func:`~tests.rate_support.assert_within_10_percent` says why).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins import hanging
from tests.rate_support import (
    WINDOW_S,
    assert_within_10_percent,
    measured_rate,
    sink_committed,
    source_committed,
)

pytestmark = pytest.mark.integration

RATE = 2000.0
WARM_UP = int(2 * RATE)  # records before the window opens (the start-up burst is long spent)


def _running(broker: EmbeddedBroker, executor: str) -> Iterator[RestWorker]:
    running = start_rest_worker(broker.bootstrap_servers, **{"task.executor": executor})
    try:
        yield running
    finally:
        try:
            running.delete_connectors()
        finally:
            running.stop()


@pytest.fixture
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    """A worker running its tasks in threads."""
    yield from _running(broker, "threads")


@pytest.fixture(params=["threads", "processes"])
def any_worker(broker: EmbeddedBroker, request: pytest.FixtureRequest) -> Iterator[RestWorker]:
    """A worker running its tasks in threads, then one running them in task processes."""
    yield from _running(broker, request.param)


def test_a_source_is_held_to_its_records_rate(any_worker: RestWorker, unique_name):
    worker = any_worker
    name = unique_name("rate-source")
    config = {
        "connector.class": "tests.plugins.sequence.SequenceSource",
        "name": name,
        "topic": unique_name("topic"),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "batch.size": "100",
        "batch.interval.ms": "0",  # unlimited, the task could do far more than RATE
        "task.rate.limit.records.per.sec": str(RATE),
    }
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code == 201, response.text
    committed = source_committed(worker.http, name)
    rate = measured_rate(committed, WARM_UP, "the committed source offset")
    assert_within_10_percent(rate, RATE)


def test_a_sink_is_held_to_its_records_rate(
    any_worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    worker = any_worker
    name, topic, store = unique_name("rate-sink"), unique_name("topic"), unique_name("store")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    total = int(RATE * (WINDOW_S + 20))  # more than the test can consume at RATE
    produce(broker.bootstrap_servers, topic, (f"v{i}" for i in range(total)))
    config = {
        "connector.class": "tests.plugins.hanging.HangingSink",
        "name": name,
        "topics": topic,
        "store.id": store,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "task.rate.limit.records.per.sec": str(RATE),
    }
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code == 201, response.text
    committed = sink_committed(worker.http, name)
    rate = measured_rate(committed, WARM_UP, "the committed sink offset")
    assert committed() < total, "the sink ran out of records inside the window"
    assert_within_10_percent(rate, RATE)


# -- task.rate.limit.bytes.per.sec: structured values, counted as serialized -------------------

BYTES_RATE = 60_000.0  # bytes a second


def _record_bytes(bootstrap: str, topic: str) -> int:
    """Key + value + header bytes of the first record of ``topic`` (every record of the test
    plugins used here has the same size)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"size-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        # assign(), not subscribe(): no group join to wait for, and a topic created after the
        # consumer's first metadata request is still found (subscribe() would see it only at
        # the next metadata refresh, minutes later).
        wait_for(
            lambda: topic in consumer.list_topics(timeout=10).topics,
            60,
            f"the task to create {topic}",
        )
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                headers = msg.headers() or []
                return (
                    len(msg.key() or b"")
                    + len(msg.value() or b"")
                    + sum(len(k) + len(v or b"") for k, v in headers)
                )
        raise TimeoutError(f"no record in {topic} within 60 s")
    finally:
        consumer.close()


def _assert_bytes_rate(records_per_s: float, record_size: int) -> None:
    """The limit holds (upper bound, generous for a busy machine's sampling) and records still
    flow (lower bound)."""
    rate = records_per_s * record_size
    print(
        f"{records_per_s:.0f} records/s x {record_size} B = {rate:.0f} B/s (limit {BYTES_RATE:g})"
    )
    assert rate <= BYTES_RATE * 1.15, f"{rate:.0f} B/s against a limit of {BYTES_RATE:g}"
    assert rate >= BYTES_RATE * 0.5, f"{rate:.0f} B/s: the limited task hardly flows"


@pytest.mark.parametrize("kind", ["struct", "map"])
def test_a_source_of_structured_values_is_held_to_its_bytes_rate(
    worker: RestWorker, broker: EmbeddedBroker, unique_name, kind: str
):
    """Struct (with schema) or map (schemaless) values, a string key and a header: the bytes
    counted are what the JSON converter produced, so the records rate is the limit divided by
    the serialized size (without the limit the task produces far more)."""
    name, topic = unique_name("bytes-source"), unique_name("topic")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    config = {
        "connector.class": "tests.plugins.struct_source.StructSource",
        "name": name,
        "topic": topic,
        "value.kind": kind,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": str(kind == "struct").lower(),
        "batch.size": "50",
        "task.rate.limit.bytes.per.sec": str(int(BYTES_RATE)),
    }
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code == 201, response.text

    committed = source_committed(worker.http, name)
    size = _record_bytes(broker.bootstrap_servers, topic)
    assert size > 100  # the struct/map value counts, not only the key
    records_per_s = measured_rate(committed, 100, "the committed source offset")
    _assert_bytes_rate(records_per_s, size)


def test_a_sink_is_held_to_its_bytes_rate_headers_included(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    """JSON map values with a 200-byte header: the consumed key + value + header bytes count,
    so the records rate is the limit divided by the whole message size."""
    name, topic, store = unique_name("bytes-sink"), unique_name("topic"), unique_name("store")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    value = orjson.dumps({"id": "0000000000", "pad": "y" * 80})
    header = [("trace", b"t" * 200)]
    size = len(b"k0000000000") + len(value) + len("trace") + 200
    total = int(BYTES_RATE / size * (WINDOW_S + 12))  # more than the test can consume
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(total):
        producer.produce(topic, value, b"k%010d" % i, headers=header)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    config = {
        "connector.class": "tests.plugins.hanging.HangingSink",
        "name": name,
        "topics": topic,
        "store.id": store,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "task.rate.limit.bytes.per.sec": str(int(BYTES_RATE)),
    }
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code == 201, response.text
    records_per_s = measured_rate(lambda: hanging.PUT[store], 100, "the records put")
    assert hanging.PUT[store] < total, "the sink ran out of records inside the window"
    _assert_bytes_rate(records_per_s, size)
