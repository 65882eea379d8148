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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.herder.leadership import LeaderFence
from connectrt.storage.kafka_config import KafkaConfigStore
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.kafka_status import KafkaStatusStore
from connectrt.storage.states import State, Status
from connectrt.storage.topic_writer import FencedWriteError

pytestmark = pytest.mark.integration

S = TypeVar("S", KafkaStatusStore, KafkaOffsetStore)
Store = TypeVar("Store", KafkaConfigStore, KafkaStatusStore, KafkaOffsetStore)


@contextmanager
def _started(store: Store) -> Iterator[Store]:
    """A reader of a topic, started, stopped on exit."""
    store.start()
    try:
        yield store
    finally:
        store.stop()


@dataclass
class _Leader(Generic[S]):
    """One leader's config store (started), its store of ``kind`` (not started: each test
    starts it where the worker does) and its fence over both."""

    config: KafkaConfigStore
    store: S
    fence: LeaderFence


def _fence(
    config: KafkaConfigStore, store: KafkaStatusStore | KafkaOffsetStore, group: str, kind: str
) -> LeaderFence:
    return LeaderFence(lambda: config.log, group, lambda: {f"-{kind}": store.log})


@contextmanager
def _old_and_new(
    bootstrap: str, kind: str, make_store: Callable[[str], S]
) -> Iterator[tuple[str, _Leader[S], _Leader[S]]]:
    """The ``kind`` topic (``status`` or ``offsets``), an old and a new leader of one cluster on
    it and on one config topic (:class:`_Leader`; the fence takes ``<group>-leader-<kind>`` for
    the ``kind`` log); everything is stopped on exit."""
    configs, topic = (f"fence-{k}-{uuid.uuid4().hex[:8]}" for k in ("configs", kind))
    group = f"cluster-{uuid.uuid4().hex[:8]}"
    leaders = []
    for _ in range(2):
        config = KafkaConfigStore(configs, bootstrap_servers=bootstrap, timeout=30.0)
        store = make_store(topic)
        leaders.append(_Leader(config, store, _fence(config, store, group, kind)))
    try:
        for leader in leaders:
            leader.config.start()
        yield topic, leaders[0], leaders[1]
    finally:
        for leader in leaders:
            leader.store.stop()
            leader.config.stop()


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
    with _started(reader):
        assert set(reader.snapshot().connectors) == {"a", "d"}


def test_the_successor_fences_the_old_leaders_status_writes(broker: EmbeddedBroker) -> None:
    """Status records are queued by task threads and committed in batches (one transaction
    each) under ``<group.id>-leader-status``: once the successor has taken that id, the old
    leader's queued statuses are refused by the broker and a read_committed reader never sees
    them."""
    bootstrap = broker.bootstrap_servers

    def status_store(topic: str) -> KafkaStatusStore:
        return KafkaStatusStore(topic, partitions=1, bootstrap_servers=bootstrap, timeout=30.0)

    with _old_and_new(bootstrap, "status", status_store) as (statuses, old, new):
        old.store.start()
        new.store.start()
        fenced: list[str] = []
        old.fence.on_fenced = fenced.append
        old.fence.acquire(30.0)
        old.store.put(Status("a", None, State.RUNNING, "old:8083"))
        old.store.flush(30.0)  # committed in a transaction of the old leader

        new.fence.acquire(30.0)  # the successor takes both ids
        old.store.put(Status("a", 0, State.FAILED, "old:8083", "fenced producer"))
        with pytest.raises(FencedWriteError):
            old.store.flush(30.0)
        assert len(fenced) == 1 and statuses in fenced[0]
        with pytest.raises(FencedWriteError):  # later writes are refused at once
            old.store.put(Status("a", 0, State.FAILED, "old:8083"))
        new.store.put(Status("b", None, State.RUNNING, "new:8083"))
        new.store.flush(30.0)

        with _started(status_store(statuses)) as reader:
            old_one, new_one = reader.connector("a"), reader.connector("b")
            assert old_one is not None and old_one.worker_id == "old:8083"
            assert reader.tasks("a") == []  # neither fenced task status arrived
            assert new_one is not None and new_one.worker_id == "new:8083"


def test_the_successor_fences_the_old_leaders_offset_writes(broker: EmbeddedBroker) -> None:
    """The worker's offsets log takes ``<group.id>-leader-offsets`` before it starts (as in
    :meth:`Herder.start`: the fence first, then the worker and its offset store): it starts
    transactional, and once the successor has taken the id the old leader's ``set`` fails
    and leaves nothing a reader sees."""
    bootstrap = broker.bootstrap_servers

    def offset_store(topic: str) -> KafkaOffsetStore:
        return KafkaOffsetStore(topic, partitions=1, bootstrap_servers=bootstrap, timeout=30.0)

    with _old_and_new(bootstrap, "offsets", offset_store) as (offsets, old, new):
        fenced: list[str] = []
        old.fence.on_fenced = fenced.append
        old.fence.acquire(30.0)
        old.store.start()  # after the fence, as the worker's store does
        old.store.set({b"k": b"old-1"}, 30.0)

        new.fence.acquire(30.0)
        new.store.start()
        with pytest.raises(FencedWriteError):
            old.store.set({b"k": b"old-2"}, 30.0)
        assert len(fenced) == 1 and offsets in fenced[0]
        new.store.set({b"n": b"new-1"}, 30.0)

        with _started(offset_store(offsets)) as reader:
            assert reader.all() == {b"k": b"old-1", b"n": b"new-1"}
