"""Driver -> executor task signals (pause, resume, stop) through a Kafka topic.

Why a topic of its own: a task on an executor has no channel back from the driver while it
runs (Spark offers none for a running task), and a job cancel is a hard kill without a final
commit. The executors already talk to Kafka, so the driver writes one small JSON record per
signal and every running task tails the topic. The control topic is for operators' events to
the herder (and is optional); the config topic carries no per-launch stop or restart. One
partition, compacted: the latest record per key is the task's current signal, which is also
what a task that Spark re-runs reads first (so a retried attempt of a paused task starts
paused, and one of a stopped task exits at once).

Record: key ``<connector>/<task>``, value
``{"run": "<driver run id>", "generation": 7, "target": "PAUSED", "stop": false}``.
A task applies only records with its own run id and generation (its launch); records of older
launches of the same task are ignored.

Reading never uses ListOffsets (wrong on the embedded broker): :class:`TopicLog` replays to
partition EOF, then reads on to the fetch high watermark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.status import TargetState
from connectrt.spark.topic_logs import LogTail, spark_topic_log

__all__ = ["Signal", "SignalWatcher", "SignalWriter", "signal_key"]

log = logging.getLogger(__name__)


def signal_key(connector: str, task: int) -> bytes:
    return f"{connector}/{task}".encode()


@dataclass(frozen=True)
class Signal:
    run: str
    generation: int
    target: TargetState
    stop: bool = False

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "run": self.run,
                "generation": self.generation,
                "target": self.target.value,
                "stop": self.stop,
            }
        )

    @classmethod
    def decode(cls, value: bytes) -> Signal | None:
        try:
            doc: Any = orjson.loads(value)
            return cls(
                str(doc["run"]),
                int(doc["generation"]),
                TargetState(doc["target"]),
                bool(doc["stop"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.warning("Ignoring malformed task signal %.200r", value)
            return None


class SignalWriter:
    """The driver's side: ``send`` writes a signal and waits for the broker's acknowledgement
    (so a task started afterwards reads it). Thread-safe; ``start`` creates the topic."""

    def __init__(self, wc: WorkerConfig, topic: str) -> None:
        self._log = spark_topic_log(wc, topic, "spark-signals", lambda *record: None)

    @property
    def topic(self) -> str:
        return self._log.topic

    def start(self) -> None:
        self._log.start()

    def stop(self) -> None:
        self._log.stop()

    def send(self, connector: str, task: int, signal: Signal) -> None:
        self._log.send_and_wait([(signal_key(connector, task), signal.encode())])


class SignalWatcher:
    """The executor's side, for one task launch: replays the topic, then tails it on a thread
    of its own and calls ``on_signal`` (on that thread) for each signal of this launch.

    ``start`` returns the latest signal of this launch already in the topic (or None), before
    the task starts. ``stop`` ends the thread and closes the consumer.
    """

    def __init__(
        self,
        wc: WorkerConfig,
        topic: str,
        connector: str,
        task: int,
        run: str,
        generation: int,
        on_signal: Callable[[Signal], None],
    ) -> None:
        self._key = signal_key(connector, task)
        self._run = run
        self._generation = generation
        self._on_signal = on_signal
        self._latest: Signal | None = None
        topic_log = spark_topic_log(wc, topic, f"spark-signals-{connector}-{task}", self._on_record)
        self._tail = LogTail(topic_log, f"signals-{connector}-{task}", "task signals")

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        if key != self._key or value is None:
            return
        signal = Signal.decode(value)
        if signal is None or signal.run != self._run or signal.generation != self._generation:
            return
        self._latest = signal
        if self._tail.live:
            self._on_signal(signal)

    def start(self) -> Signal | None:
        self._tail.start()
        return self._latest

    def stop(self) -> None:
        self._tail.stop()
