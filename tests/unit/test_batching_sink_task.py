"""BatchingSinkTask: thresholds, and offsets that never pass what ``write`` returned for.

The tests drive the task the way ``SinkTaskRunner`` does: ``put`` batches (the same list again
after a RetriableError), ``pre_commit`` with the next offset after what ``put`` took, rewinds to
the committed offsets after a failed ``pre_commit``, ``close`` on revocation.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import connectrt.api.batching as batching
from connectrt.api import (
    BatchingSinkTask,
    ConnectError,
    RetriableError,
    SinkRecord,
    TopicPartition,
)
from connectrt.testing.contexts import RecordingSinkTaskContext

A = TopicPartition("a", 0)
B = TopicPartition("a", 1)


class ListSink(BatchingSinkTask):
    """Appends each batch to ``batches``; ``fail`` holds exceptions to raise, one per write."""

    def __init__(
        self,
        batch_size: int = 4,
        max_wait_ms: int = 0,
        destination: list[list[SinkRecord]] | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.batch_max_wait_ms = max_wait_ms
        self.batches: list[list[SinkRecord]] = [] if destination is None else destination
        self.fail: list[BaseException] = []

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def write(self, batch: list[SinkRecord]) -> None:
        if self.fail:
            raise self.fail.pop(0)
        self.batches.append(batch)

    @property
    def written(self) -> list[tuple[str, int, int]]:
        return [(r.topic, r.kafka_partition or 0, r.kafka_offset) for b in self.batches for r in b]


def started(task: BatchingSinkTask) -> RecordingSinkTaskContext:
    context = RecordingSinkTaskContext({})
    task.initialize(context)
    task.start({})
    return context


def records(tp: TopicPartition, start: int, count: int) -> list[SinkRecord]:
    return [
        SinkRecord(tp.topic, tp.partition, None, None, None, f"v{o}", o)
        for o in range(start, start + count)
    ]


def test_writes_when_the_batch_size_is_reached() -> None:
    task = ListSink(batch_size=5)
    started(task)
    task.put(records(A, 0, 3))
    assert task.batches == [] and task.buffered == 3
    task.put(records(A, 3, 3))
    assert [len(b) for b in task.batches] == [6]
    assert task.buffered == 0


def test_pre_commit_writes_the_rest_and_reports_the_runtime_offsets() -> None:
    task = ListSink(batch_size=100)
    started(task)
    task.put(records(A, 0, 3) + records(B, 10, 2))
    assert task.pre_commit({A: 3, B: 12}) == {A: 3, B: 12}
    assert task.written == [("a", 0, 0), ("a", 0, 1), ("a", 0, 2), ("a", 1, 10), ("a", 1, 11)]
    assert task.pre_commit({A: 3, B: 12}) == {A: 3, B: 12}
    assert len(task.batches) == 1, "nothing buffered: no empty write"


def test_a_failed_flush_commits_nothing_and_keeps_the_records() -> None:
    task = ListSink(batch_size=100)
    started(task)
    task.put(records(A, 0, 3))
    task.fail.append(ConnectError("disk full"))
    with pytest.raises(ConnectError):
        task.pre_commit({A: 3})
    assert task.buffered == 3
    assert task.committable({A: 3}) == {A: 0}
    assert task.pre_commit({A: 3}) == {A: 3}
    assert task.written == [("a", 0, 0), ("a", 0, 1), ("a", 0, 2)]


def test_after_a_failed_flush_the_redelivered_records_replace_the_buffered_ones() -> None:
    """The runner rewinds to the committed offset and delivers the records again."""
    task = ListSink(batch_size=100)
    started(task)
    task.put(records(A, 0, 5) + records(B, 0, 2))
    assert task.pre_commit({A: 5, B: 2}) == {A: 5, B: 2}
    task.put(records(A, 5, 3) + records(B, 2, 2))
    task.fail.append(ConnectError("timeout"))
    with pytest.raises(ConnectError):
        task.pre_commit({A: 8, B: 4})
    task.put(records(A, 5, 4))  # redelivered from the committed offset 5, plus one new record
    assert task.pre_commit({A: 9, B: 4}) == {A: 9, B: 4}
    assert sorted(task.written) == sorted(
        [("a", 0, o) for o in range(9)] + [("a", 1, o) for o in range(4)]
    ), "each record written once"


def test_a_retriable_write_in_put_hands_the_batch_back() -> None:
    task = ListSink(batch_size=4)
    started(task)
    task.put(records(A, 0, 2))
    batch = records(A, 2, 3)
    task.fail.append(RetriableError("busy"))
    with pytest.raises(RetriableError):
        task.put(batch)
    assert task.buffered == 2, "put() did not take the failed batch"
    task.put(batch)  # the runner delivers the same list again
    assert task.written == [("a", 0, o) for o in range(5)]


def test_offsets_follow_the_original_coordinates_of_rerouted_records() -> None:
    task = ListSink(batch_size=100)
    started(task)
    routed = [
        SinkRecord("renamed", 7, None, None, None, "x", 99, original_topic="a") for o in range(3)
    ]
    for offset, record in enumerate(routed):
        record.original_kafka_partition, record.original_kafka_offset = 0, offset
    task.put(routed)
    assert task.committable({A: 3}) == {A: 0}
    assert task.pre_commit({A: 3}) == {A: 3}


def test_close_drops_the_revoked_partitions_records() -> None:
    task = ListSink(batch_size=100)
    started(task)
    task.put(records(A, 0, 2) + records(B, 0, 2))
    task.close([B])
    assert task.buffered == 2
    assert task.pre_commit({A: 2}) == {A: 2}
    assert task.written == [("a", 0, 0), ("a", 0, 1)]


def test_writes_when_the_oldest_record_waited_long_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(batching, "_monotonic", lambda: clock[0])
    task = ListSink(batch_size=1000, max_wait_ms=500)
    started(task)
    task.put(records(A, 0, 1))
    clock[0] += 0.4
    task.put(records(A, 1, 1))
    assert task.batches == []
    clock[0] += 0.1
    task.put(records(A, 2, 1))
    assert [len(b) for b in task.batches] == [3]
    clock[0] += 10
    task.put(records(A, 3, 1))
    assert len(task.batches) == 1, "the wait starts with the first record of a new batch"


def test_request_commit_after_write() -> None:
    task = ListSink(batch_size=2)
    task.request_commit_after_write = True
    context = started(task)
    task.put(records(A, 0, 1))
    assert context.commit_requests == 0
    task.put(records(A, 1, 1))
    assert context.commit_requests == 1


def test_the_batch_is_the_writers_own_list() -> None:
    task = ListSink(batch_size=100)
    started(task)
    task.put(records(A, 0, 2))
    task.pre_commit({A: 2})
    task.batches[0].clear()
    task.put(records(A, 2, 1))
    assert task.buffered == 1


# -- a model of the runner: committed offsets never pass what write() returned for -------------
OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put-retriable", "put-fatal", "commit", "commit-fails", "revoke"]),
        st.sampled_from([A, B]),
        st.integers(1, 6),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(OPS, st.integers(1, 8))
def test_committed_offsets_never_pass_written_records(ops, batch_size: int) -> None:
    destination: list[list[SinkRecord]] = []  # outlives a failed task, as a database would
    task = ListSink(batch_size, destination=destination)
    started(task)
    position = {A: 0, B: 0}  # the consumer's next offset
    put_offsets: dict[TopicPartition, int] = {}  # next offset after what put() took
    committed = {A: 0, B: 0}

    def written() -> set[tuple[str, int, int]]:
        return {(r.topic, r.kafka_partition or 0, r.kafka_offset) for b in destination for r in b}

    def commit(fail: bool) -> None:
        if fail:
            task.fail.append(ConnectError("flush failed"))
        current = dict(put_offsets)
        try:
            result = task.pre_commit(current)
        except ConnectError:
            for tp in current:  # the runner rewinds to the committed offsets
                position[tp] = put_offsets[tp] = committed[tp]
            return
        done = written()
        for tp, offset in result.items():
            assert offset <= current[tp]
            unwritten = [o for o in range(committed[tp], offset) if (*tp, o) not in done]
            assert unwritten == [], f"{tp}: would commit unwritten offsets {unwritten}"
            committed[tp] = max(committed[tp], offset)

    for op, tp, n in ops:
        if op.startswith("put"):
            start = position[tp]
            batch = records(tp, start, n)
            if op == "put-retriable":
                task.fail.append(RetriableError("busy"))
            elif op == "put-fatal":
                task.fail.append(ConnectError("broken"))
            try:
                try:
                    task.put(batch)
                except RetriableError:
                    task.put(batch)  # the same batch again; a write fails at most once here
            except ConnectError:  # the task failed: a new one resumes from the commits
                task = ListSink(batch_size, destination=destination)
                started(task)
                position.update(committed)
                put_offsets.clear()
                continue
            task.fail.clear()
            position[tp] = put_offsets[tp] = start + n
        elif op == "commit":
            commit(fail=False)
        elif op == "commit-fails":
            commit(fail=True)
            task.fail.clear()
        elif op == "revoke" and tp in put_offsets:
            commit(fail=False)  # the runner commits the revoked partitions, then closes them
            task.close([tp])
            del put_offsets[tp]
            position[tp] = committed[tp]

    commit(fail=False)
    assert {tp: committed[tp] for tp in put_offsets} == put_offsets, "a clean commit covers all"
