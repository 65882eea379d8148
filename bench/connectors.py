"""Synthetic connectors used by the benchmarks (referenced by Python path in
``connector.class``, e.g. ``bench.connectors.PreSerializedSourceConnector``).

* :class:`PreSerializedSourceConnector`: each task emits ``records`` pre-serialized byte values
  (``record.bytes`` long, keys None) in batches of ``batch.size``, optionally rate limited by
  ``records.per.second``; then idles. The source partition map is one shared object and the
  offset maps are shared by a whole batch, so the task itself costs almost nothing. Each poll
  returns a list of fresh ``SourceRecord`` objects, as a task written for Kafka Connect's list
  does, or with ``batch.columns=true`` a ``SourceRecordBatch`` (the values as a column). With
  ``warmup.topic`` it first emits one warm-up record there and waits until the driving script
  sets its progress' ``warmed`` (the record was acknowledged: the producer is up).
* :class:`NoopSinkConnector`: ``put()`` only counts, and records the time of the first and of
  the ``expected``-th record (so group join time is excluded from measurements). It reads the
  batch as columns only: with ``read.values=true`` it sums the lengths of ``records.values``
  (as a consume loop reading each message's value would); with ``read.values=records`` it
  iterates the records instead, as a sink written for Kafka Connect's list does; with
  ``warmup.records`` it also records in ``WARMED`` when (and after how many records) the
  warm-up ended.

Progress is published in the module-level ``PROGRESS`` dict (keyed by the ``bench.id``
setting), since benchmarks run the worker in-process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

from connectrt.api import (
    ConfigDef,
    SinkConnector,
    SinkRecordBatch,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Task,
)


class Progress:
    """What a benchmark task reports to the driving script (single writer: the task)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.first: float | None = None
        self.last: float | None = None
        self.done = threading.Event()
        self.warmed = threading.Event()
        # The task thread's CPU time (time.thread_time): a source task's at the first timed poll
        # and at the poll after the last batch was handed over (it was sent by then); a no-op
        # sink's when its warm-up ended (WARMED) and at its expected record.
        self.cpu_first: float | None = None
        self.cpu_last: float | None = None


PROGRESS: dict[str, Progress] = {}


def progress(bench_id: str, expected: int = 0) -> Progress:
    p = PROGRESS.get(bench_id)
    if p is None:
        p = PROGRESS[bench_id] = Progress(expected)
    return p


def payloads(n: int, size: int) -> list[bytes]:
    """n distinct values of ``size`` bytes: random hex text (compresses about 2:1 with lz4,
    like typical text payloads, so neither side gets an unrealistically easy broker)."""
    return [os.urandom((size + 1) // 2).hex().encode()[:size] for _ in range(n)]


class BenchConnector:
    """The connector side every bench connector shares: its config handed to each task as is
    (plus ``task.index``), no config definition, nothing to stop."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return "bench"

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        self._props = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, "task.index": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass


class PreSerializedSourceConnector(BenchConnector, SourceConnector):
    def task_class(self) -> type[Task]:
        return PreSerializedSourceTask


class PreSerializedSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self._topic = config["topic"]
        self._remaining = int(config.get("records", "1000000"))
        self._batch = int(config.get("batch.size", "2000"))
        size = int(config.get("record.bytes", "100"))
        idx = config.get("task.index", "0")
        self._rate = float(config.get("records.per.second", "0"))
        self._columns = config.get("batch.columns", "false") == "true"
        self._progress = progress(f"{config.get('bench.id', 'source')}-{idx}", self._remaining)
        self._partition = {"task": idx}
        # Distinct pre-serialized values per slot; the batch list is rebuilt per poll from
        # these bytes (cheap) so each poll hands the runtime fresh SourceRecord objects.
        self._values = payloads(self._batch, size)
        self._sent = 0
        self._t0 = 0.0
        self._stopping = threading.Event()
        self._warmup_topic: str | None = config.get("warmup.topic") or None
        if self._warmup_topic is None:
            self._progress.warmed.set()

    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None:
        if self._warmup_topic is not None:
            topic, self._warmup_topic = self._warmup_topic, None
            return [SourceRecord({"warmup": "1"}, {"n": 0}, topic, None, None, None, None, b"w")]
        if not self._progress.warmed.is_set():
            self._progress.warmed.wait(0.05)
            return None
        if self._remaining <= 0:
            p = self._progress
            if not p.done.is_set():  # the last batch has been sent
                p.cpu_last = time.thread_time()
                p.last = time.perf_counter()
                p.done.set()
            self._stopping.wait(0.2)
            return None
        if self._rate > 0:
            if not self._t0:
                self._t0 = time.monotonic()
            ahead = self._sent / self._rate - (time.monotonic() - self._t0)
            if ahead > 0:
                self._stopping.wait(min(ahead, 0.5))
                return None
        n = min(self._batch, self._remaining)
        p = self._progress
        if p.first is None:
            p.first = time.perf_counter()
            p.cpu_first = time.thread_time()
        self._sent += n
        offset = {"n": self._sent}  # one offset map per batch: the runtime keeps the latest
        part = self._partition
        topic = self._topic
        records: list[SourceRecord] | SourceRecordBatch
        if self._columns:  # one batch of columns, no record objects
            records = SourceRecordBatch(part, [offset] * n, topic, self._values[:n])
        else:
            records = [
                SourceRecord(part, offset, topic, None, None, None, None, v)
                for v in self._values[:n]
            ]
        self._remaining -= n
        p.count += n
        return records

    def stop(self) -> None:
        self._stopping.set()


class NoopSinkConnector(BenchConnector, SinkConnector):
    def task_class(self) -> type[Task]:
        return NoopSinkTask


WARMED: dict[str, tuple[int, float]] = {}
"""bench id -> (records received, perf_counter()) when a no-op sink's warm-up ended."""


class NoopSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        idx = config.get("task.index", "0")
        self._id = f"{config.get('bench.id', 'sink')}-{idx}"
        self._progress = progress(self._id, int(config.get("expected", "0")))
        self._read_values = config.get("read.values") == "true"
        self._read_records = config.get("read.values") == "records"
        self._warmup = int(config.get("warmup.records", "0"))
        self.bytes_read = 0

    def put(self, records: SinkRecordBatch) -> None:
        if not records:
            return
        p = self._progress
        if p.first is None:
            p.first = time.perf_counter()
        if self._read_values:
            self.bytes_read += sum(map(len, records.values))
        elif self._read_records:  # as a sink written for Kafka Connect's list does
            self.bytes_read += sum(len(r.value) for r in records)
        p.count += len(records)
        if self._warmup and p.count >= self._warmup and self._id not in WARMED:
            WARMED[self._id] = (p.count, time.perf_counter())
            p.cpu_first = time.thread_time()
        if p.expected and p.count >= p.expected and not p.done.is_set():
            p.cpu_last = time.thread_time()
            p.last = time.perf_counter()
            p.done.set()

    def stop(self) -> None:
        pass
