"""Two standby-cluster workers running one FileStream pipeline, for the standby tests of
``task.executor=processes`` and ``=spark`` (``test_standby_task_processes.py``,
``test_standby_spark.py``); the workers themselves are ``test_standby_workers.py``'s.

:class:`Pair` holds the workers, the pipeline's files and topic and the lines appended so far;
:func:`filestream_configs` are its two connectors; :func:`running_pair` makes and runs one for a
test module's fixture. One thread (the test's) uses a Pair, except
:meth:`Pair.append`, which one appender thread may call while the test only reads ``lines``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.harness import create_topic
from tests.e2e.test_standby_workers import WAIT_S, Worker, _props, _role, _wait, running

__all__ = ["Pair", "filestream_configs", "running_pair"]


@dataclass
class Pair:
    """The two workers, the pipeline's files and topic, and how many lines were appended."""

    workers: list[Worker]
    source: Path
    sink: Path
    topic: str
    lines: int = 0

    def append(self, count: int) -> None:
        with self.source.open("a") as f:
            f.write("".join(f"line-{i:07d}\n" for i in range(self.lines, self.lines + count)))
        self.lines += count

    def complete(self) -> bool:
        """Whether the sink's file holds every line appended so far."""
        written = set(self.sink.read_text().splitlines()) if self.sink.exists() else set()
        return all(f"line-{i:07d}" in written for i in range(self.lines))

    def lost(self) -> set[str]:
        written = set(self.sink.read_text().splitlines()) if self.sink.exists() else set()
        return {f"line-{i:07d}" for i in range(self.lines)} - written

    def leader(self, ready_s: float = WAIT_S) -> Worker:
        """The one live worker whose /leader says it leads, once its herder is ready (waits up
        to ``ready_s`` for that)."""
        found: list[Worker] = []

        def one() -> bool:
            found[:] = [w for w in self.workers if w.alive and _role(w) == "leader"]
            return len(found) == 1

        _wait(one, "exactly one leader")
        leader = found[0]
        _wait(
            lambda: httpx.get(f"{leader.url}/health", timeout=5).status_code == 200,
            "the leader's herder ready",
            ready_s,
        )
        return leader


def filestream_configs(pair: Pair) -> list[dict[str, Any]]:
    """``src`` (the source file -> the topic) and ``sink`` (the topic -> the sink file)."""
    return [
        {
            "name": "src",
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(pair.source),
                "topic": pair.topic,
                "batch.size": "200",
            },
        },
        {
            "name": "sink",
            "config": {
                "connector.class": "FileStreamSink",
                "file": str(pair.sink),
                "topics": pair.topic,
            },
        },
    ]


def running_pair(
    broker: SessionBroker, tmp: Path, topic_prefix: str, edit_props: Callable[[str], str]
) -> Iterator[Pair]:
    """A module fixture's body: a :class:`Pair` of two standby workers, yielded while they run.

    Each worker's properties are ``test_standby_workers``' with ``edit_props`` applied to their
    text; the topic (``<topic_prefix>-<run>``, one partition) and an empty source file are
    made in ``tmp``. The workers are stopped afterwards and their log tails printed. Skipped
    on the embedded broker."""
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("standby workers need Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    run = uuid.uuid4().hex[:8]
    bootstrap = broker.bootstrap_servers
    topic = f"{topic_prefix}-{run}"
    create_topic(bootstrap, topic, partitions=1)
    workers = []
    for n in range(2):
        port = free_port()
        props = _props(tmp, bootstrap, run, port)
        props.write_text(edit_props(props.read_text()))
        workers.append(Worker(f"http://127.0.0.1:{port}", props, tmp / f"w{n}.log"))
    source, sink = tmp / "in.txt", tmp / "out.txt"
    source.write_text("")
    with running(workers):
        yield Pair(workers, source, sink, topic)
