"""A sink's partitions assigned without a committed offset start where ``auto.offset.reset``
says, resolved by the runtime (:mod:`connectrt.runtime.sink.start_offsets`), and nothing else
moves: partitions with a commit, partitions given an offset, an ``error`` policy, a failed
query."""

from __future__ import annotations

from typing import Any

import pytest

from connectrt.runtime.clients.kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from connectrt.runtime.sink.start_offsets import reset_offset, start_unstarted
from connectrt.testing.fake_kafka import FakeKafka


@pytest.mark.parametrize(
    ("policy", "offset"),
    [
        ("earliest", OFFSET_BEGINNING),
        ("smallest", OFFSET_BEGINNING),
        (" Beginning ", OFFSET_BEGINNING),
        ("latest", OFFSET_END),
        ("largest", OFFSET_END),
        ("END", OFFSET_END),
        ("error", None),
        ("none", None),
    ],
)
def test_each_reset_policy_names_its_logical_offset(policy: str, offset: int | None) -> None:
    assert reset_offset({"auto.offset.reset": policy}) == offset


def test_without_a_policy_the_clients_default_applies() -> None:
    assert reset_offset({}) is None


def _consumer(committed: dict[int, int]) -> Any:
    kafka = FakeKafka()
    kafka.create_topic("t", 4)
    consumer = kafka.consumer({"group.id": "g"})
    if committed:
        consumer.commit(
            offsets=[TopicPartition("t", p, o) for p, o in committed.items()], asynchronous=False
        )
    return consumer


def test_only_partitions_without_a_commit_or_a_given_offset_start_at_the_reset() -> None:
    consumer = _consumer({1: 7})
    parts = [
        TopicPartition("t", 0),  # no commit: the reset
        TopicPartition("t", 1),  # committed: left to the client, which starts at 7
        TopicPartition("t", 2, 4),  # a rewind: kept
        TopicPartition("t", 3, OFFSET_END),  # already logical: kept
        TopicPartition("t", 0, -2005),  # the tail (last 5): kept
        TopicPartition("t", 2, OFFSET_STORED),  # "the committed one", none: the reset
    ]
    assert start_unstarted(consumer, parts, OFFSET_BEGINNING) == 2
    assert [p.offset for p in parts] == [
        OFFSET_BEGINNING,
        OFFSET_INVALID,
        4,
        OFFSET_END,
        -2005,
        OFFSET_BEGINNING,
    ]


class _Refusing:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.asked = 0

    def committed(self, partitions: list[TopicPartition], timeout: float = 0) -> list[Any]:
        self.asked += 1
        if self.error is not None:
            raise self.error
        answer = [TopicPartition(p.topic, p.partition) for p in partitions]
        return answer


def test_an_error_policy_asks_nothing_and_moves_nothing() -> None:
    consumer = _Refusing()
    parts = [TopicPartition("t", 0)]
    assert start_unstarted(consumer, parts, None) == 0  # type: ignore[arg-type]
    assert consumer.asked == 0 and parts[0].offset == OFFSET_INVALID


def test_a_failed_query_leaves_the_start_to_the_client() -> None:
    consumer = _Refusing(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    parts = [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert start_unstarted(consumer, parts, OFFSET_END) == 0  # type: ignore[arg-type]
    assert consumer.asked == 1 and [p.offset for p in parts] == [OFFSET_INVALID] * 2


def test_the_fake_consumer_starts_logical_offsets_as_librdkafka_does() -> None:
    kafka = FakeKafka()
    kafka.create_topic("t", 2)
    for _ in range(3):
        kafka.append("t", b"v", partition=0)
        kafka.append("t", b"v", partition=1)
    consumer = kafka.consumer({"group.id": "g"})
    consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING), TopicPartition("t", 1, OFFSET_END)])
    assert [p.offset for p in consumer.position(consumer.assignment())] == [0, 3]
