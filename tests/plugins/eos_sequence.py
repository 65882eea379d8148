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

:class:`UnsupportedEosSource` says UNSUPPORTED to both questions (validation tests).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

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

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped:
            return None
        time.sleep(self.interval)
        end = self.seq + self.batch
        if self.limit:
            end = min(end, self.limit)
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
        self.seq = end
        return records

    def stop(self) -> None:
        self._stopped = True
