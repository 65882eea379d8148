"""A benchmark source for tasks that run in other processes (Spark executors).

:class:`TimedSourceConnector` is ``bench.connectors.PreSerializedSourceConnector`` (each task
emits ``records`` pre-serialized values, then idles) with a start barrier and timing files, so
that tasks in other processes are measured while all of them run:

* a started task writes ``<timing.dir>/<bench.id>-<task>.ready`` and polls nothing until the
  benchmark creates ``<bench.id>.go``;
* then it writes ``<bench.id>-<task>.json`` with the wall-clock time it began producing and
  of the first offset commit after its last record: the runtime calls ``SourceTask.commit()``
  only after flushing the producer, so at that moment every record is acknowledged by Kafka.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from bench.connectors import PreSerializedSourceConnector, PreSerializedSourceTask
from connectrt.api import SourceRecord, Task


class TimedSourceConnector(PreSerializedSourceConnector):
    def task_class(self) -> type[Task]:
        return TimedSourceTask


class TimedSourceTask(PreSerializedSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self._records = int(config.get("records", "1000000"))
        bench_id = config.get("bench.id", "source")
        base = os.path.join(config["timing.dir"], f"{bench_id}-{config.get('task.index', '0')}")
        self._timing_file = base + ".json"
        self._go_file = os.path.join(config["timing.dir"], f"{bench_id}.go")
        with open(base + ".ready", "w", encoding="utf-8"):
            pass
        self._first_wall: float | None = None
        self._reported = False

    def poll(self) -> list[SourceRecord] | None:
        if self._first_wall is None:
            if not os.path.exists(self._go_file):
                time.sleep(0.005)
                return None
            self._first_wall = time.time()
        return super().poll()

    def commit(self) -> None:
        if self._reported or self._remaining > 0 or self._first_wall is None:
            return
        self._reported = True
        doc = {"first": self._first_wall, "done": time.time(), "records": self._records}
        tmp = self._timing_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, self._timing_file)
