from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConfigError, ConnectError
from connectrt.storage.kafka_log import TopicLog
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.murmur2 import java_partition
from connectrt.storage.offset_codec import decode_key, encode_key, encode_value

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


def _key(n: int) -> bytes:
    return encode_key("file-source", {"filename": f"file-{n}.txt"})


def _value(n: int) -> bytes:
    v = encode_value({"position": n})
    assert v is not None
    return v


@pytest.fixture
def open_store(broker: EmbeddedBroker) -> Iterator[Callable[..., KafkaOffsetStore]]:
    opened: list[KafkaOffsetStore] = []

    def make(topic: str, **kwargs: Any) -> KafkaOffsetStore:
        store = KafkaOffsetStore(
            topic, bootstrap_servers=broker.bootstrap_servers, timeout=10.0, **kwargs
        )
        store.start()
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.stop()


def _read_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, bytes, bytes | None]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "verify",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: list[tuple[int, bytes, bytes | None]] = []
        eof: set[int] = set()
        deadline = time.monotonic() + 10
        while len(eof) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.1):
                err = msg.error()
                if err is not None:
                    assert err.code() == KafkaError._PARTITION_EOF, err
                    eof.add(msg.partition())
                else:
                    out.append((msg.partition(), msg.key(), msg.value()))
        assert len(eof) == partitions
        return out
    finally:
        consumer.close()


def test_state_survives_restart(
    open_store: Callable[..., KafkaOffsetStore], unique_name: Names
) -> None:
    topic = unique_name("offsets")
    first = open_store(topic)
    assert first.all() == {}
    first.set({_key(i): _value(i) for i in range(30)})
    first.set({_key(0): _value(100)})
    assert first.get([_key(0), b"missing"]) == {_key(0): _value(100), b"missing": None}
    expected = first.all()
    assert len(expected) == 30
    first.stop()

    second = open_store(topic)
    assert second.all() == expected
    assert second.log.partition_count == 25


def test_tombstone_deletes_after_restart(
    open_store: Callable[..., KafkaOffsetStore], unique_name: Names
) -> None:
    topic = unique_name("offsets")
    first = open_store(topic, partitions=3)
    first.set({_key(1): _value(1), _key(2): _value(2)})
    first.set({_key(1): None})
    assert first.all() == {_key(2): _value(2)}
    first.stop()
    second = open_store(topic, partitions=3)
    assert second.all() == {_key(2): _value(2)}
    assert second.get([_key(1)]) == {_key(1): None}


def test_keys_land_in_java_partition(
    broker: EmbeddedBroker, open_store: Callable[..., KafkaOffsetStore], unique_name: Names
) -> None:
    topic = unique_name("offsets")
    store = open_store(topic, partitions=25)
    keys = [_key(i) for i in range(60)]
    store.set({k: _value(i) for i, k in enumerate(keys)})
    records = _read_all(broker.bootstrap_servers, topic, 25)
    assert sorted(k for _, k, _ in records) == sorted(keys)
    used = set()
    for partition, key, _value_bytes in records:
        assert partition == java_partition(key, 25), key
        assert decode_key(key) is not None
        used.add(partition)
    assert len(used) > 10  # the keys really spread over the partitions


def test_concurrent_sets_match_topic_after_restart(
    open_store: Callable[..., KafkaOffsetStore], unique_name: Names
) -> None:
    topic = unique_name("offsets")
    store = open_store(topic, partitions=5)

    def task(n: int) -> None:
        for i in range(10):
            store.set({_key(i): _value(n * 100 + i), _key(1000 + n): _value(i)})

    threads = [threading.Thread(target=task, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    view = store.all()
    assert len(view) == 14
    store.stop()
    assert open_store(topic, partitions=5).all() == view


def test_existing_topic_is_left_alone(
    broker: EmbeddedBroker, open_store: Callable[..., KafkaOffsetStore], unique_name: Names
) -> None:
    topic = unique_name("offsets")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    compacted = {"cleanup.policy": "compact"}  # else refused, where the broker describes it
    new = NewTopic(topic, num_partitions=2, replication_factor=1, config=compacted)
    admin.create_topics([new])[topic].result(5)
    store = open_store(topic, partitions=25)
    assert store.log.partition_count == 2
    store.set({_key(1): _value(1)})
    assert store.get([_key(1)]) == {_key(1): _value(1)}


def test_replication_factor_above_the_brokers_is_refused_naming_the_setting(
    broker: EmbeddedBroker, unique_name: Names
) -> None:
    # Kafka Connect's default of 3 on a one-broker cluster: Apache Kafka refuses to create the
    # topic, and the store refuses it first on every broker (some accept it silently).
    brokers = len(
        AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).brokers
    )
    topic = unique_name("offsets")
    store = KafkaOffsetStore(
        topic,
        bootstrap_servers=broker.bootstrap_servers,
        partitions=1,
        replication_factor=brokers + 2,
        timeout=10.0,
    )
    with pytest.raises(
        ConfigError, match=re.escape("offset.storage.replication.factor")
    ) as refused:
        store.start()
    assert f"the Kafka cluster has {brokers} broker" in str(refused.value)
    store.stop()
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert topic not in topics.topics  # refused before creating anything


# -- TopicLog ---------------------------------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None, int, int]] = []

    def __call__(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        self.records.append((key, value, partition, offset))


def _topic_log(bootstrap: str, topic: str, recorder: _Recorder, **kwargs: Any) -> TopicLog:
    conf = {"bootstrap.servers": bootstrap}
    return TopicLog(topic, conf, conf, conf, recorder, **kwargs)


def test_read_to_end_sees_other_producers_and_returns_promptly(
    broker: EmbeddedBroker, unique_name: Names
) -> None:
    topic = unique_name("log")
    recorder = _Recorder()
    log = _topic_log(broker.bootstrap_servers, topic, recorder, partitions=3, timeout=10.0)
    log.start()
    try:
        assert recorder.records == []
        other = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        for round_no in range(5):
            before = len(recorder.records)
            for i in range(7):
                other.produce(topic, key=f"k{round_no}-{i}".encode(), value=b"v")
            assert other.flush(5) == 0
            # Acknowledged before the call, so it must be seen by the call - no sleeping.
            log.read_to_end()
            assert len(recorder.records) == before + 7
        # Nothing new: must come back without waiting out the 10 s stall timeout (the bug this
        # guards against) and deliver nothing. 5 s leaves room for a busy machine.
        for _ in range(3):
            started = time.monotonic()
            log.read_to_end()
            assert time.monotonic() - started < 5.0
        assert len(recorder.records) == 35
        offsets = {(p, o) for _, _, p, o in recorder.records}
        assert len(offsets) == 35  # no record delivered twice
        assert sum(log.positions().values()) == 35
    finally:
        log.stop()


def test_start_replays_and_send_and_wait_reports_partitions(
    broker: EmbeddedBroker, unique_name: Names
) -> None:
    topic = unique_name("log")
    writer = _topic_log(broker.bootstrap_servers, topic, _Recorder(), partitions=4)
    writer.start()
    entries = [(f"key-{i}".encode(), f"v{i}".encode()) for i in range(10)]
    results = writer.send_and_wait(entries)
    for (key, _), (partition, _offset) in zip(entries, results, strict=True):
        assert partition == java_partition(key, 4)
    writer.send(b"key-x", None)
    writer.flush(5)
    writer.stop()

    recorder = _Recorder()
    reader = _topic_log(broker.bootstrap_servers, topic, recorder, partitions=4)
    reader.start()
    try:
        assert sorted((k, v) for k, v, _, _ in recorder.records) == sorted(
            [*entries, (b"key-x", None)]
        )
    finally:
        reader.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_bootstrap_fails_within_bounded_time(unique_name: Names) -> None:
    port = _closed_port()
    store = KafkaOffsetStore(
        unique_name("offsets"), bootstrap_servers=f"127.0.0.1:{port}", timeout=2.0
    )
    started = time.monotonic()
    with pytest.raises(ConnectError, match=re.escape(f"Could not reach Kafka at 127.0.0.1:{port}")):
        store.start()
    assert time.monotonic() - started < 10
    store.stop()
