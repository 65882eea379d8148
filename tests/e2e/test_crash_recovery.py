"""kill -9 of a standalone worker mid-stream, then restart: nothing lost, duplicates bounded.

The worker runs as a real subprocess (``connectrt standalone``) on the session's broker with a
FileStreamSource -> topic -> FileStreamSink pipeline. It is killed with SIGKILL while records
flow. At that moment we read what was committed (the source offset in the offsets topic, the
sink's consumer-group offsets per partition) and compare it with what had reached Kafka and the
output file. The at-least-once guarantee says:

* offsets are committed only after the data is safe: every input line before the committed
  source position is in the topic, and every record before a partition's committed sink offset
  is in the output file;
* after a restart every input line reaches the output (no loss);
* duplicates come only from after the commits: the restarted source produces no line before
  its committed position (so the topic's duplicates are at most the uncommitted lines), and
  every line the sink writes after the kill comes from a record at or after the committed
  offset of its partition at the kill. The sink's bound holds under any rebalance after the
  restart (each resumes at offsets committed later still), and fails if the restart does not
  resume from the commits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.offset_codec import decode_value, encode_key
from connectrt.testing.harness import create_topic, read_topic
from tests.e2e.standalone import start_standalone

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.smoke]

LINES = 300_000
PARTITIONS = 3


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _sink_committed(bootstrap: str, topic: str) -> dict[int, int]:
    """The sink's committed offset per partition (0 where it committed none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"connect-{_sink(topic)}"})
    try:
        committed = consumer.committed(
            [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in committed}


def _sink(topic: str) -> str:
    """The sink connector's name (its consumer group is ``connect-<name>``): unique per run."""
    return f"sink-{topic}"


def _values(records: dict[int, list[tuple[bytes | None, bytes | None]]]) -> dict[int, list[str]]:
    return {p: [(v or b"").decode() for _, v in rs] for p, rs in records.items()}


def _line_number(value: str) -> int:
    return int(value.removeprefix("line-"))


HELD_AT = LINES * 2 // 5
"""The writer holds here until the test is about to kill, so the kill is always mid-stream."""


def _append_slowly(
    path: Path, lines: list[str], stop: threading.Event, go_on: threading.Event
) -> None:
    """Grow the input file at ~50k lines/s so the kill lands among several commits. After
    ``HELD_AT`` lines it waits for ``go_on``: the pipeline can be faster than the first sink
    commit on a busy machine, and without the hold the whole file was through before the kill
    (seen once in a full run)."""
    with path.open("a") as f:
        for i in range(0, len(lines), 1000):
            if i == HELD_AT:
                go_on.wait(300)
            if stop.is_set():
                return
            f.write("".join(x + "\n" for x in lines[i : i + 1000]))
            f.flush()
            time.sleep(0.02)


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None):
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_kill_9_mid_stream_loses_nothing_and_bounds_duplicates(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    bootstrap = broker.bootstrap_servers
    topic, offsets_topic = unique_name("crash"), unique_name("crash-offsets")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"line-{i:07d}" for i in range(LINES)]
    src.touch()
    (tmp_path / "worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"offset.storage.topic={offsets_topic}\n"
        "offset.storage.partitions=5\n"
        "offset.flush.interval.ms=1000\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        "listeners=http://127.0.0.1:0\n"
        f"file.connectors.allowed.dirs={tempfile.gettempdir()}\n"
        "plugin.packages=tests\n"
    )
    (tmp_path / "source.properties").write_text(
        f"name=src\nconnector.class=FileStreamSource\nfile={src}\ntopic={topic}\nbatch.size=500\n"
    )
    (tmp_path / "sink.properties").write_text(
        f"name={_sink(topic)}\nconnector.class=FileStreamSink\nfile={dst}\ntopics={topic}\n"
    )

    stop_writer, go_on = threading.Event(), threading.Event()
    writer = threading.Thread(target=_append_slowly, args=(src, expected, stop_writer, go_on))
    writer.start()
    try:
        _kill_restart_and_check(bootstrap, topic, offsets_topic, tmp_path, expected, go_on)
    except BaseException:
        stop_writer.set()  # a failed test does not leave the writer appending
        go_on.set()
        raise
    finally:
        writer.join(60)


def _kill_restart_and_check(
    bootstrap: str,
    topic: str,
    offsets_topic: str,
    tmp_path: Path,
    expected: list[str],
    go_on: threading.Event,
) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    worker = start_standalone(tmp_path, "worker-1.log", ("source.properties", "sink.properties"))
    try:
        # Kill once the sink has committed at least once and the stream is well under way.
        _wait(
            lambda: (
                _count(dst) >= LINES // 3 and sum(_sink_committed(bootstrap, topic).values()) > 0
            ),
            120,
            "a third of the lines and a sink commit",
            worker,
        )
        go_on.set()  # the writer appends the rest: lines are flowing when the kill lands
        time.sleep(0.5)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        go_on.set()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    # -- what was committed at the moment of the kill --------------------------------------
    at_kill = _values(read_topic(bootstrap, topic))
    in_topic_at_kill = sum(map(len, at_kill.values()))
    output_at_kill = _count(dst)
    assert 0 < output_at_kill < LINES, "the kill did not happen mid-stream"
    written_at_kill = set(_lines(dst)[:output_at_kill])

    store = KafkaOffsetStore(offsets_topic, bootstrap_servers=bootstrap, partitions=5)
    store.start()
    try:
        raw = store.get([encode_key("src", {"filename": str(src)})])
    finally:
        store.stop()
    offset = decode_value(next(iter(raw.values())))
    assert offset is not None, "the source committed no offset before the kill"
    source_committed = src.read_bytes()[: offset["position"]].count(b"\n")
    sink_committed = _sink_committed(bootstrap, topic)  # final: the worker is dead

    # Offsets were committed only after the data was safe.
    produced = {v for values in at_kill.values() for v in values}
    unacknowledged = [x for x in expected[:source_committed] if x not in produced]
    assert unacknowledged == [], "source offset committed beyond what Kafka acknowledged"
    for p, end in sink_committed.items():
        assert end <= len(at_kill[p]), f"partition {p}: sink committed beyond the topic"
        unwritten = [v for v in at_kill[p][:end] if v not in written_at_kill]
        assert unwritten == [], f"partition {p}: sink offsets committed beyond what was written"
    source_uncommitted = in_topic_at_kill - source_committed
    sink_uncommitted = output_at_kill - sum(sink_committed.values())

    # -- restart and finish (the writer keeps appending meanwhile) ---------------------------
    worker = start_standalone(tmp_path, "worker-2.log", ("source.properties", "sink.properties"))
    try:
        _wait(
            lambda: _count(dst) >= LINES and len(set(_lines(dst))) >= LINES,
            180,
            "every line after restart",
            worker,
        )
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    written = _lines(dst)
    assert set(written) == set(expected), "lines lost or corrupted"
    final = _values(read_topic(bootstrap, topic))
    in_topic = sum(map(len, final.values()))

    # The source resumed at its committed position: nothing before it was produced again.
    produced_again = [v for p, values in final.items() for v in values[len(at_kill[p]) :]]
    early = [v for v in produced_again if _line_number(v) < source_committed]
    assert early == [], f"produced again before the committed source position {source_committed}"
    source_duplicates = in_topic - LINES
    assert 0 <= source_duplicates <= source_uncommitted

    # The sink resumed at its committed offsets: every line written after the kill comes from
    # a record at or after them (a line the source produced twice counts if either copy is).
    resumable = {v for p, values in final.items() for v in values[sink_committed.get(p, 0) :]}
    early = [v for v in written[output_at_kill:] if v not in resumable]
    assert early == [], f"written again from before the committed sink offsets {sink_committed}"
    duplicates = len(written) - LINES
    print(
        f"\nkill -9 at {output_at_kill} output lines: source uncommitted {source_uncommitted}, "
        f"sink uncommitted {sink_uncommitted}; duplicates: topic {source_duplicates}, "
        f"output {duplicates} ({len(written) - output_at_kill} lines written after the kill)"
    )
