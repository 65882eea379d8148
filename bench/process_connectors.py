"""A CPU-bound source for ``bench_processes.py`` (``bench.process_connectors.CpuBoundSource``).

Each task first emits one warm-up record (offset ``{"seq": 1}``), then waits until the file
``go.file`` exists, then emits ``records`` records of real per-record Python work
(``work.rounds`` rounds of an integer hash that holds the GIL, as parsing, validation or
enrichment in Python does), ``batch.size`` at a time, then idles. Source partition
``{"task": i}``; the bench reads the committed offsets to tell when a task's records are all
acknowledged (``seq == records + 1``). The go file, not an in-memory event, because the tasks
may run in other processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task


def busy_work(rounds: int, seed: int) -> int:
    """Pure-Python CPU work: an integer hash mixed ``rounds`` times."""
    h = seed
    for i in range(rounds):
        h = (h * 1103515245 + 12345 + i) & 0xFFFFFFFF
        h ^= h >> 13
    return h


class CpuBoundSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return CpuBoundSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def version(self) -> str:
        return "bench"


class CpuBoundSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.index = int(config["task.index"])
        self.topic = config["topic"]
        self.records = int(config["records"])
        self.batch = int(config.get("batch.size", "200"))
        self.rounds = int(config.get("work.rounds", "2000"))
        self.go_file = config["go.file"]
        self.partition = {"task": self.index}
        self.seq = 0
        self.go = False
        self._stopped = False

    def _record(self, seq: int, value: bytes) -> SourceRecord:
        return SourceRecord(
            self.partition, {"seq": seq + 1}, self.topic, self.index, None, None, None, value
        )

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped:
            return None
        if self.seq == 0:
            self.seq = 1
            return [self._record(0, b"warm-up")]
        if not self.go:
            self.go = os.path.exists(self.go_file)
            if not self.go:
                time.sleep(0.005)
                return None
        if self.seq > self.records:
            time.sleep(0.05)
            return None
        end = min(self.seq + self.batch, self.records + 1)
        out = [
            self._record(s, b"%d:%d" % (s, busy_work(self.rounds, s))) for s in range(self.seq, end)
        ]
        self.seq = end
        return out

    def stop(self) -> None:
        self._stopped = True
