"""Broker faults on Apache Kafka: the broker is SIGKILLed mid-stream and restarted ~8 s later.

These tests start an Apache Kafka broker of their own (module scope; Java 17+ and the cached
jars, as ``test_kafka_broker_launcher.py``), whatever ``CONNECTRT_TEST_BROKER`` says: the
embedded broker keeps nothing across a restart. A worker runs in this process over real HTTP;
a watcher thread asks ``GET /connectors/{name}/status`` twice a second throughout and records
every task state seen and whether the REST API answered while the broker was down.

* at-least-once, a FileStreamSource tailing a file that a writer thread keeps appending to: the
  pipeline finishes by itself, every line once (0 lost; 0 duplicated: the producer is
  idempotent and the task never restarts, so nothing committed is sent again), the task RUNNING
  throughout and at the end;
* exactly-once (``tests.plugins.eos_sequence``, ``transaction.boundary=poll``), counted by a
  ``read_committed`` consumer of Apache Kafka (aborted records hidden by Kafka itself):
  an outage shorter than ``max.block.ms`` and ``transaction.timeout.ms`` (set to 120 s) is
  ridden out: the open transaction commits once the broker is back, the task never FAILED nor
  restarted, one run of the task wrote every seq once; an outage longer than both (set to
  6 s) ends in an automatic restart of the task in place (RESTARTING, then RUNNING, never
  FAILED, ``transaction_restarts`` counted) that resumes from the committed offset: every seq
  once, from two runs of the task.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import pytest
from confluent_kafka import Producer

from connectrt.errors import ConnectError
from connectrt.storage.kafka_log import TopicLog
from connectrt.storage.undecided import undecided_note
from connectrt.testing.committed_view import ABORT, COMMIT, consume_committed, read_batches
from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.metrics import scrape
from connectrt.testing.pytest_plugin import keep_broker_log
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.eos_support import assert_atomic, view

pytestmark = pytest.mark.integration

STRING = "org.apache.kafka.connect.storage.StringConverter"
EOS_SOURCE = "tests.plugins.eos_sequence.EosSequenceSource"
DOWN_S = 8.0
"""How long the broker stays dead before it is started again (its start then takes a few
seconds more on a busy machine): longer than the 6 s timeouts of the long-outage case, with
the writer of the at-least-once case still appending throughout."""


@pytest.fixture(scope="module")
def kafka(request: pytest.FixtureRequest) -> Iterator[KafkaBroker]:
    """This module's own broker (its tests kill it), kept with its log when one of them failed
    or an attempt was spoiled by a hanging transaction (:func:`_eos_run`)."""
    failed_before = request.session.testsfailed
    with KafkaBroker() as started:
        yield started
        if request.session.testsfailed > failed_before or SPOILED:
            keep_broker_log(request, started)  # named at the end of the run, with its evidence


@dataclass
class _Watch:
    """What a thread asking for a connector's status twice a second saw (see the module
    docstring). ``outage`` is the (start, end) of the broker's death, set by :func:`_outage`."""

    worker: RestWorker
    name: str
    states: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)
    unanswered: list[float] = field(default_factory=list)
    outage: tuple[float, float] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> _Watch:
        self._thread = threading.Thread(target=self._run, name="status-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.worker.url, timeout=5) as http:
            while not self._stop.wait(0.5):
                now = time.monotonic()
                try:
                    response = http.get(f"/connectors/{self.name}/status")
                except httpx.HTTPError:
                    self.unanswered.append(now)
                    continue
                if response.status_code != 200:
                    self.unanswered.append(now)
                    continue
                tasks = response.json()["tasks"]
                self.states.append((now, tuple(t["state"] for t in tasks)))

    def seen(self) -> set[str]:
        return {state for _, states in self.states for state in states}

    def transitions(self) -> str:
        """Each change of the task states seen, as seconds since the broker's death."""
        start = self.outage[0] if self.outage is not None else 0.0
        changes, last = [], None
        for t, states in self.states:
            if states != last:
                changes.append(f"{t - start:+.0f}s {'/'.join(states) or '-'}")
                last = states
        return ", ".join(changes)

    def answers_during_outage(self) -> int:
        assert self.outage is not None
        start, end = self.outage
        return sum(1 for t, _ in self.states if start <= t <= end)


def _outage(kafka: KafkaBroker, watch: _Watch, down_s: float = DOWN_S) -> float:
    """SIGKILL the broker, wait ``down_s``, start it again (returns once it is ready); the
    outage's length in seconds (death to readiness)."""
    started = time.monotonic()
    kafka.kill()
    time.sleep(down_s)
    kafka.restart()
    ended = time.monotonic()
    watch.outage = (started, ended)
    return ended - started


UNDECIDED = "a transaction is undecided"  # connectrt.storage.undecided's report
SKIPPED_MARKERS = "Couldn't find leader endpoint for partitions"  # Kafka's coordinator log


SPOILED: list[str] = []
"""What each attempt spoiled by the broker saw (:func:`_eos_run`); its broker log is kept."""


class _HangingTransaction(Exception):
    """The broker left this attempt's transaction undecided for good (see :func:`_eos_run`)."""


def _markers_skipped(kafka: KafkaBroker, name: str) -> str | None:
    """The broker's log line saying its transaction coordinator skipped the markers of a
    transaction of connector ``name`` (its transactional.id holds the name), if there is one."""
    try:
        text = kafka.log_path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    return next((ln for ln in text.splitlines() if SKIPPED_MARKERS in ln and name in ln), None)


class _Warnings(logging.Handler):
    """The worker's (in this process) warnings about the task's transactions and restarts,
    kept for a failed wait's message: CI shows only part of a long captured log."""

    LOGGERS = ("connectrt.runtime.source", "connectrt.runtime.tasks")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self.undecided: list[str] = []  # the task's reports of an undecided transaction, whole
        self._started = time.time()

    def __enter__(self) -> _Warnings:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if UNDECIDED in message:
            self.undecided.append(message)
        self.lines.append(
            f"{record.created - self._started:.0f}s {record.levelname} {message[:400]}"
        )


def _task_metric(worker: RestWorker, name: str, metric: str) -> float:
    """A counter of the connector's task 0 in the worker's /metrics (0 when absent)."""
    try:
        samples = scrape(worker.http)
    except (httpx.HTTPError, AssertionError):
        return 0
    return samples.value(f"connectrt_task_{metric}_total", connector=name, task=0) or 0


def _read_committed(bootstrap: str, topic: str, timeout: float = 120.0) -> list[bytes]:
    """Every value of partition 0 as Apache Kafka's ``read_committed`` consumer sees it (the
    records of aborted transactions hidden by the broker), read to partition EOF."""
    values = [r.value for r in consume_committed(bootstrap, topic, 0, timeout)]
    assert None not in values, f"a record of {topic} has no value"
    return [v for v in values if v is not None]


def _committed_seq(bootstrap: str, offsets_topic: str) -> int:
    """The source offset (``seq``) task 0 last committed, read_committed; -1 before any."""
    found = -1
    for value in _read_committed(bootstrap, offsets_topic):
        found = int(orjson.loads(value)["seq"])
    return found


def _offsets_tail(bootstrap: str, offsets_topic: str) -> str:
    """The last stored batches of the offsets topic's partition 0 as the broker holds them
    (offset, producer id and epoch, a record's seq or a control marker's kind), for a failed
    wait: an undecided transaction shows as records after the last marker of their producer."""
    try:
        batches, high_watermark, _aborted = read_batches(bootstrap, offsets_topic, 0)
        shown = []
        for batch in batches[-8:]:
            if batch.control:
                what = {COMMIT: "COMMIT", ABORT: "ABORT"}.get(batch.marker or -1, "control")
            else:
                what = ",".join(
                    str(orjson.loads(r.value or b"{}").get("seq")) for r in batch.records
                )
            pid = f"{batch.producer_id}/{batch.producer_epoch}"
            shown.append(f"@{batch.base_offset} pid {pid} {what}")
    except Exception as e:  # a diagnostic: never hides the failure it describes
        return f"offsets topic not read ({e!r})"
    return f"offsets topic high watermark {high_watermark}, last batches: " + "; ".join(shown)


def _cleanup(kafka: KafkaBroker, worker: RestWorker, watch: _Watch | None) -> None:
    """The broker back up (a test that failed mid-outage left it dead), the connectors
    deleted, the worker stopped."""
    if watch is not None:
        watch.stop()
    if not kafka.is_alive():
        kafka.restart()
    try:
        worker.delete_connectors(timeout=120)
    finally:
        worker.stop()


def test_at_least_once_file_source_rides_out_a_broker_kill(
    kafka: KafkaBroker, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    bootstrap = kafka.bootstrap_servers
    topic = unique_name("outage-file")
    create_topic(bootstrap, topic)
    source = tmp_path / "in.txt"
    source.write_text("")
    total, chunk = 60_000, 200
    lines = [f"line-{i:06d}" for i in range(total)]

    def append_lines() -> None:
        # 200 lines every 50 ms: ~15 s of writing, so the stream is still going at the kill
        # and during the outage (the source keeps reading; its producer keeps the records).
        for start in range(0, total, chunk):
            with source.open("a") as out:
                out.write("".join(f"{line}\n" for line in lines[start : start + chunk]))
            time.sleep(0.05)

    worker = start_rest_worker(bootstrap, **{"value.converter": STRING})
    watch: _Watch | None = None
    writer = threading.Thread(target=append_lines, name="file-writer", daemon=True)
    try:
        name = unique_name("file")
        response = worker.http.put(
            f"/connectors/{name}/config",
            json={
                "connector.class": "FileStreamSource",
                "tasks.max": "1",
                "file": str(source),
                "topic": topic,
            },
        )
        assert response.status_code == 201, response.text
        watch = _Watch(worker, name).start()
        writer.start()
        wait_for(
            lambda: _task_metric(worker, name, "records_committed") >= 10_000,
            120,
            "the first 10,000 lines to be committed before the broker is killed",
        )
        took = _outage(kafka, watch)
        writer.join(120)
        assert not writer.is_alive(), "the writer did not finish appending within 120 s"
        values: list[bytes] = []

        def all_lines() -> bool:
            values[:] = _read_committed(bootstrap, topic)
            return len(values) >= total

        wait_for(all_lines, 240, f"all {total} lines in {topic} after the broker came back")
        time.sleep(2)  # a late duplicate would land now
        values[:] = _read_committed(bootstrap, topic)
        wait_for(lambda: watch.states[-1][1] == ("RUNNING",), 30, "a status answer RUNNING")
        watch.stop()
        counts = Counter(v.decode() for v in values)
        lost = [line for line in lines if line not in counts]
        duplicated = {line: n for line, n in counts.items() if n > 1}
        assert not lost, f"{len(lost)} lines lost, e.g. {lost[:5]}"
        assert not duplicated, f"{len(duplicated)} lines duplicated, e.g. {list(duplicated)[:5]}"
        assert [v.decode() for v in values] == lines  # one partition: in order too
        assert watch.seen() == {"RUNNING"}, watch.states
        assert watch.answers_during_outage() >= 5, (watch.outage, watch.unanswered)
        print(
            f"at-least-once: broker dead {took:.1f} s; {total} lines, 0 lost, 0 duplicated; "
            f"{watch.answers_during_outage()} REST answers during the outage; task states "
            f"seen {sorted(watch.seen())}"
        )
    finally:
        _cleanup(kafka, worker, watch)


EosRun = tuple[list[tuple[int, str]], "_Watch", float, float, int, str]


def _eos_run(kafka: KafkaBroker, unique_name: Callable[[str], str], timeout_ms: int) -> EosRun:
    """:func:`_eos_attempt` until one is not spoiled by the broker (at most 3 attempts).

    Apache Kafka can leave a transaction undecided for good when it is killed at the wrong
    moment: its restarted transaction coordinator completes a transaction whose commit it had
    logged before it knows the partitions' leaders, and then skips their markers (its log:
    "Couldn't find leader endpoint for partitions ..., likely deleted already"). Every
    read_committed reader of those partitions then stops at that transaction, the restarted
    task's read of its offsets included; no client can decide it (an operator aborts it with
    ``kafka-transactions.sh``). Whole suites on a loaded machine met it now and then. Such an
    attempt checks what connectrt can do, report it (the task stays RESTARTING, its warning
    names the offsets topic and the abort command), and the scenario runs again on new topics.
    """
    spoiled: list[str] = []
    for _ in range(3):
        try:
            return _eos_attempt(kafka, unique_name, timeout_ms)
        except _HangingTransaction as e:
            spoiled.append(str(e))
            SPOILED.append(str(e))
            print(f"attempt spoiled by the broker: {e}")
    raise AssertionError(f"every attempt left a hanging transaction: {spoiled}")


def _eos_attempt(kafka: KafkaBroker, unique_name: Callable[[str], str], timeout_ms: int) -> EosRun:
    """An exactly-once sequence source (20,000 records, ``transaction.boundary=poll``, the
    producer's ``max.block.ms`` and ``transaction.timeout.ms`` both ``timeout_ms``) whose broker
    is killed after 2,000 records committed; returns, once the committed offset reached the
    end: the read_committed ``(seq, attempt)`` of every record, the watch, the outage's length,
    the task's ``transaction_restarts``, the committed offset, and which seqs each run of the
    task wrote (:func:`_runs_of`, for a failed assertion's message)."""
    bootstrap = kafka.bootstrap_servers
    topic = unique_name("outage-eos")
    create_topic(bootstrap, topic)
    total = 20_000
    worker = start_rest_worker(
        bootstrap,
        **{
            "value.converter": STRING,
            "exactly.once.source.support": "enabled",
            "offset.storage.partitions": "1",
            "offset.flush.interval.ms": "300",
        },
    )
    offsets_topic = worker.props["offset.storage.topic"]
    watch: _Watch | None = None
    try:
        name = unique_name("eos")
        response = worker.http.put(
            f"/connectors/{name}/config",
            json={
                "connector.class": EOS_SOURCE,
                "tasks.max": "1",
                "topic": topic,
                "batch.size": "50",
                "batch.interval.ms": "20",
                "records.per.task": str(total),
                "exactly.once.support": "required",
                "transaction.boundary": "poll",
                "producer.override.transaction.timeout.ms": str(timeout_ms),
                "producer.override.max.block.ms": str(timeout_ms),
            },
        )
        assert response.status_code == 201, response.text
        watch = _Watch(worker, name).start()
        wait_for(
            lambda: _task_metric(worker, name, "records_committed") >= 2_000,
            120,
            "the first 2,000 records to commit before the broker is killed",
        )
        with _Warnings() as warnings:
            took = _outage(kafka, watch)
            last_seq = [-1]

            def finished() -> bool:
                last_seq[0] = _committed_seq(bootstrap, offsets_topic)
                if last_seq[0] != total and warnings.undecided:
                    skipped = _markers_skipped(kafka, name)
                    if skipped is not None:
                        _check_hanging_reported(warnings.undecided[-1], offsets_topic, watch)
                        raise _HangingTransaction(
                            f"{skipped[-300:]}; the task: {warnings.undecided[-1][-400:]}"
                        )
                return last_seq[0] == total

            try:
                wait_for(finished, 300, f"the committed offset to reach {total} (read_committed)")
            except TimeoutError as e:
                metrics = {
                    m: _task_metric(worker, name, m)
                    for m in ("records_committed", "transaction_restarts")
                }
                raise AssertionError(
                    f"{e} after the broker came back ({took:.0f} s dead): "
                    f"{_offsets_tail(bootstrap, offsets_topic)}; committed seq "
                    f"{last_seq[0]}; task metrics {metrics}; task states {watch.transitions()}; "
                    f"warnings since the kill (s after it): " + " | ".join(warnings.lines[-25:])
                ) from None
        wait_for(lambda: watch.states[-1][1] == ("RUNNING",), 60, "a status answer RUNNING")
        watch.stop()
        restarts = int(_task_metric(worker, name, "transaction_restarts"))
        read = []
        for record in consume_committed(bootstrap, topic, 0, 120.0):
            assert record.value is not None, f"a record of {topic} has no value"
            _task, seq, attempt = record.value.decode().split(":")
            read.append((int(seq), attempt, record.offset))
        committed = _committed_seq(bootstrap, offsets_topic)
        runs = _runs_of(read)
        try:
            # Kafka's read_committed consumer hides exactly the aborted records (computed from
            # the stored markers), and each committed transaction stored its own offset.
            assert_atomic(view(bootstrap, topic, True), view(bootstrap, offsets_topic, True))
        except AssertionError as e:
            raise AssertionError(f"{e}; {runs}") from None
        records = [(seq, attempt) for seq, attempt, _ in read]
        return records, watch, took, restarts, committed, runs
    finally:
        _cleanup(kafka, worker, watch)


def _check_hanging_reported(report: str, offsets_topic: str, watch: _Watch) -> None:
    """What connectrt does when the broker left its transaction undecided: the task waits in
    RESTARTING (never FAILED, never started from an older offset), and its warning names the
    offsets topic's partition, the offset, and the command that aborts the transaction."""
    assert f"abort --topic {offsets_topic} --partition 0 --start-offset " in report, report
    assert "kafka-transactions.sh --bootstrap-server " in report, report
    assert watch.states[-1][1] == ("RESTARTING",), watch.transitions()
    assert "FAILED" not in watch.seen(), watch.transitions()


def _runs_of(read: list[tuple[int, str, int]]) -> str:
    """What a failed exactly-once assertion needs to tell a replayed batch (two runs of the
    task, two offsets) from a record read twice (one offset): the seqs each run of the task
    (its ``attempt``) wrote, in the order read, and every copy of the first seq read more
    than once as ``attempt@offset``. ``read`` holds ``(seq, attempt, offset)``."""
    runs: dict[str, list[int]] = {}
    copies: dict[int, list[str]] = {}
    for seq, attempt, offset in read:
        runs.setdefault(attempt, []).append(seq)
        copies.setdefault(seq, []).append(f"{attempt}@{offset}")
    twice = sorted(seq for seq, where in copies.items() if len(where) > 1)
    spans = ", ".join(f"{a}: {s[0]}-{s[-1]} ({len(s)})" for a, s in runs.items())
    if not twice:
        return f"runs {spans}; no seq read twice"
    return (
        f"runs {spans}; {len(twice)} seqs read more than once ({twice[0]}-{twice[-1]}), "
        f"seq {twice[0]} as {copies[twice[0]]}"
    )


def test_exactly_once_source_rides_out_a_broker_kill_shorter_than_its_timeouts(
    kafka: KafkaBroker, unique_name: Callable[[str], str]
) -> None:
    records, watch, took, restarts, committed, runs = _eos_run(kafka, unique_name, 120_000)
    assert took < 100, f"the outage lasted {took:.0f} s: not shorter than the 120 s timeouts"
    seqs = [seq for seq, _ in records]
    assert seqs == list(range(20_000)), f"not every seq exactly once (read_committed): {runs}"
    assert committed == 20_000
    assert len({attempt for _, attempt in records}) == 1, "the task was restarted"
    assert restarts == 0
    assert "FAILED" not in watch.seen() and "RESTARTING" not in watch.seen(), watch.states
    assert watch.states[-1][1] == ("RUNNING",)
    assert watch.answers_during_outage() >= 5, (watch.outage, watch.unanswered)
    print(
        f"exactly-once, short outage: broker dead {took:.1f} s (timeouts 120 s); 20000 records "
        f"read_committed, 0 lost, 0 duplicated, one run of the task; states seen "
        f"{sorted(watch.seen())}; {watch.answers_during_outage()} REST answers during the outage"
    )


def test_exactly_once_source_restarts_itself_after_a_broker_kill_longer_than_its_timeouts(
    kafka: KafkaBroker, unique_name: Callable[[str], str]
) -> None:
    records, watch, took, restarts, committed, runs = _eos_run(kafka, unique_name, 6_000)
    assert took > 6, f"the outage lasted {took:.1f} s: not longer than the 6 s timeouts"
    seqs = [seq for seq, _ in records]
    assert seqs == list(range(20_000)), f"not every seq exactly once (read_committed): {runs}"
    assert committed == 20_000
    runs = list(dict.fromkeys(attempt for _, attempt in records))
    assert len(runs) >= 2, "no restart: the task's records come from one run"
    assert restarts >= 1
    assert "RESTARTING" in watch.seen() and "FAILED" not in watch.seen(), watch.states
    assert watch.states[-1][1] == ("RUNNING",)
    assert watch.answers_during_outage() >= 5, (watch.outage, watch.unanswered)
    resumed = [next(s for s, a in records if a == run) for run in runs[1:]]
    print(
        f"exactly-once, long outage: broker dead {took:.1f} s (timeouts 6 s); {restarts} "
        f"restart(s) in place, resumed at {resumed}; 20000 records read_committed, 0 lost, 0 "
        f"duplicated; states seen {sorted(watch.seen())}"
    )


def test_a_stalled_reader_names_the_undecided_transaction_it_waits_behind(
    kafka: KafkaBroker, unique_name: Callable[[str], str]
) -> None:
    """What a read_committed reader that stopped progressing adds to its error
    (:func:`connectrt.storage.undecided.undecided_note`): a transaction left open stands for a
    hanging one here (the broker's own way to leave one needs a kill at the wrong moment)."""
    bootstrap = kafka.bootstrap_servers
    topic = unique_name("undecided")
    create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(60)  # offset 0, its marker 1
    producer.begin_transaction()
    producer.produce(topic, b"open")
    assert producer.flush(60) == 0  # offset 2, no marker: the stable offset stays at 2
    admin = {"bootstrap.servers": bootstrap}

    note = undecided_note(admin, topic, {0: 2})
    assert "a transaction is undecided in partition 0 from offset 2 (high watermark 3)" in note
    assert (
        f"kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {topic} "
        "--partition 0 --start-offset 2"
    ) in note, note
    assert undecided_note(admin, topic, {0: 1}) == ""  # a reader not there yet: nothing to say
    # The reader that stalls there (the offsets store's, at a restart) says it in its error.
    log = TopicLog.for_clients(topic, bootstrap, None, None, None, lambda *_: None, timeout=60)
    log.start()
    try:
        with pytest.raises(ConnectError, match="undecided in partition 0 from offset 2") as stalled:
            log.read_to_end(3.0)
        assert "kafka-transactions.sh" in str(stalled.value)
    finally:
        log.stop()

    producer.commit_transaction(60)
    assert undecided_note(admin, topic, {0: 2}) == ""  # decided: the reader can go on
