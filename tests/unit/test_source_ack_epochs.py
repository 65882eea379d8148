"""The rules by which an at-least-once source's offsets are stored off its thread.

No broker: the epochs' callbacks over a real confluent-kafka producer that cannot reach one
(its records purged) and over the in-memory fake, and the offset writer driven directly over
an in-memory store (inline: every step on the test's thread). Each test breaks if its rule
does:

* an epoch lives while one of its records is in flight (the client holds its callback until
  the record's report is served), and is announced acknowledged when freed;
* only the highest contiguous acknowledged prefix of epochs is stored, merged (later offsets
  win);
* a failed delivery stops the offsets before its epoch, for good;
* a store that fails is retried with the next prefix; offsets that do not validate are fatal.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from connectrt.runtime.source.ack_epochs import EpochSnapshot, open_epoch
from connectrt.runtime.source.offset_writer import OffsetWriter
from connectrt.runtime.tasks.runner import TaskId
from connectrt.storage.offset_codec import decode_value
from connectrt.storage.offsets import MemoryOffsetStore
from connectrt.testing.fake_kafka import FakeKafka

A, B = b"partition-a", b"partition-b"


def _never_fails(err: Any, msg: Any) -> bool:
    return False


def test_an_epoch_lives_while_a_real_producer_holds_one_of_its_records() -> None:
    """confluent-kafka keeps a record's callback until its delivery report is served: the
    epoch is freed (and announced) only then. Here the records are purged (no broker)."""
    announced: list[int] = []
    failures: list[int] = []
    producer = Producer(
        {
            "bootstrap.servers": "127.0.0.1:1",
            "delivery.report.only.error": True,
            "socket.connection.setup.timeout.ms": 1000,
        }
    )
    epoch, snapshot = open_epoch(
        1, lambda err, msg: failures.append(err.code()) or True, announced.append
    )
    for i in range(3):
        producer.produce("t", b"v%d" % i, None, -1, epoch)
    del epoch  # the records' references remain
    gc.collect()
    assert snapshot.ref is not None and snapshot.ref() is not None and announced == []
    producer.purge()
    assert producer.flush(10) == 0  # serves the three reports (failed: purged)
    gc.collect()
    assert announced == [1] and snapshot.ref() is None
    assert failures == [KafkaError._PURGE_QUEUE] * 3 and snapshot.failed


def test_an_epoch_with_nothing_in_flight_is_announced_when_its_owner_lets_go() -> None:
    kafka = FakeKafka()
    kafka.create_topic("t")
    producer = kafka.producer({})
    announced: list[int] = []
    epoch, _ = open_epoch(7, _never_fails, announced.append)
    producer.hold_acknowledgements()
    producer.produce("t", b"x", None, -1, epoch)
    del epoch
    assert announced == []  # in flight
    producer.acknowledge()
    assert announced == []  # acknowledged, its report not served yet
    producer.poll(0)
    assert announced == [7]


class _Rig:
    """An inline writer over an in-memory store, and the epochs given to it."""

    def __init__(self, store: Any = None) -> None:
        self.store = store or MemoryOffsetStore()
        self.writer = OffsetWriter(TaskId("src", 0), self.store)
        assert self.writer.inline or store is not None

    def close(
        self,
        seq: int,
        offsets: Mapping[bytes, Mapping[str, Any] | None],
        records: int = 1,
        failed: bool = False,
    ) -> None:
        snapshot = EpochSnapshot(seq, dict(offsets), records, taken=1.0, closed=True, failed=failed)
        self.writer.submit(snapshot)

    def ack(self, *seqs: int) -> None:
        for seq in seqs:
            self.writer.acknowledged(seq)
        self.writer.process()

    def stored(self, key: bytes) -> Any:
        value = self.store.get([key])[key]
        return None if value is None else decode_value(value)


def test_only_the_contiguous_acknowledged_prefix_is_stored_later_offsets_winning() -> None:
    rig = _Rig()
    rig.close(1, {A: {"n": 1}, B: {"n": 10}})
    rig.close(2, {A: {"n": 2}})
    rig.close(3, {A: {"n": 3}})
    rig.ack(2, 3)  # a later epoch's records first (another partition was faster)
    assert rig.stored(A) is None and rig.stored(B) is None
    assert [o.acknowledged for o in rig.writer.outcomes()] == []
    rig.ack(1)
    assert rig.stored(A) == {"n": 3} and rig.stored(B) == {"n": 10}
    (outcome,) = rig.writer.outcomes()
    assert outcome.error is None and outcome.acknowledged == 3 and outcome.stored == 3


def test_a_failed_epoch_stops_the_offsets_before_it_for_good() -> None:
    rig = _Rig()
    rig.close(1, {A: {"n": 1}})
    rig.close(2, {A: {"n": 2}}, failed=True)
    rig.close(3, {A: {"n": 3}})
    rig.ack(3, 2, 1)
    assert rig.stored(A) == {"n": 1}
    rig.close(4, {A: {"n": 4}})
    rig.ack(4)
    rig.writer.all_acknowledged(4)
    assert rig.writer.wait_idle(1)
    assert rig.stored(A) == {"n": 1}  # never past the failure
    assert sum(o.acknowledged for o in rig.writer.outcomes()) == 1


class _FlakyStore(MemoryOffsetStore):
    """Fails its first ``set``."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("offsets topic unreachable")
        super().set(entries)


def test_a_failed_store_is_retried_with_the_next_prefix_and_bad_offsets_are_fatal() -> None:
    store = _FlakyStore()
    rig = _Rig(store)
    rig.writer.inline = True  # a subclass of the memory store: still written inline here
    rig.close(1, {A: {"n": 1}, B: {"n": 10}})
    rig.ack(1)
    (failed,) = rig.writer.outcomes()
    assert isinstance(failed.error, OSError) and not failed.fatal and rig.stored(A) is None
    rig.close(2, {A: {"n": 2}})
    rig.ack(2)
    (retried,) = rig.writer.outcomes()
    assert retried.error is None and retried.stored == 2
    assert rig.stored(A) == {"n": 2} and rig.stored(B) == {"n": 10}  # epoch 1's B kept

    rig.close(3, {A: {"n": object()}})  # not a valid offset value
    rig.ack(3)
    (bad,) = rig.writer.outcomes()
    assert bad.fatal and bad.error is not None and rig.stored(A) == {"n": 2}


@pytest.mark.parametrize("threaded", [False, True])
def test_at_stop_a_flushed_producer_acknowledges_every_closed_epoch(threaded: bool) -> None:
    """A failure's traceback may still refer to the open epoch's callback; after ``flush()``
    left nothing in flight, every closed epoch is acknowledged anyway."""
    store = MemoryOffsetStore()
    writer = OffsetWriter(TaskId("src", 0), store)
    writer.inline = not threaded
    try:
        writer.submit(EpochSnapshot(1, {A: {"n": 1}}, 1, 1.0, True))
        writer.submit(EpochSnapshot(2, {A: {"n": 2}}, 1, 1.0, True))
        assert writer.wait_idle(10) and store.get([A])[A] is None
        writer.all_acknowledged(2)
        assert writer.wait_idle(10)
        assert decode_value(store.get([A])[A]) == {"n": 2}
    finally:
        writer.close(10)
