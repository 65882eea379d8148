"""Test plugins for tasks that run in other processes (Spark executors): a source of numbered
records and a sink writing them to files, both able to crash on a chosen Spark attempt.

Source values are ``"<task>:<seq>:<attempt>:<tag>"`` (StringConverter), source partition
``{"task": t}``, offset ``{"seq": next}``. The sink appends each value as a line to
``<dir>/<connector>-<task>-a<attempt>-<pid>.txt`` and a ``#flush`` line whenever the runtime
flushes before committing consumer offsets and a ``#close`` line when partitions are revoked or
lost, so a test can tell what was committed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from typing import IO

from connectrt.api import (
    ConfigDef,
    ConnectError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
)
from connectrt.spark import task_attempt


class SequenceSource(SourceConnector):
    """Configs: ``topic``, ``tasks.max``, ``records.per.task`` (0 = endless), ``batch.size``,
    ``batch.interval.ms``, ``tag``, ``crash.task``/``crash.at``/``crash.mode`` (exit: the
    process dies at once; raise: the task fails) on attempt 0 only (every attempt with
    ``crash.every.attempt=true``), once an offset of the attempt's records is stored,
    ``hang`` (true: poll()
    never returns, ignoring stop: a task only a cancel can end)."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class SequenceSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.index = int(config["task.index"])
        self.topic = config["topic"]
        self.limit = int(config.get("records.per.task", "0"))
        self.batch = int(config.get("batch.size", "100"))
        self.interval = int(config.get("batch.interval.ms", "20")) / 1000.0
        self.tag = config.get("tag", "")
        self.attempt = task_attempt()
        crash = config.get("crash.task")
        every_attempt = config.get("crash.every.attempt") == "true"
        self.crash_at = (
            int(config["crash.at"])
            if crash is not None
            and int(crash) == self.index
            and (self.attempt == 0 or every_attempt)
            else -1
        )
        self.crash_mode = config.get("crash.mode", "exit")
        self.partition = {"task": self.index}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.seq = int(stored["seq"]) if stored else 0
        self.started_at = self.seq
        self.committed = False
        self._stopped = False
        self.hang = config.get("hang") == "true"

    def poll(self) -> list[SourceRecord] | None:
        while self.hang:
            time.sleep(0.05)
        if self._stopped:
            return None
        time.sleep(self.interval)
        if self.limit and self.seq >= self.limit:
            return None
        end = self.seq + self.batch
        if self.limit:
            end = min(end, self.limit)
        if 0 <= self.crash_at < end:
            end = self.crash_at
            if end <= self.seq:
                if self.seq > self.started_at and not self.committed:
                    return None  # die once an offset of this attempt is stored (see commit())
                if self.crash_mode == "exit":
                    os._exit(3)  # the Python worker dies: no final commit, no status
                raise ConnectError(f"injected failure of task {self.index} at {self.seq}")
        records = [
            SourceRecord(
                self.partition,
                {"seq": s + 1},
                self.topic,
                None,
                None,
                None,
                None,
                f"{self.index}:{s}:{self.attempt}:{self.tag}",
            )
            for s in range(self.seq, end)
        ]
        self.seq = end
        return records

    def commit(self) -> None:
        """The worker stored offsets of this task's records. A crash planned after records of
        this attempt waits for the first such commit: with offsets stored off the task thread,
        a task on a loaded machine could reach its crash point before any offset (or any
        record) left it, and the tests then had no resume point to check."""
        self.committed = True

    def stop(self) -> None:
        self._stopped = True


class SequenceFileSink(SinkConnector):
    """Configs: ``topics``, ``tasks.max``, ``dir``, ``crash.task``/``crash.after`` (raise after
    this many records, attempt 0 only)."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return SequenceFileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class SequenceFileSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        index = int(config["task.index"])
        attempt = task_attempt()
        name = f"{config['name']}-{index}-a{attempt}-{os.getpid()}.txt"
        self.file: IO[str] = open(os.path.join(config["dir"], name), "a", encoding="utf-8")  # noqa: SIM115
        crash = config.get("crash.task")
        self.crash_after = (
            int(config["crash.after"])
            if crash is not None and int(crash) == index and attempt == 0
            else -1
        )
        self.count = 0

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            if self.count == self.crash_after:
                self.file.flush()
                raise ConnectError(f"injected sink failure after {self.count} records")
            self.file.write(f"{r.value}\n")
            self.count += 1
        self.file.flush()

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.file.write("#flush\n")
        self.file.flush()

    def close(self, partitions: Collection[TopicPartition]) -> None:
        # Partitions revoked or lost: what was not committed by now may be delivered again.
        self.file.write("#close\n")
        self.file.flush()

    def stop(self) -> None:
        self.file.close()
