"""The sink offset-commit rules, on a real SinkTaskRunner over the in-memory Kafka (no broker).

Each test runs a runner on its own thread with a :class:`~connectrt.testing.fake_kafka.FakeKafka`
consumer as its ``consumer_factory``. The consumer is scripted: each ``consume()`` first runs
the test's next step on the task thread (between two batches, where a rebalance or a new
record happens for a real consumer), and once the steps run out it asks the runner to stop,
so the runner's final commit ends the test. Commits happen only when a test asks for one
(``context.request_commit()``), on revocation and on stop: the flush interval is an hour.

The rules (tests/integration keep them on a real broker too):

* offsets are committed only for what ``put()`` took, and only after ``pre_commit()`` (by
  default ``flush()``) returned; a task that failed commits nothing more;
* ``pre_commit()``'s answer clamps what is committed: fewer or older offsets commit those,
  unknown partitions and offsets beyond what was put are ignored;
* a revoked partition's offsets are committed before it is closed, and it never reaches
  ``pre_commit()`` or a commit after;
* a rewind (``context.offset``) makes the next records come from there, and the commit after
  it does not go past the rewind until ``put()`` took more.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from connectrt.api import SinkRecord, SinkTask, TopicPartition
from connectrt.api.record_batch import SinkRecordBatch
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.errors import RetriableError
from connectrt.runtime.sink.runner import SinkTaskRunner
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.runner import TaskConverters, TaskFailure, TaskId
from connectrt.runtime.tasks.settings import SinkRunnerSettings
from connectrt.testing.fake_kafka import FakeConsumer, FakeKafka

GROUP = "connect-c"
Step = Callable[[], None]


class _Task(SinkTask):
    """Records what it is handed; ``on_put``/``answer``/``flush_fails`` script its behaviour."""

    def __init__(self) -> None:
        self.put_offsets: list[list[tuple[int, int]]] = []
        self.events: list[tuple[str, Any]] = []
        self.on_put: Callable[[int, SinkRecordBatch], None] = lambda call, batch: None
        self.answer: Callable[[Mapping[TopicPartition, int]], Mapping[Any, int]] | None = None
        self.flush_fails = False
        self.kafka: FakeKafka | None = None
        self.runner: SinkTaskRunner | None = None

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        assert isinstance(records, SinkRecordBatch)
        self.on_put(len(self.put_offsets), records)
        self.put_offsets.append([(r.kafka_partition, r.kafka_offset) for r in records])

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self.flush_fails:
            raise OSError("destination unreachable")

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        self.events.append(("pre_commit", sorted(tp.partition for tp in offsets)))
        self.flush(offsets)
        return offsets if self.answer is None else self.answer(offsets)  # type: ignore[return-value]

    def close(self, partitions: Collection[TopicPartition]) -> None:
        assert self.kafka is not None
        self.events.append(("close", sorted(tp.partition for tp in partitions)))
        self.events.append(("committed at close", self.kafka.committed(GROUP)))

    def stop(self) -> None:
        pass


def _run(
    kafka: FakeKafka,
    task: _Task,
    steps: Callable[[SinkTaskRunner], list[Step]],
    max_poll: int = 10,
) -> SinkTaskRunner:
    """Run ``task`` on a SinkTaskRunner subscribed to ``t`` until the steps made of the runner
    by ``steps`` are done; return it once its thread ended."""
    task.kafka = kafka
    header = SimpleHeaderConverter()
    header.configure({})
    runner: SinkTaskRunner | None = None

    def factory(config: dict[str, Any]) -> Any:
        assert runner is not None
        script = steps(runner)
        consumer = kafka.consumer(config)

        def next_step(_consumer: FakeConsumer) -> bool:
            """One step per consume(); once they are done, stop the runner."""
            assert runner is not None
            if not script:
                runner.stop()
                return False
            script.pop(0)()
            return True

        consumer.on_consume = next_step
        return consumer

    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=TaskConverters(ByteArrayConverter(), ByteArrayConverter(), header),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,
        consumer_config={"group.id": GROUP},
        max_poll_records=max_poll,
        consumer_factory=factory,
    )
    runner = SinkTaskRunner(TaskId("c", 0), task, settings)
    task.runner = runner
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "the runner did not stop within 30 s"
    return runner


def _fill(kafka: FakeKafka, partitions: int, per_partition: int) -> None:
    kafka.create_topic("t", partitions)
    for p in range(partitions):
        for i in range(per_partition):
            kafka.append("t", f"{p}-{i}".encode(), partition=p)


def _commit(runner: SinkTaskRunner) -> Step:
    """A step that asks for a commit after the batch (what ``context.request_commit()`` does)."""

    def step() -> None:
        runner.commit_requested = True

    return step


def _nothing() -> None:
    """A step that only consumes."""


# -- commit after put ---------------------------------------------------------------------------


def test_a_batch_put_did_not_take_is_never_committed() -> None:
    kafka = FakeKafka()
    _fill(kafka, 1, 4)
    task = _Task()

    def put(call: int, batch: SinkRecordBatch) -> None:
        if call == 1:  # the second batch: the task is stopped while put() asks for a retry
            assert task.runner is not None
            task.runner.stop()
            raise RetriableError("destination busy")

    task.on_put = put
    runner = _run(kafka, task, lambda r: [_commit(r), _nothing, _nothing], max_poll=2)
    assert runner.failed is None
    assert task.put_offsets == [[(0, 0), (0, 1)]]
    # Committed on request after the first batch, and on stop: still only what put() took.
    assert kafka.committed(GROUP) == {("t", 0): 2}


def test_nothing_is_committed_when_flush_fails_and_the_records_come_again() -> None:
    kafka = FakeKafka()
    _fill(kafka, 1, 3)
    task = _Task()
    task.flush_fails = True

    def recover() -> None:
        task.flush_fails = False

    runner = _run(kafka, task, lambda r: [_commit(r), recover, _nothing])
    assert runner.failed is None
    assert _commits(kafka) == [{("t", 0): 3}]  # one commit: after the flush that succeeded
    # The failed pre_commit() committed nothing and rewound to the start: put twice.
    assert task.put_offsets == [[(0, 0), (0, 1), (0, 2)], [(0, 0), (0, 1), (0, 2)]]


def test_a_task_that_fails_commits_nothing_more_not_even_what_it_put() -> None:
    kafka = FakeKafka()
    _fill(kafka, 1, 4)
    task = _Task()

    def put(call: int, batch: SinkRecordBatch) -> None:
        if call == 1:
            raise ValueError("bad record")

    task.on_put = put
    runner = _run(kafka, task, lambda r: [_nothing, _nothing, _nothing], max_poll=2)
    assert isinstance(runner.failed, TaskFailure)
    assert task.put_offsets == [[(0, 0), (0, 1)]]
    # A failed task's buffered writes are not trusted: the first batch is redelivered too.
    assert kafka.committed(GROUP) == {}


# -- pre_commit() clamps ------------------------------------------------------------------------


def test_pre_commit_answer_clamps_what_is_committed() -> None:
    kafka = FakeKafka()
    _fill(kafka, 3, 3)
    task = _Task()
    # Partition 0: an older offset; 1: beyond what was put (ignored); 2: left out (fewer);
    # another topic the task does not own (ignored).
    task.answer = lambda offsets: {
        TopicPartition("t", 0): 1,
        TopicPartition("t", 1): 99,
        TopicPartition("elsewhere", 0): 5,
    }
    runner = _run(kafka, task, lambda r: [_commit(r)])
    assert runner.failed is None
    assert sum(len(b) for b in task.put_offsets) == 9
    assert kafka.committed(GROUP) == {("t", 0): 1}


# -- rebalance ----------------------------------------------------------------------------------


def test_revoked_partitions_are_committed_before_they_go_and_never_after() -> None:
    kafka = FakeKafka()
    _fill(kafka, 2, 3)
    task = _Task()

    def move_partition_0_away() -> None:
        for p in (0, 1):
            kafka.append("t", b"late", partition=p)
        kafka.rebalance([("t", 1)])

    runner = _run(kafka, task, lambda r: [_nothing, move_partition_0_away, _commit(r)])
    assert runner.failed is None
    # The revocation (eager: both partitions) committed what put() took before close().
    assert task.events[:3] == [
        ("pre_commit", [0, 1]),
        ("close", [0, 1]),
        ("committed at close", {("t", 0): 3, ("t", 1): 3}),
    ]
    # After it went, partition 0 never reached pre_commit() again.
    later = [parts for event, parts in task.events[3:] if event == "pre_commit"]
    assert later and all(0 not in parts for parts in later)
    # Partition 1 came back and went on; partition 0 was never committed again.
    assert kafka.committed(GROUP) == {("t", 0): 3, ("t", 1): 4}
    commits = _commits(kafka)
    assert commits[0] == {("t", 0): 3, ("t", 1): 3}
    assert all(("t", 0) not in c for c in commits[1:])


def _commits(kafka: FakeKafka) -> list[dict[tuple[str, int], int]]:
    return [offsets for group, offsets in kafka.commit_log if group == GROUP]


# -- rewind -------------------------------------------------------------------------------------


def test_a_rewind_redelivers_from_there_and_the_commit_does_not_pass_it() -> None:
    kafka = FakeKafka()
    _fill(kafka, 1, 4)
    task = _Task()

    def put(call: int, batch: SinkRecordBatch) -> None:
        if call == 0:
            task.context.offset(TopicPartition("t", 0), 1)
            task.context.request_commit()

    task.on_put = put
    runner = _run(kafka, task, lambda r: [_nothing, _nothing])
    assert runner.failed is None
    assert task.put_offsets == [[(0, 0), (0, 1), (0, 2), (0, 3)], [(0, 1), (0, 2), (0, 3)]]
    commits = _commits(kafka)
    assert commits[0] == {("t", 0): 1}  # right after the rewind: not past it
    assert kafka.committed(GROUP) == {("t", 0): 4}
