"""kill -9 of a standalone worker mid-stream, then restart: nothing lost, duplicates bounded.

The worker runs as a real subprocess (``connectrt standalone``) on the session's broker with a
FileStreamSource -> topic -> FileStreamSink pipeline. It is killed with SIGKILL while records
flow. At that moment we measure what was committed (the source offset in the offsets topic,
the sink's consumer-group offsets) against what had reached Kafka and the output file. The
at-least-once guarantee says:

* committed source position <= records in the topic, and committed sink offsets <= lines in the
  output file (offsets are committed only after the data is safe);
* after a restart every input line reaches the output (no loss);
* duplicates <= what was written after the last commits (the uncommitted interval).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LINES = 300_000
PARTITIONS = 3


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _start_worker(tmp: Path, log_name: str) -> subprocess.Popen[bytes]:
    with (tmp / log_name).open("wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "connectrt.cli",
                "--log-level",
                "WARNING",
                "standalone",
                str(tmp / "worker.properties"),
                str(tmp / "source.properties"),
                str(tmp / "sink.properties"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _sink_committed(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "connect-sink"})
    try:
        committed = consumer.committed(
            [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in committed)


def _append_slowly(path: Path, lines: list[str], stop: threading.Event) -> None:
    """Grow the input file at ~50k lines/s so the kill lands among several commits."""
    with path.open("a") as f:
        for i in range(0, len(lines), 1000):
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
    )
    (tmp_path / "source.properties").write_text(
        f"name=src\nconnector.class=FileStreamSource\nfile={src}\ntopic={topic}\nbatch.size=500\n"
    )
    (tmp_path / "sink.properties").write_text(
        f"name=sink\nconnector.class=FileStreamSink\nfile={dst}\ntopics={topic}\n"
    )

    stop_writer = threading.Event()
    writer = threading.Thread(target=_append_slowly, args=(src, expected, stop_writer))
    writer.start()
    try:
        _kill_restart_and_check(bootstrap, topic, offsets_topic, tmp_path, expected)
    except BaseException:
        stop_writer.set()  # a failed test does not leave the writer appending
        raise
    finally:
        writer.join(60)


def _kill_restart_and_check(
    bootstrap: str, topic: str, offsets_topic: str, tmp_path: Path, expected: list[str]
) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    worker = _start_worker(tmp_path, "worker-1.log")
    try:
        # Kill once the sink has committed at least once and the stream is well under way.
        _wait(
            lambda: _count(dst) >= LINES // 3 and _sink_committed(bootstrap, topic) > 0,
            120,
            "a third of the lines and a sink commit",
            worker,
        )
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    # -- what was committed at the moment of the kill --------------------------------------
    in_topic_at_kill = sum(len(v) for v in read_topic(bootstrap, topic).values())
    output_at_kill = _count(dst)
    assert 0 < output_at_kill < LINES, "the kill did not happen mid-stream"

    store = KafkaOffsetStore(offsets_topic, bootstrap_servers=bootstrap, partitions=5)
    store.start()
    try:
        raw = store.get([encode_key("src", {"filename": str(src)})])
    finally:
        store.stop()
    offset = decode_value(next(iter(raw.values())))
    assert offset is not None, "the source committed no offset before the kill"
    source_committed = src.read_bytes()[: offset["position"]].count(b"\n")

    sink_committed = _sink_committed(bootstrap, topic)

    # Offsets were committed only after the data was safe.
    source_uncommitted = in_topic_at_kill - source_committed
    sink_uncommitted = output_at_kill - sink_committed
    assert source_uncommitted >= 0, "source offset committed beyond what Kafka acknowledged"
    assert sink_uncommitted >= 0, "sink offsets committed beyond what was written"

    # -- restart and finish (the writer keeps appending meanwhile) ---------------------------
    worker = _start_worker(tmp_path, "worker-2.log")
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
    in_topic = sum(len(v) for v in read_topic(bootstrap, topic).values())
    source_duplicates = in_topic - LINES
    duplicates = len(written) - LINES
    print(
        f"\nkill -9 at {output_at_kill} output lines: source uncommitted {source_uncommitted}, "
        f"sink uncommitted {sink_uncommitted}; duplicates: topic {source_duplicates}, "
        f"output {duplicates}"
    )
    assert 0 <= source_duplicates <= source_uncommitted
    assert 0 <= duplicates <= source_uncommitted + sink_uncommitted
