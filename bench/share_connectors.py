"""The slow sink of ``bench_share_group.py``: ``put()`` sleeps ``per.record.ms`` per record (a
destination that answers each record in that time, as an HTTP API or a database round trip
does; the sleep releases the GIL, so tasks on threads overlap as they would waiting on I/O),
then counts the batch in the module-level ``WRITTEN`` (keyed by ``bench.id``) and, per task,
in ``PER_TASK``. The bench runs the worker in-process and reads both."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping

from connectrt.api import ConfigDef, ConfigType, SinkConnector, SinkRecordBatch, SinkTask, Task

WRITTEN: Counter[str] = Counter()
PER_TASK: Counter[tuple[str, int]] = Counter()
_LOCK = threading.Lock()

CONFIG = (
    ConfigDef()
    .define("bench.id", ConfigType.STRING, "", documentation="Key of the counters.")
    .define("per.record.ms", ConfigType.DOUBLE, 1.0, documentation="Time per record.")
)


class SlowSink(SinkConnector):
    def config_def(self) -> ConfigDef:
        return CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return SlowSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.index": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass


class SlowSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG.parse(config)
        self.key = cfg["bench.id"]
        self.index = int(config.get("task.index", "0"))
        self.delay = cfg["per.record.ms"] / 1000

    def put(self, records: SinkRecordBatch) -> None:  # type: ignore[override]
        n = len(records)
        if not n:
            return
        time.sleep(self.delay * n)
        with _LOCK:
            WRITTEN[self.key] += n
            PER_TASK[(self.key, self.index)] += n

    def stop(self) -> None:
        pass
