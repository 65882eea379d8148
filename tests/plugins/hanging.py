"""Test connectors whose task gets stuck inside one call, for stall detection.

* :class:`HangingSink`: ``tasks.max`` tasks; the task whose index is ``hang.task`` blocks in
  ``put()`` (with records) until :data:`RELEASE` is set or, in a task of another process (a
  Spark executor), until the file ``release.file`` exists; the others accept records. Every
  ``start()`` is counted in :data:`STARTS` per ``store.id``, so a test sees restarts, and each
  task's current partitions are kept in :data:`ASSIGNED`.
* :class:`HangingSource`: with ``hang=true`` its task blocks in ``poll()`` until :data:`RELEASE`
  is set; otherwise it is idle (``poll()`` returns None after 0.1 s).

Tests set :data:`RELEASE` in teardown so no thread stays blocked.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Collection, Mapping

from connectrt.api import (
    ConfigDef,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
)

RELEASE = threading.Event()
"""Set it to let every blocked call return."""

STARTS: Counter[str] = Counter()
"""``store.id`` -> task starts so far (restarts included)."""

PUT: Counter[str] = Counter()
"""``store.id`` -> records accepted by the tasks that do not hang."""

ASSIGNED: dict[tuple[str, str], set[object]] = {}
"""``(store.id, task.index)`` -> the partitions the task holds now (``open`` minus ``close``)."""

LOCK = threading.Lock()


class HangingSink(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return HangingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class HangingSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.store = config["store.id"]
        self.hangs = config.get("hang.task", "-1") == config["task.index"]
        self.release_file = config.get("release.file")
        self.index = config["task.index"]
        with LOCK:
            STARTS[self.store] += 1

    def open(self, partitions: Collection[TopicPartition]) -> None:
        with LOCK:
            ASSIGNED.setdefault((self.store, self.index), set()).update(partitions)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        with LOCK:
            ASSIGNED.setdefault((self.store, self.index), set()).difference_update(partitions)

    def put(self, records: list[SinkRecord]) -> None:
        if records and self.hangs:
            while not RELEASE.wait(0.1):
                if self.release_file is not None and os.path.exists(self.release_file):
                    break
        with LOCK:
            PUT[self.store] += len(records)

    def stop(self) -> None:
        pass


class HangingSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return HangingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class HangingSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.hangs = config.get("hang") == "true"
        with LOCK:
            STARTS[config["store.id"]] += 1

    def poll(self) -> list[SourceRecord] | None:
        if self.hangs:
            RELEASE.wait()  # stop() does not wake it: stuck for good
        else:
            RELEASE.wait(0.1)
        return None

    def stop(self) -> None:
        pass
