from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.status import State, Status, TargetState
from connectrt.storage.kafka_config import KafkaConfigStore
from connectrt.storage.kafka_status import KafkaStatusStore
from connectrt.storage.murmur2 import java_partition
from connectrt.storage.worker_lock import SingleWorkerGuard

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


@pytest.fixture
def open_config(broker: EmbeddedBroker) -> Iterator[Callable[[str], KafkaConfigStore]]:
    opened: list[KafkaConfigStore] = []

    def make(topic: str) -> KafkaConfigStore:
        store = KafkaConfigStore(topic, bootstrap_servers=broker.bootstrap_servers, timeout=10.0)
        opened.append(store)
        store.start()
        return store

    yield make
    for store in opened:
        store.stop()


@pytest.fixture
def open_status(broker: EmbeddedBroker) -> Iterator[Callable[..., KafkaStatusStore]]:
    opened: list[KafkaStatusStore] = []

    def make(topic: str, **kwargs: Any) -> KafkaStatusStore:
        store = KafkaStatusStore(
            topic, bootstrap_servers=broker.bootstrap_servers, timeout=10.0, **kwargs
        )
        opened.append(store)
        store.start()
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


# -- KafkaConfigStore -------------------------------------------------------------------------


def test_config_records_are_byte_exact_and_in_kafka_order(
    broker: EmbeddedBroker, open_config: Callable[[str], KafkaConfigStore], unique_name: Names
) -> None:
    topic = unique_name("configs")
    store = open_config(topic)
    store.put_connector_config(
        "my-conn", {"name": "my-conn", "b": "2", "a": "1"}, TargetState.STOPPED
    )
    store.put_task_configs("my-conn", [{"task.class": "T"}])
    store.put_restart_request("my-conn", include_tasks=True, only_failed=True)
    store.remove_connector("my-conn")
    records = _read_all(broker.bootstrap_servers, topic, 1)
    assert [(k, v) for _, k, v in records] == [
        (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-my-conn", b'{"properties":{"name":"my-conn","b":"2","a":"1"}}'),
        (b"task-my-conn-0", b'{"properties":{"task.class":"T"}}'),
        (b"commit-my-conn", b'{"tasks":1}'),
        (b"restart-connector-my-conn", b'{"include-tasks":true,"only-failed":true}'),
        (b"connector-my-conn", None),
        (b"target-state-my-conn", None),
    ]


def test_task_configs_name_kafka_connects_task_class_in_the_topic(
    broker: EmbeddedBroker, open_config: Callable[[str], KafkaConfigStore], unique_name: Names
) -> None:
    """A FileStream task config names Kafka Connect's task class in the topic and connectrt's
    in the snapshot a restarted worker reads."""
    topic = unique_name("configs")
    ours = {"task.class": "connectors.file.source.FileStreamSourceTask", "file": "f"}
    open_config(topic).put_task_configs("src", [ours])
    records = [(k, v) for _, k, v in _read_all(broker.bootstrap_servers, topic, 1)]
    assert records[0] == (
        b"task-src-0",
        b'{"properties":{"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask",'
        b'"file":"f"}}',
    )
    assert open_config(topic).snapshot().task_configs["src"] == (ours,)


def test_config_snapshot_survives_restart(
    open_config: Callable[[str], KafkaConfigStore], unique_name: Names
) -> None:
    topic = unique_name("configs")
    first = open_config(topic)
    first.put_connector_config("keep-me", {"name": "keep-me", "x": "1"}, TargetState.PAUSED)
    first.put_connector_config("deleted", {"name": "deleted"})
    first.put_task_configs("deleted", [{"t": "0"}])
    first.put_task_configs("keep-me", [{"t": "0"}, {"t": "1"}])
    first.put_task_configs("keep-me", [{"t": "new-0"}])
    first.put_target_state("keep-me", TargetState.STOPPED)
    first.put_restart_request("keep-me", include_tasks=False, only_failed=True)
    first.put_connector_config("empty", {"name": "empty"})
    first.put_task_configs("empty", [])
    first.remove_connector("deleted")
    expected = first.snapshot()
    assert set(expected.connectors) == {"keep-me", "empty"}
    assert expected.task_configs == {"keep-me": ({"t": "new-0"},), "empty": ()}
    assert expected.target_state("keep-me") is TargetState.STOPPED
    first.stop()

    second = open_config(topic)
    assert second.snapshot() == expected
    assert "deleted" not in second.snapshot().connectors
    assert second.log.partition_count == 1


def test_refresh_applies_other_writers_and_notifies_listeners(
    broker: EmbeddedBroker, open_config: Callable[[str], KafkaConfigStore], unique_name: Names
) -> None:
    topic = unique_name("configs")
    store = open_config(topic)
    events: list[tuple[str, str]] = []
    store.add_listener(lambda kind, name: events.append((kind, name)))
    store.put_connector_config("mine", {"name": "mine"})
    store.refresh()
    assert events == []  # own writes were applied already; reading them back changes nothing

    other = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in [
        (b"connector-ext-1", b'{"properties":{"name":"ext-1"}}'),
        (b"garbage-key", b"{}"),
        (b"connector-ext-2", b"not json"),
        (b"task-ext-1-0", b'{"properties":{"t":"0"}}'),
        (b"task-ext-1-1", b'{"properties":{"t":"1"}}'),
        (b"session-key", b'{"key":"AA==","algorithm":"HmacSHA256","creation-timestamp":1}'),
    ]:
        other.produce(topic, key=key, value=value)
    assert other.flush(5) == 0
    store.refresh()
    snap = store.snapshot()
    assert snap.connectors == {"mine": {"name": "mine"}, "ext-1": {"name": "ext-1"}}
    assert snap.task_configs == {}  # not committed yet
    assert events == [("connector", "ext-1")]

    other.produce(topic, key=b"commit-ext-1", value=b'{"tasks":2}')
    other.produce(topic, key=b"target-state-ext-1", value=b'{"state":"PAUSED"}')
    other.produce(topic, key=b"restart-connector-mine", value=b'{"include-tasks":true}')
    assert other.flush(5) == 0
    store.refresh()
    snap = store.snapshot()
    assert snap.task_configs == {"ext-1": ({"t": "0"}, {"t": "1"})}
    assert snap.target_state("ext-1") is TargetState.PAUSED
    assert snap.restart_requests == {"mine": (True, False)}
    assert events[1:] == [("tasks", "ext-1"), ("target_state", "ext-1"), ("restart", "mine")]


def test_config_topic_with_several_partitions_is_refused(
    broker: EmbeddedBroker, unique_name: Names
) -> None:
    topic = unique_name("configs")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    # Compacted, as Kafka Connect requires (else that is refused first, on brokers describing it).
    new = NewTopic(
        topic, num_partitions=3, replication_factor=1, config={"cleanup.policy": "compact"}
    )
    admin.create_topics([new])[topic].result(5)
    store = KafkaConfigStore(topic, bootstrap_servers=broker.bootstrap_servers, timeout=10.0)
    message = (
        f"Topic '{topic}' supplied via the 'config.storage.topic' property is required to have "
        "a single partition in order to guarantee consistency of connector configurations, "
        "but found 3 partitions."
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        store.start()
    with pytest.raises(ConnectError, match="not started"):
        store.put_connector_config("c", {})
    store.stop()


def test_concurrent_config_writes_match_topic_after_restart(
    open_config: Callable[[str], KafkaConfigStore], unique_name: Names
) -> None:
    topic = unique_name("configs")
    store = open_config(topic)

    def work(n: int) -> None:
        for i in range(6):
            store.put_connector_config(f"c{n}", {"round": str(i)})
            store.put_task_configs(f"c{n}", [{"t": str(t), "round": str(i)} for t in range(i)])
            store.put_connector_config(f"shared-{i}", {"writer": str(n)})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = store.snapshot()
    assert {snap.connectors[f"c{n}"]["round"] for n in range(4)} == {"5"}
    assert all(len(snap.task_configs[f"c{n}"]) == 5 for n in range(4))
    assert len(snap.connectors) == 10
    store.stop()
    assert open_config(topic).snapshot() == snap


# -- KafkaStatusStore -------------------------------------------------------------------------


def test_status_store_restores_after_restart(
    broker: EmbeddedBroker, open_status: Callable[..., KafkaStatusStore], unique_name: Names
) -> None:
    topic = unique_name("status")
    first = open_status(topic)
    first.put(Status("conn-a", None, State.RUNNING, "h:8083", generation=3))
    first.put(Status("conn-a", 1, State.FAILED, "h:8083", "Trace\n\tat x"))
    first.put(Status("conn-a", 0, State.RUNNING, "h:8083"))
    first.put(Status("gone", None, State.RUNNING, "h:8083"))
    first.put(Status("gone", 0, State.RUNNING, "h:8083"))
    first.put(Status("gone", 0, State.DESTROYED, "h:8083"))
    first.put(Status("gone", None, State.DESTROYED, "h:8083"))
    first.put_topic("conn-a", "orders", 0, 1700000000000)
    first.put_topic("conn-a", "orders", 1, 1800000000000)  # already tracked: kept as is
    first.put_topic("conn-a", "payments", 1, 1700000000001)
    first.put_topic("gone", "t", 0, 1)
    first.remove_topics("gone")
    assert first.connectors() == ["conn-a"]
    first.stop()

    records = _read_all(broker.bootstrap_servers, topic, 5)
    by_key = {k: (p, v) for p, k, v in records}
    assert by_key[b"status-task-conn-a-1"][1] == (
        b'{"state":"FAILED","trace":"Trace\\n\\tat x","worker_id":"h:8083","generation":0}'
    )
    assert by_key[b"status-topic-orders:connector-conn-a"][1] == (
        b'{"topic":{"name":"orders","connector":"conn-a","task":0,'
        b'"discoverTimestamp":1700000000000}}'
    )
    assert by_key[b"status-connector-gone"][1] is None
    assert by_key[b"status-topic-t:connector-gone"][1] is None
    assert len(records) == 11
    for partition, key, _ in records:
        assert partition == java_partition(key, 5)

    second = open_status(topic)
    assert second.log.partition_count == 5
    assert second.connectors() == ["conn-a"]
    connector = second.connector("conn-a")
    assert connector is not None
    assert (connector.state, connector.worker_id, connector.generation) == (
        State.RUNNING,
        "h:8083",
        3,
    )
    tasks = second.tasks("conn-a")
    assert [(t.task, t.state, t.trace) for t in tasks] == [
        (0, State.RUNNING, None),
        (1, State.FAILED, "Trace\n\tat x"),
    ]
    assert second.connector("gone") is None
    assert second.tasks("gone") == []
    assert second.topics("conn-a") == ["orders", "payments"]
    assert second.topics("gone") == []


def test_concurrent_status_puts_last_write_wins(
    open_status: Callable[..., KafkaStatusStore], unique_name: Names
) -> None:
    topic = unique_name("status")
    store = open_status(topic, partitions=3)
    states = [State.RUNNING, State.PAUSED, State.FAILED, State.RUNNING]

    def report(task: int) -> None:
        for i in range(40):
            store.put(Status("c", task, states[i % 4], f"w-{i}"))
            store.put(Status(f"c-{task}", None, states[(i + task) % 4], "w"))

    threads = [threading.Thread(target=report, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.flush(10)
    view = [(s.task, s.state, s.worker_id) for s in store.tasks("c")]
    assert view == [(n, State.RUNNING, "w-39") for n in range(4)]
    connectors = {n: store.connector(n) for n in store.connectors()}
    store.stop()
    restored = open_status(topic, partitions=3)
    assert [(s.task, s.state, s.worker_id) for s in restored.tasks("c")] == view
    for name, status in connectors.items():
        got = restored.connector(name)
        assert status is not None and got is not None and got.state == status.state


# -- SingleWorkerGuard ------------------------------------------------------------------------


def test_second_worker_on_the_same_topics_is_refused(
    open_config: Callable[[str], KafkaConfigStore],
    open_status: Callable[..., KafkaStatusStore],
    unique_name: Names,
) -> None:
    topic = unique_name("status")
    configs = unique_name("configs")
    group = unique_name("group")
    # The guard tells a live worker from a dead one by time alone (a heartbeat that did not
    # change within 3 intervals): the interval must dwarf the stalls of a busy machine, or a
    # live first guard looks dead to the second (with 0.3 s the second was let in under load).
    interval = 2.0
    first_store = open_status(topic)
    first = SingleWorkerGuard(first_store, group, "host-a:8083", interval)
    first.acquire()
    first_store.put(Status("c", None, State.RUNNING, "host-a:8083"))
    try:
        second = SingleWorkerGuard(
            open_status(topic), group, "host-b:8083", interval, legacy=open_config(configs)
        )
        message = (
            f"Another connectrt worker (host-a:8083, instance {first.instance}) is already "
            f"running on status topic {topic} (group.id {group}); a second worker on the same "
            "topics would corrupt them. Stop it first, or use a different "
            "group.id / config.storage.topic / status.storage.topic."
        )
        with pytest.raises(ConnectError, match=re.escape(message)):
            second.acquire()
        assert not second.running
    finally:
        first.stop()  # stops heartbeating without cleanup, like a killed worker

    third_store = open_status(topic)
    assert third_store.heartbeats()[group].instance == first.instance
    third = SingleWorkerGuard(third_store, group, "host-c:8083", interval)
    started = time.monotonic()
    third.acquire()
    try:
        assert time.monotonic() - started >= 3 * interval
        assert third_store.heartbeats()[group].instance == third.instance
        # Heartbeats never show up as statuses or active topics.
        assert third_store.connectors() == ["c"]
        assert third_store.topics(group) == []
    finally:
        third.stop()
    # Nothing in the config topic: the heartbeats are in the status topic only.
    assert _read_all_config(open_config, configs) == []


def _read_all_config(
    open_config: Callable[[str], KafkaConfigStore], topic: str
) -> list[tuple[int, bytes, bytes | None]]:
    store = open_config(topic)
    return _read_all(store.log.bootstrap_servers, topic, 1)


def test_an_old_heartbeat_in_the_config_topic_is_honoured_then_removed(
    broker: EmbeddedBroker,
    open_config: Callable[[str], KafkaConfigStore],
    open_status: Callable[..., KafkaStatusStore],
    unique_name: Names,
) -> None:
    """A cluster an earlier connectrt version ran has a ``worker-heartbeat-<group>`` record in
    its config topic: the worker still starts (the record is old) and writes its tombstone."""
    configs, group = unique_name("configs"), unique_name("group")
    open_config(configs).put_connector_config("c", {"name": "c"})  # creates the topic
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(
        configs,
        key=f"worker-heartbeat-{group}".encode(),
        value=b'{"worker_id":"old:8083","instance":"old-instance","timestamp":1000}',
    )
    assert producer.flush(30) == 0
    legacy = open_config(configs)
    guard = SingleWorkerGuard(open_status(unique_name("status")), group, "w:8083", legacy=legacy)
    guard.acquire()
    guard.stop()
    assert legacy.heartbeats() == {}
    assert legacy.snapshot().connectors == {"c": {"name": "c"}}
    records = [(k, v) for _p, k, v in _read_all(broker.bootstrap_servers, configs, 1)]
    assert records[-2:] == [
        (
            f"worker-heartbeat-{group}".encode(),
            b'{"worker_id":"old:8083","instance":"old-instance","timestamp":1000}',
        ),
        (f"worker-heartbeat-{group}".encode(), None),
    ]
