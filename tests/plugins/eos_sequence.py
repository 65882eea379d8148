"""Test plugins for exactly-once source support (KIP-618).

:class:`EosSequenceSource` declares exactly-once support and connector-defined transaction
boundaries. Each task emits numbered records: value ``"<task>:<seq>:<attempt>"``
(StringConverter), header ``attempt`` with the same per-start id (a fresh uuid every time the
task starts, so a test can tell the records of one run of the task from another's), source
partition ``{"task": t}``, offset ``{"seq": seq + 1}``. It resumes from the committed offset.

Configs: ``topic``, ``tasks.max``, ``batch.size`` (default 50), ``batch.interval.ms`` (20),
``records.per.task`` (0: endless), and for ``transaction.boundary=connector``
``commit.every`` (commit_transaction(record) on every record whose seq+1 is a multiple) and
``abort.seqs`` (comma list: abort_transaction(record) at these seqs, first run only).

Faults on a chosen Spark attempt (``crash.spark.attempt``, default 0; outside Spark the attempt
is always 0):

* ``crash.at`` (a seq): the batches stop just before it; then with ``crash.mode=poll`` (the
  default) the next ``poll()`` ends the process with ``os._exit`` (no final commit, no status,
  an open transaction left to the broker) once the broker holds what the runtime already sent
  (with ``crash.bootstrap``: the partition's end offset still for half a second, at most 30 s,
  so that producer lag on a loaded machine does not move where the open transaction ends),
  and with ``crash.mode=sending`` that ``poll()`` returns a batch of ``crash.batch.size``
  records (default 20000) and a thread ends the process as soon as the broker holds one of
  them (the partition's end offset moved past where it was; ``crash.bootstrap`` names the
  broker), while the runtime is still producing the rest, so before their offset is written
  into the transaction (sending 20000 records takes 50 ms or more, watching the end offset
  about a millisecond per request);
* ``hold.at`` (a seq) with ``hold.dir``: ``poll()`` writes ``<hold.dir>/held-<task>`` and
  blocks until ``<hold.dir>/release-<task>`` exists (at most 5 minutes, or until the task is
  stopped), so that a test can act while the task sits in ``poll()``, committing nothing.

:class:`UnsupportedEosSource` says UNSUPPORTED to both questions (validation tests).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from connectrt.api import (
    ConfigDef,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    Header,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connectrt.spark import task_attempt


class EosSequenceSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return EosSequenceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        return ExactlyOnceSupport.SUPPORTED

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> str:
        return ConnectorTransactionBoundaries.SUPPORTED


class UnsupportedEosSource(EosSequenceSource):
    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        return ExactlyOnceSupport.UNSUPPORTED

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> str:
        return ConnectorTransactionBoundaries.UNSUPPORTED


class EosSequenceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.index = int(config["task.index"])
        self.topic = config["topic"]
        self.batch = int(config.get("batch.size", "50"))
        self.interval = int(config.get("batch.interval.ms", "20")) / 1000.0
        self.limit = int(config.get("records.per.task", "0"))
        self.commit_every = int(config.get("commit.every", "0"))
        self.attempt = uuid.uuid4().hex[:12]
        self.partition = {"task": self.index}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.seq = int(stored["seq"]) if stored else 0
        self.first_run = stored is None
        aborts = config.get("abort.seqs", "")
        self.abort_seqs = {int(s) for s in aborts.split(",") if s.strip()}
        self._stopped = False
        faulty = task_attempt() == int(config.get("crash.spark.attempt", "0"))
        self.crash_at = int(config.get("crash.at", "-1")) if faulty else -1
        self.crash_mode = config.get("crash.mode", "poll")
        self.crash_batch = int(config.get("crash.batch.size", "20000"))
        self.watch: Consumer | None = None
        if self.crash_at >= 0 and "crash.bootstrap" in config:
            self.watch = Consumer(
                {
                    "bootstrap.servers": config["crash.bootstrap"],
                    "group.id": "eos-crash-watch",
                    "isolation.level": "read_uncommitted",  # the open transaction's end
                }
            )
        self.hold_at = int(config.get("hold.at", "-1")) if faulty else -1
        self.hold_dir = Path(config.get("hold.dir", "."))

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped:
            return None
        if self.seq == self.hold_at:
            self._hold()
        time.sleep(self.interval)
        end = self.seq + self.batch
        if self.limit:
            end = min(end, self.limit)
        for fault in (self.crash_at, self.hold_at):
            if self.seq < fault < end:
                end = fault  # the batch stops just before the fault
        if self.seq == self.crash_at:
            if self.crash_mode != "sending":
                self._settle()
                os._exit(3)  # the process dies at once: no final commit, no status
            end = self.seq + self.crash_batch
        if end <= self.seq:
            return None
        records = []
        txn = self.context.transaction_context
        for s in range(self.seq, end):
            record = SourceRecord(
                self.partition,
                {"seq": s + 1},
                self.topic,
                None,
                None,
                None,
                None,
                f"{self.index}:{s}:{self.attempt}",
                headers=[Header("attempt", self.attempt)],
            )
            records.append(record)
            if txn is not None:
                if self.first_run and s in self.abort_seqs:
                    txn.abort_transaction(record)
                elif self.commit_every and (s + 1) % self.commit_every == 0:
                    txn.commit_transaction(record)
        if self.seq == self.crash_at:  # crash.mode=sending: die while they are being sent
            threading.Thread(target=self._exit_once_stored, args=(self._end(),)).start()
        self.seq = end
        return records

    def _end(self) -> int:
        """The partition's end offset (ListOffsets LATEST: on the embedded broker the base
        offset of the last batch + 1, which still moves with every batch stored)."""
        assert self.watch is not None
        tp = TopicPartition(self.topic, 0)
        return int(self.watch.get_watermark_offsets(tp, timeout=10, cached=False)[1])

    def _settle(self) -> None:
        """Wait (with ``crash.bootstrap``) until the partition's end offset has not moved for
        half a second: the batches already handed to the runtime's producer are stored."""
        if self.watch is None:
            return
        deadline = time.monotonic() + 30
        last, since = self._end(), time.monotonic()
        while time.monotonic() - since < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
            end = self._end()
            if end != last:
                last, since = end, time.monotonic()

    def _exit_once_stored(self, end: int) -> None:
        deadline = time.monotonic() + 10
        while self._end() <= end and time.monotonic() < deadline:
            pass
        os._exit(3)  # the process dies at once: no final commit, no status

    def _hold(self) -> None:
        self.hold_at = -1
        (self.hold_dir / f"held-{self.index}").write_text(self.attempt)
        release = self.hold_dir / f"release-{self.index}"
        deadline = time.monotonic() + 300
        while not release.exists() and not self._stopped and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stopped = True
