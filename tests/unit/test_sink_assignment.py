"""SinkAssignment: the SinkTask sees open()/close() with only the partitions added/removed,
revoked partitions are committed before they close, librdkafka gets the calls of the protocol
in use, and a failing callback becomes a readable TaskFailure instead of escaping into
librdkafka.

The consumer here is a stand-in that records the calls (these tests are about the bookkeeping;
tests/integration/test_sink_group_protocol.py runs the real thing on a broker)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, cast

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api import SinkRecord, SinkTask, TopicPartition
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.assignment import SinkAssignment
from connectrt.runtime.sink.offsets import SinkOffsetCommitter
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskFailure, TaskId


class _Calls:
    """Records the consumer calls the assignment makes (a stand-in for librdkafka's)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []

    def _log(self, name: str, parts: list[KafkaTopicPartition] | None = None) -> None:
        self.calls.append((name, [p.partition for p in parts or []]))

    def assign(self, parts: list[KafkaTopicPartition]) -> None:
        self._log("assign", parts)

    def unassign(self) -> None:
        self._log("unassign")

    def incremental_assign(self, parts: list[KafkaTopicPartition]) -> None:
        self._log("incremental_assign", parts)

    def incremental_unassign(self, parts: list[KafkaTopicPartition]) -> None:
        self._log("incremental_unassign", parts)

    def pause(self, parts: list[KafkaTopicPartition]) -> None:
        self._log("pause", parts)


class _Task(SinkTask):
    def __init__(self, fail_open: bool = False) -> None:
        self.events: list[tuple[str, list[int]]] = []
        self.fail_open = fail_open

    def open(self, partitions: Collection[TopicPartition]) -> None:
        if self.fail_open:
            raise RuntimeError("destination unreachable")
        self.events.append(("open", sorted(tp.partition for tp in partitions)))

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self.events.append(("close", sorted(tp.partition for tp in partitions)))

    def put(self, records: list[SinkRecord]) -> None:
        pass

    def start(self, config: Any) -> None:
        pass

    def stop(self) -> None:
        pass


def _tps(*partitions: int) -> list[KafkaTopicPartition]:
    return [KafkaTopicPartition("t", p) for p in partitions]


def _setup(
    incremental: bool, task: _Task | None = None
) -> tuple[SinkAssignment, _Task, _Calls, list[tuple[str, list[int]]]]:
    task = task or _Task()
    task_id = TaskId("c", 0)
    metrics = TaskMetrics("c", 0)
    offsets = SinkOffsetCommitter(
        task_id, task, ErrorHandler(task_id, ErrorPolicy(), metrics), metrics
    )
    timeline: list[tuple[str, list[int]]] = task.events

    def commit(only: set[TopicPartition]) -> None:
        timeline.append(("commit", sorted(tp.partition for tp in only)))

    assignment = SinkAssignment(
        task_id, task, {}, offsets, commit, lambda tp: False, lambda topic: None
    )
    assignment.incremental = incremental
    return assignment, task, _Calls(), timeline


def test_incremental_rebalances_open_and_close_only_what_moves() -> None:
    assignment, _, calls, timeline = _setup(incremental=True)
    consumer = cast(Consumer, calls)
    assignment.on_assign(consumer, _tps(0, 1, 2, 3))
    assignment.on_revoke(consumer, _tps(2, 3))  # another member takes two
    assignment.on_assign(consumer, _tps(2))  # one comes back
    assignment.on_assign(consumer, [])  # librdkafka may report an empty change
    assignment.on_lost(consumer, _tps(0))
    assignment.raise_failure()
    assert timeline == [
        ("open", [0, 1, 2, 3]),
        ("commit", [2, 3]),  # committed before they go
        ("close", [2, 3]),
        ("open", [2]),
        ("close", [0]),  # lost: nothing to commit any more
    ]
    assert calls.calls == [
        ("incremental_assign", [0, 1, 2, 3]),
        ("incremental_unassign", [2, 3]),
        ("incremental_assign", [2]),
        ("incremental_assign", []),
        ("incremental_unassign", [0]),
    ]
    assert assignment.assigned == {TopicPartition("t", 1), TopicPartition("t", 2)}
    assert assignment.epoch == 2


def test_eager_rebalances_use_assign_and_unassign() -> None:
    assignment, _, calls, timeline = _setup(incremental=False)
    consumer = cast(Consumer, calls)
    assignment.on_assign(consumer, _tps(0, 1))
    assignment.on_revoke(consumer, _tps(0, 1))
    assignment.on_assign(consumer, _tps(1))
    assert timeline == [("open", [0, 1]), ("commit", [0, 1]), ("close", [0, 1]), ("open", [1])]
    assert calls.calls == [("assign", [0, 1]), ("unassign", []), ("assign", [1])]


def test_a_failing_callback_becomes_a_task_failure_after_consume() -> None:
    assignment, _, calls, _ = _setup(incremental=True, task=_Task(fail_open=True))
    assignment.on_assign(cast(Consumer, calls), _tps(0))  # must not raise into librdkafka
    with pytest.raises(TaskFailure) as failed:
        assignment.raise_failure()
    assert "handling the assignment of partitions [t-0] failed" in str(failed.value)
    assert "destination unreachable" in str(failed.value)
    assert isinstance(failed.value.__cause__, RuntimeError)
    assignment.raise_failure()  # raised once


def test_messages_of_partitions_no_longer_owned_are_dropped() -> None:
    assignment, _, calls, _ = _setup(incremental=True)
    consumer = cast(Consumer, calls)
    assignment.on_assign(consumer, _tps(0, 1))
    assignment.on_revoke(consumer, _tps(1))

    class _Msg:
        def __init__(self, partition: int) -> None:
            self._partition = partition

        def error(self) -> None:
            return None

        def topic(self) -> str:
            return "t"

        def partition(self) -> int:
            return self._partition

    msgs = [_Msg(0), _Msg(1), _Msg(0)]
    assert [m.partition() for m in assignment.still_assigned(msgs)] == [0, 0]
