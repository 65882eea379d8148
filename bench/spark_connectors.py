"""A benchmark source for tasks that run in other processes (Spark executors).

:class:`TimedSourceConnector` is ``bench.connectors.PreSerializedSourceConnector`` (each task
emits ``records`` pre-serialized values, then idles) with a warm-up record, a start barrier and
timing files, so that tasks in other processes are measured in steady state while all of them
run:

* a started task first returns one warm-up record; once the runtime has called
  ``SourceTask.commit()`` after it (the runtime commits only after flushing the producer, so
  the record is acknowledged: the producer has its id and a connection), the task writes
  ``<timing.dir>/<bench.id>-<task>.ready`` and polls nothing until the benchmark creates
  ``<bench.id>.go``;
* then it writes ``<bench.id>-<task>.json`` with the wall-clock time of its first timed poll
  and of the first offset commit after its last record (every record acknowledged).
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
        self._ready_file = base + ".ready"
        self._timing_file = base + ".json"
        self._go_file = os.path.join(config["timing.dir"], f"{bench_id}.go")
        self._warm_sent = False
        self._ready = False
        self._first_wall: float | None = None
        self._reported = False

    def poll(self) -> list[SourceRecord] | None:
        if not self._warm_sent:
            self._warm_sent = True
            return [
                SourceRecord({"warmup": "1"}, {"n": 0}, self._topic, None, None, None, None, b"w")
            ]
        if self._first_wall is None:
            if not self._ready or not os.path.exists(self._go_file):
                time.sleep(0.005)
                return None
            self._first_wall = time.time()
        return super().poll()

    def commit(self) -> None:
        if not self._ready:
            self._ready = True  # the warm-up record is acknowledged
            _write(self._ready_file, {"ready": time.time()})
            return
        if self._reported or self._remaining > 0 or self._first_wall is None:
            return
        self._reported = True
        _write(
            self._timing_file,
            {"first": self._first_wall, "done": time.time(), "records": self._records},
        )


def _write(path: str, doc: dict[str, float]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
