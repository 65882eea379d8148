"""The source side's offset-commit rules, on a real SourceTaskRunner over the in-memory Kafka.

Each test runs a scripted source task on the test thread (``runner.run()``) with the producer
of a :class:`~connectrt.testing.fake_kafka.FakeKafka` as ``producer_factory``; no broker, no
threads, milliseconds each. Each ``poll()`` first records what is durable at that moment (the
offsets committed, the records a read_committed consumer sees), then returns the script's next
batch; after the last one it stops its runner. The rules:

* at-least-once: an offset is stored only once every record produced before it is
  acknowledged, and a failed delivery fails the task without storing its offset (or, under
  ``errors.tolerance=all``, is skipped and the task goes on past it);
* exactly-once (KIP-618): at each boundary (``poll``, ``interval``, ``connector``) the records
  and their offsets commit in one transaction, and an aborted transaction (by the task, or by
  its failure) commits neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from connectrt.api import SourceRecord, SourceTask
from connectrt.api.task import TransactionContext
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.string import StringConverter
from connectrt.runtime.config.exactly_once import ExactlyOnceSettings
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.runner import SourceTaskRunner
from connectrt.runtime.status import State, StatusBoard
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskFailure, TaskId
from connectrt.runtime.tasks.settings import SourceRunnerSettings
from connectrt.storage.offset_codec import decode_value, encode_key
from connectrt.storage.offsets import MemoryOffsetStore, OffsetStore
from connectrt.testing.fake_kafka import FakeKafka, FakeProducer

CONNECTOR = "src"
TOPIC = "data"
OFFSETS_TOPIC = "offsets"
PARTITION = {"file": "a"}
KEY = encode_key(CONNECTOR, PARTITION)


def rec(n: int) -> SourceRecord:
    """Record ``n`` of the one source partition: value ``v<n>``, source offset ``{"n": n}``."""
    return SourceRecord(PARTITION, {"n": n}, TOPIC, None, None, None, None, f"v{n}")


@dataclass
class Seen:
    """What was durable when a ``poll()`` began: the committed offset, the visible values."""

    offset: int | None
    values: list[str]


Step = Callable[["Run"], list[SourceRecord] | None]
"""One ``poll()`` of the script: given the run, returns the batch (None: nothing)."""


@dataclass
class Run:
    """One scripted task on one runner over one fake Kafka; see the module docstring."""

    kafka: FakeKafka
    store: OffsetStore
    steps: list[Step]
    runner: SourceTaskRunner | None = None
    producers: list[FakeProducer] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    context: TransactionContext | None = None

    @property
    def producer(self) -> FakeProducer:
        return self.producers[-1]

    def committed_offset(self) -> int | None:
        value = self.store.get([KEY])[KEY]
        if value is None:  # exactly-once: what the offsets topic holds (read_committed)
            records = [m for m in self.kafka.records(OFFSETS_TOPIC) if m.key() == KEY]
            value = records[-1].value() if records else None
        decoded = decode_value(value)
        return None if decoded is None else int(decoded["n"])

    def visible(self) -> list[str]:
        return [(m.value() or b"").decode() for m in self.kafka.records(TOPIC)]

    def look(self) -> None:
        self.seen.append(Seen(self.committed_offset(), self.visible()))


class ScriptedTask(SourceTask):
    """Runs ``RUN``'s steps, one per ``poll()``, then stops the runner."""

    RUN: Run

    def start(self, config: Mapping[str, str]) -> None:
        self.run = type(self).RUN
        self.run.context = self.context.transaction_context

    def poll(self) -> list[SourceRecord] | None:
        run = self.run
        run.look()
        if not run.steps:
            assert run.runner is not None
            run.runner.stop()
            return None
        return run.steps.pop(0)(run)

    def stop(self) -> None:
        pass


def batch(*ns: int) -> Step:
    return lambda run: [rec(n) for n in ns]


def nothing(run: Run) -> None:
    return None


def run_task(
    steps: list[Step],
    *,
    exactly_once: ExactlyOnceSettings | None = None,
    tolerance: str = "none",
) -> Run:
    """Run ``steps`` to their end on a SourceTaskRunner (offsets every loop iteration
    at-least-once); the run, with what each poll saw."""
    kafka = FakeKafka()
    kafka.create_topic(TOPIC)
    eos_store = kafka.offset_store(OFFSETS_TOPIC, 3) if exactly_once else None
    store = MemoryOffsetStore()
    store.start()
    run = Run(kafka, store, list(steps))
    task_id = TaskId(CONNECTOR, 0)
    metrics = TaskMetrics(CONNECTOR, 0)
    key, value, header = StringConverter(), StringConverter(), SimpleHeaderConverter()
    key.configure({}, True)
    value.configure({}, False)
    header.configure({})

    def producer_factory(config: dict[str, Any]) -> FakeProducer:
        run.producers.append(kafka.producer(config))
        return run.producers[-1]

    settings = SourceRunnerSettings(
        task_config={},
        converters=TaskConverters(key=key, value=value, header=header),
        status=StatusBoard("w"),
        offset_flush_interval_ms=0,  # a commit after every poll
        errors=ErrorHandler(
            task_id, ErrorPolicy.from_config({"errors.tolerance": tolerance}), metrics
        ),
        producer_config={"transactional.id": "g-src-0"} if exactly_once else {},
        offset_store=store,
        offset_flush_timeout_ms=1000,
        producer_factory=producer_factory,
        exactly_once=exactly_once,
        exactly_once_store=cast(Any, eos_store),  # a KafkaOffsetStore over the fake topic
    )
    task = type("Task", (ScriptedTask,), {"RUN": run, "__module__": __name__})()
    run.runner = SourceTaskRunner(task_id, task, settings)
    run.runner.run()
    return run


def failure(run: Run) -> TaskFailure:
    assert run.runner is not None
    assert isinstance(run.runner.failed, TaskFailure), run.runner.failed
    status = run.runner.status.task(CONNECTOR, 0)
    assert status is not None and status.state is State.FAILED
    return run.runner.failed


def eos(boundary: str, interval_ms: int = 3_600_000) -> ExactlyOnceSettings:
    return ExactlyOnceSettings("g-src-0", boundary, interval_ms, OFFSETS_TOPIC)


# -- at-least-once -----------------------------------------------------------------------------


def test_an_offset_is_stored_only_once_the_records_before_it_are_acknowledged() -> None:
    def hold(run: Run) -> list[SourceRecord]:
        run.producer.hold_acknowledgements()
        return [rec(0), rec(1)]

    def acknowledge(run: Run) -> None:
        run.producer.acknowledge()
        run.producer.hold_acknowledgements(False)
        return None

    run = run_task([hold, nothing, acknowledge, batch(2)])
    assert run.runner is not None and run.runner.failed is None
    # After the batch, commits found its records in flight: nothing stored, twice.
    assert run.seen[1] == Seen(None, []) and run.seen[2] == Seen(None, [])
    # Acknowledged: the next commit stores the offset of the last of them.
    assert run.seen[3] == Seen(1, ["v0", "v1"])
    assert run.seen[4] == Seen(2, ["v0", "v1", "v2"])
    # Waiting for acknowledgements is no failure: the writer stored each epoch once acknowledged.
    assert run.runner.metrics.offset_commit_failures == 0
    assert run.runner.metrics.offset_commits == 2


def test_a_failed_delivery_fails_the_task_and_its_offset_is_never_stored() -> None:
    def fail_next(run: Run) -> list[SourceRecord]:
        run.producer.fail_deliveries(1)
        return [rec(1)]

    run = run_task([batch(0), fail_next, batch(2)])
    assert "KAFKA_PRODUCE" in str(failure(run)) and "delivery failed" in str(failure(run))
    assert run.seen[1] == Seen(0, ["v0"])
    assert len(run.seen) == 2  # the task failed before polling again
    assert run.committed_offset() == 0  # not 1: that record is not in Kafka
    assert run.visible() == ["v0"]


def test_offsets_are_stored_once_acknowledged_while_later_records_are_still_in_flight() -> None:
    """A busy source's producer never runs empty: an interval's offsets are stored as soon as
    its own records (and every earlier interval's) are acknowledged, with later ones in
    flight, off the task's timed commit (which only hands them over)."""
    in_flight: list[int] = []

    def hold(run: Run) -> list[SourceRecord]:
        run.producer.hold_acknowledgements()
        return [rec(0), rec(1)]

    def acknowledge_first_two(run: Run) -> None:
        run.producer.acknowledge(2)  # r0 and r1; r2 stays in flight
        return None

    def look_then_release(run: Run) -> None:
        in_flight.append(len(run.producer))
        run.producer.acknowledge()
        run.producer.hold_acknowledgements(False)
        return None

    run = run_task([hold, batch(2), acknowledge_first_two, look_then_release, nothing])
    assert run.runner is not None and run.runner.failed is None
    assert [s.offset for s in run.seen[:3]] == [None, None, None]  # all in flight
    assert run.seen[3] == Seen(1, ["v0", "v1"]) and in_flight == [1]  # r2 still in flight
    assert run.seen[4].offset == 2 and run.seen[5].offset == 2
    assert run.runner.metrics.offset_commit_failures == 0


def test_a_delivery_failing_behind_acknowledged_records_stops_the_offsets_before_it() -> None:
    """r1 fails while r2, produced after it, is acknowledged: no offset past r0 is ever
    stored (not r2's either), and the task fails once the failure is reported."""

    def fail_in_flight(run: Run) -> list[SourceRecord]:
        run.producer.hold_acknowledgements()
        run.producer.fail_deliveries(1)
        return [rec(1)]

    def acknowledge_all(run: Run) -> None:
        run.producer.acknowledge()  # r1 fails, r2 is appended; reported at the next poll(0)
        run.producer.hold_acknowledgements(False)
        return None

    run = run_task([batch(0), fail_in_flight, batch(2), acknowledge_all, batch(3)])
    assert "delivery failed" in str(failure(run))
    assert [s.offset for s in run.seen] == [None, 0, 0, 0]  # failed before polling again
    assert run.committed_offset() == 0 and run.visible() == ["v0", "v2"]


def test_a_failed_delivery_under_errors_tolerance_all_is_skipped_and_the_task_goes_on() -> None:
    def fail_next(run: Run) -> list[SourceRecord]:
        run.producer.fail_deliveries(1)
        return [rec(1)]

    run = run_task([batch(0), fail_next, batch(2)], tolerance="all")
    assert run.runner is not None and run.runner.failed is None
    assert run.seen[2] == Seen(1, ["v0"])  # skipped: its offset committed, as Kafka Connect does
    assert run.seen[3] == Seen(2, ["v0", "v2"])
    assert run.runner.metrics.errors == 1 and run.runner.metrics.records_skipped == 1


# -- exactly-once ------------------------------------------------------------------------------


def test_a_poll_boundary_commits_each_batch_with_its_offset_in_one_transaction() -> None:
    run = run_task([batch(0, 1), nothing, batch(2)], exactly_once=eos("poll"))
    assert run.runner is not None and run.runner.failed is None
    assert run.seen[1] == Seen(1, ["v0", "v1"])
    assert run.seen[2] == Seen(1, ["v0", "v1"])  # an empty poll: no transaction
    assert run.seen[3] == Seen(2, ["v0", "v1", "v2"])
    assert run.producer.committed_transactions == 2
    assert run.store.all() == {}  # offsets only in the transactions, never in the plain store


def test_each_producer_asks_for_its_producer_id_before_it_is_used() -> None:
    """Without the metadata requests librdkafka asks on a 500 ms timer (``request_producer_id``):
    an exactly-once producer asks before ``init_transactions``, naming no topic (a request
    naming the offsets topic would create it with the broker's defaults before the store makes
    it compacted); an at-least-once one before its first record, over that record's topic."""
    transactional = run_task([batch(0, 1), batch(2)], exactly_once=eos("poll"))
    first_record = (TOPIC, True)  # the transactions were initialised by then
    assert transactional.producer.metadata_requests == [(None, False)] * 2 + [first_record] * 2
    plain = run_task([batch(0, 1), batch(2)])
    assert plain.producer.metadata_requests == [(TOPIC, False)] * 2


def test_an_interval_boundary_commits_on_its_timer_records_and_offsets_together() -> None:
    every_iteration = run_task([batch(0), batch(1, 2)], exactly_once=eos("interval", 0))
    assert [s.offset for s in every_iteration.seen] == [None, 0, 2]
    assert every_iteration.seen[2].values == ["v0", "v1", "v2"]
    # A long interval: nothing commits while the task polls; stopping commits both at once.
    long = run_task([batch(0), batch(1, 2), nothing], exactly_once=eos("interval"))
    assert long.seen[1:] == [Seen(None, [])] * 3
    assert long.committed_offset() == 2 and long.visible() == ["v0", "v1", "v2"]
    assert long.producer.committed_transactions == 1


def test_connector_boundaries_commit_at_the_record_named_and_an_abort_commits_neither() -> None:
    def commit_at_1(run: Run) -> list[SourceRecord]:
        records = [rec(0), rec(1), rec(2)]
        assert run.context is not None
        run.context.commit_transaction(records[1])
        return records

    def abort(run: Run) -> list[SourceRecord]:
        assert run.context is not None
        run.context.abort_transaction()
        return [rec(3)]

    def commit(run: Run) -> list[SourceRecord]:
        assert run.context is not None
        run.context.commit_transaction()
        return [rec(4)]

    run = run_task([commit_at_1, abort, commit, batch(5)], exactly_once=eos("connector"))
    assert run.runner is not None and run.runner.failed is None
    assert run.seen[1] == Seen(1, ["v0", "v1"])  # cut after record 1; record 2 left open
    assert run.seen[2] == Seen(1, ["v0", "v1"])  # records 2 and 3 aborted, offsets too
    assert run.seen[3] == Seen(4, ["v0", "v1", "v4"])
    # Record 5's transaction, not ended by the task, is aborted at stop.
    assert run.committed_offset() == 4 and run.visible() == ["v0", "v1", "v4"]
    assert run.producer.committed_transactions == 2
    assert run.producer.aborted_transactions == 2


def test_a_failed_exactly_once_task_aborts_its_open_transaction() -> None:
    def fail(run: Run) -> None:
        raise RuntimeError("source went away")

    run = run_task([batch(0), fail], exactly_once=eos("interval"))
    assert "TASK_POLL" in str(failure(run))
    assert run.committed_offset() is None and run.visible() == []
    assert run.producer.aborted_transactions == 1 and run.producer.committed_transactions == 0


# -- end-to-end latency ------------------------------------------------------------------------


def test_a_batch_latency_is_observed_once_kafka_acknowledged_its_records() -> None:
    """poll() -> acknowledged: a batch whose acknowledgements are held is not observed, and once
    acknowledged each of its records counts, with at least the time it was held."""
    observed: list[int] = []
    held: list[float] = []

    def count(run: Run) -> int:
        assert run.runner is not None
        return sum(run.runner.metrics.e2e_latency_seconds.counts)

    def hold(run: Run) -> list[SourceRecord]:
        run.producer.hold_acknowledgements()
        return [rec(0), rec(1)]

    def wait(run: Run) -> None:
        # The runner took the held batch's poll time before this next poll: from here to the
        # acknowledgement is a lower bound of their latency whatever the scheduling.
        held.append(time.monotonic())
        observed.append(count(run))
        time.sleep(0.05)
        return None

    def acknowledge(run: Run) -> None:
        observed.append(count(run))
        held.append(time.monotonic())
        run.producer.acknowledge()
        run.producer.hold_acknowledgements(False)
        return None

    run = run_task([hold, wait, acknowledge, batch(2)])
    assert run.runner is not None and run.runner.failed is None
    assert observed == [0, 0]  # in flight: not observed
    histogram = run.runner.metrics.e2e_latency_seconds
    assert sum(histogram.counts) == 3  # both batches, one count per record
    assert histogram.total >= 2 * (held[1] - held[0])  # the held two waited that long at least
