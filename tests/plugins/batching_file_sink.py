"""A BatchingSinkTask that appends each batch to a file as JSON lines, with failure switches.

Each line is ``{"p": partition, "o": offset, "v": value}``; a batch is written and fsynced
before ``write`` returns. Switches (connector config):

* ``write.delay.ms``: each write takes this much longer (a slow destination);
* ``fail.retriable.every``: every n-th write that ``put`` starts raises RetriableError instead
  of writing (writes that ``flush`` starts never do: a failed flush makes the runtime rewind to
  the committed offsets, which redelivers records already written - duplicates that
  at-least-once allows, and not what this switch is for);
* ``fail.fatal.after``: the first write that would take the file past this many lines raises
  ConnectError (the task fails) - once per file, so a restarted task goes on.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from connectrt.api import (
    BatchingSinkTask,
    ConfigDef,
    ConfigType,
    ConnectError,
    Importance,
    RetriableError,
    SinkConnector,
    SinkRecord,
    Task,
    TopicPartition,
)

CONFIG = (
    ConfigDef()
    .define("file", ConfigType.STRING, importance=Importance.HIGH, documentation="Output file.")
    .define("batch.size", ConfigType.INT, 100, importance=Importance.LOW, documentation="Batch.")
    .define("write.delay.ms", ConfigType.INT, 0, documentation="Test switch.")
    .define("fail.retriable.every", ConfigType.INT, 0, documentation="Test switch.")
    .define("fail.fatal.after", ConfigType.INT, 0, documentation="Test switch.")
)

_FAILED_ONCE: set[str] = set()
_LOCK = threading.Lock()


class BatchingFileSink(SinkConnector):
    def config_def(self) -> ConfigDef:
        return CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return BatchingFileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class BatchingFileSinkTask(BatchingSinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG.parse(config)
        self.path = Path(cfg["file"])
        self.batch_size = cfg["batch.size"]
        self.delay_s = cfg["write.delay.ms"] / 1000
        self.retriable_every = cfg["fail.retriable.every"]
        self.fatal_after = cfg["fail.fatal.after"]
        self.writes = 0
        self._flushing = False

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._flushing = True
        try:
            super().flush(offsets)
        finally:
            self._flushing = False

    def write(self, batch: list[SinkRecord]) -> None:
        self.writes += 1
        time.sleep(self.delay_s)
        failing = self.retriable_every and not self._flushing
        if failing and self.writes % self.retriable_every == 0:
            self.context.timeout(20)
            raise RetriableError(f"write {self.writes}: destination busy")
        lines = "".join(
            json.dumps({"p": r.kafka_partition, "o": r.kafka_offset, "v": r.value}) + "\n"
            for r in batch
        )
        with _LOCK:
            if self.fatal_after and str(self.path) not in _FAILED_ONCE:
                present = self.path.read_text().count("\n") if self.path.exists() else 0
                if present + len(batch) > self.fatal_after:
                    _FAILED_ONCE.add(str(self.path))
                    raise ConnectError("destination rejected the batch")
            with self.path.open("a", encoding="utf-8") as f:
                f.write(lines)
                f.flush()
                os.fsync(f.fileno())
