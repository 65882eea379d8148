"""A standby cluster's leader fence: the successor's transactional.ids fence the old leader.

Two config stores on one config topic stand for an old and a new leader. Each takes the
cluster's ``transactional.id`` (:class:`~connectrt.runtime.herder.leadership.LeaderFence`) in
turn; once the new one has, the old one's next write fails with
:class:`~connectrt.storage.topic_writer.FencedWriteError`, calls its ``on_fenced`` once, and
leaves nothing a reader of the topic sees; the new one's writes go on. The same for the status
topic's queued writes and the offsets topic's (whose log takes its id before it starts).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.herder.leadership import LeaderFence
from connectrt.storage.kafka_config import KafkaConfigStore
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.kafka_status import KafkaStatusStore
from connectrt.storage.states import State, Status
from connectrt.storage.topic_writer import FencedWriteError

pytestmark = pytest.mark.integration


@pytest.fixture
def stores(broker: EmbeddedBroker) -> Iterator[tuple[KafkaConfigStore, KafkaConfigStore, str]]:
    topic = f"fence-configs-{uuid.uuid4().hex[:8]}"
    old, new = (
        KafkaConfigStore(topic, bootstrap_servers=broker.bootstrap_servers, timeout=30.0)
        for _ in range(2)
    )
    old.start()
    new.start()
    yield old, new, topic
    for store in (old, new):
        store.stop()


def test_the_successor_fences_the_old_leaders_config_writes(
    broker: EmbeddedBroker, stores: tuple[KafkaConfigStore, KafkaConfigStore, str]
) -> None:
    old, new, topic = stores
    group = f"cluster-{uuid.uuid4().hex[:8]}"
    fenced: list[str] = []
    old_fence, new_fence = LeaderFence(lambda: old.log, group), LeaderFence(lambda: new.log, group)
    old_fence.on_fenced = fenced.append
    old_fence.acquire(30.0)
    old.put_connector_config("a", {"connector.class": "FileStreamSource", "name": "a"})
    assert old_fence.running and old_fence.transactional_id == f"{group}-leader"

    new_fence.acquire(30.0)  # the successor: fences the old leader's producer
    with pytest.raises(FencedWriteError):
        old.put_connector_config("b", {"connector.class": "FileStreamSource", "name": "b"})
    assert len(fenced) == 1 and topic in fenced[0]
    with pytest.raises(FencedWriteError):  # and stays fenced, without a second callback
        old.put_connector_config("c", {"connector.class": "FileStreamSource", "name": "c"})
    assert len(fenced) == 1

    new.put_connector_config("d", {"connector.class": "FileStreamSource", "name": "d"})
    reader = KafkaConfigStore(topic, bootstrap_servers=broker.bootstrap_servers, timeout=30.0)
    reader.start()
    try:
        assert set(reader.snapshot().connectors) == {"a", "d"}
    finally:
        reader.stop()


def test_the_successor_fences_the_old_leaders_status_writes(broker: EmbeddedBroker) -> None:
    """Status records are queued by task threads and committed in batches (one transaction
    each) under ``<group.id>-leader-status``: once the successor has taken that id, the old
    leader's queued statuses are refused by the broker and a read_committed reader never sees
    them."""
    bootstrap = broker.bootstrap_servers
    configs, statuses = (f"fence-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("configs", "status"))
    group = f"cluster-{uuid.uuid4().hex[:8]}"
    stores = [
        (
            KafkaConfigStore(configs, bootstrap_servers=bootstrap, timeout=30.0),
            KafkaStatusStore(statuses, partitions=1, bootstrap_servers=bootstrap, timeout=30.0),
        )
        for _ in range(2)
    ]
    for config_store, status_store in stores:
        config_store.start()
        status_store.start()
    try:
        (old_config, old_status), (new_config, new_status) = stores
        fenced: list[str] = []
        old_fence = LeaderFence(lambda: old_config.log, group, lambda: {"-status": old_status.log})
        new_fence = LeaderFence(lambda: new_config.log, group, lambda: {"-status": new_status.log})
        old_fence.on_fenced = fenced.append
        old_fence.acquire(30.0)
        old_status.put(Status("a", None, State.RUNNING, "old:8083"))
        old_status.flush(30.0)  # committed in a transaction of the old leader

        new_fence.acquire(30.0)  # the successor takes both ids
        old_status.put(Status("a", 0, State.FAILED, "old:8083", "fenced producer"))
        with pytest.raises(FencedWriteError):
            old_status.flush(30.0)
        assert len(fenced) == 1 and statuses in fenced[0]
        with pytest.raises(FencedWriteError):  # later writes are refused at once
            old_status.put(Status("a", 0, State.FAILED, "old:8083"))
        new_status.put(Status("b", None, State.RUNNING, "new:8083"))
        new_status.flush(30.0)

        reader = KafkaStatusStore(statuses, partitions=1, bootstrap_servers=bootstrap, timeout=30)
        reader.start()
        try:
            old_one, new_one = reader.connector("a"), reader.connector("b")
            assert old_one is not None and old_one.worker_id == "old:8083"
            assert reader.tasks("a") == []  # neither fenced task status arrived
            assert new_one is not None and new_one.worker_id == "new:8083"
        finally:
            reader.stop()
    finally:
        for config_store, status_store in stores:
            status_store.stop(5.0)
            config_store.stop()


def _offsets_fence(
    config_store: KafkaConfigStore, offset_store: KafkaOffsetStore, group: str
) -> LeaderFence:
    config_store.start()
    fence = LeaderFence(lambda: config_store.log, group)
    fence.add(lambda: {"-offsets": offset_store.log})
    return fence


def test_the_successor_fences_the_old_leaders_offset_writes(broker: EmbeddedBroker) -> None:
    """The worker's offsets log takes ``<group.id>-leader-offsets`` before it starts (as in
    :meth:`Herder.start`: the fence first, then the worker and its offset store): it starts
    transactional, and once the successor has taken the id the old leader's ``set`` fails
    and leaves nothing a reader sees."""
    bootstrap = broker.bootstrap_servers
    configs, offsets = (f"fence-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("configs", "offsets"))
    group = f"cluster-{uuid.uuid4().hex[:8]}"
    pairs = [
        (
            KafkaConfigStore(configs, bootstrap_servers=bootstrap, timeout=30.0),
            KafkaOffsetStore(offsets, partitions=1, bootstrap_servers=bootstrap, timeout=30.0),
        )
        for _ in range(2)
    ]
    fences = [
        _offsets_fence(config_store, offset_store, group) for config_store, offset_store in pairs
    ]
    try:
        (_, old), (_, new) = pairs
        fenced: list[str] = []
        fences[0].on_fenced = fenced.append
        fences[0].acquire(30.0)
        old.start()  # after the fence, as the worker's store does
        old.set({b"k": b"old-1"}, 30.0)

        fences[1].acquire(30.0)
        new.start()
        with pytest.raises(FencedWriteError):
            old.set({b"k": b"old-2"}, 30.0)
        assert len(fenced) == 1 and offsets in fenced[0]
        new.set({b"n": b"new-1"}, 30.0)

        reader = KafkaOffsetStore(offsets, partitions=1, bootstrap_servers=bootstrap, timeout=30)
        reader.start()
        try:
            assert reader.all() == {b"k": b"old-1", b"n": b"new-1"}
        finally:
            reader.stop()
    finally:
        for config_store, offset_store in pairs:
            offset_store.stop()
            config_store.stop()
