"""Test plugins for the processes executor: a source of numbered records whose task can die in
the ways a task process dies (exit, segfault, SIGKILL, running out of memory).

:class:`FaultySource` values are ``"<task>:<seq>:<pid>"`` (StringConverter), source partition
``{"task": t}``, offset ``{"seq": next}``, resuming from the stored offset. Configs: ``topic``,
``tasks.max``, ``records.per.task`` (0 = endless), ``batch.size``, ``batch.interval.ms``, and a
fault: ``fault.task`` (index), ``fault.at`` (seq), ``fault.kind`` (``exit``: ``os._exit`` with
``fault.exit.code``; ``segv``: a read of address 0 through ctypes; ``sigkill``: the process
kills itself with SIGKILL, as the OOM killer would; ``leak``: each poll keeps 16 MB more
until an allocation fails; ``hang``: ``poll()`` never returns, ignoring stop) and
``fault.marker``: a file created just before the fault, holding the pid of the process about
to die, which disarms it, so the restarted task runs clean.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task


class _Source(SourceConnector):
    task: type[Task]

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return self.task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class FaultySourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.index = int(config["task.index"])
        self.topic = config["topic"]
        self.limit = int(config.get("records.per.task", "0"))
        self.batch = int(config.get("batch.size", "50"))
        self.interval = int(config.get("batch.interval.ms", "20")) / 1000.0
        self.partition = {"task": self.index}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.seq = int(stored["seq"]) if stored else 0
        self.pid = os.getpid()
        self.fault_at = -1
        marker = config.get("fault.marker")
        if config.get("fault.task") == str(self.index) and not (marker and Path(marker).exists()):
            self.fault_at = int(config.get("fault.at", "0"))
        self.fault_kind = config.get("fault.kind", "exit")
        self.exit_code = int(config.get("fault.exit.code", "13"))
        self.marker = marker
        self.leak: list[bytearray] = []
        self._stopped = False

    def _fault(self) -> None:
        if self.marker:
            Path(self.marker).write_text(str(os.getpid()))
        if self.fault_kind == "exit":
            os._exit(self.exit_code)
        if self.fault_kind == "segv":
            ctypes.string_at(0)
        if self.fault_kind == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault_kind == "hang":
            while True:  # stuck for good: only killing the process ends this
                time.sleep(0.05)
        if self.fault_kind == "leak":
            while True:  # a leak: everything stays referenced by the task
                self.leak.append(bytearray(16 * 1024 * 1024))
        raise AssertionError(f"unknown fault.kind {self.fault_kind}")

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped:
            return None
        time.sleep(self.interval)
        end = self.seq + self.batch
        if self.limit:
            end = min(end, self.limit)
        if 0 <= self.fault_at < end:
            end = self.fault_at
            if end <= self.seq:
                self._fault()
        records = [
            SourceRecord(
                self.partition,
                {"seq": s + 1},
                self.topic,
                None,
                None,
                None,
                None,
                f"{self.index}:{s}:{self.pid}",
            )
            for s in range(self.seq, end)
        ]
        self.seq = end
        return records or None

    def stop(self) -> None:
        self._stopped = True


class FaultySource(_Source):
    task = FaultySourceTask


def _local_task_class() -> type[Task]:
    class LocalTask(FaultySourceTask):  # defined in a function: no import path reaches it
        pass

    return LocalTask


class UnimportableTaskSource(_Source):
    """A connector whose task class exists only in the worker's process (a class made in a
    function): a task process cannot import it."""

    def task_class(self) -> type[Task]:
        return _local_task_class()
