"""Test connectors that get the worker stuck, for the health check (KIP-1017).

* :class:`BlockingStartSource`: ``start()`` blocks until the test sets :data:`RELEASE` (at most
  ``block.max.s`` seconds, default 120): the herder is stuck creating it.
* :class:`ExitOnReconfigureSource`: asks for a task reconfiguration once started and raises
  ``SystemExit`` when the worker asks it for task configs again: the worker's reconfiguration
  thread, which only survives ``Exception``, dies.

Both run no records: their task returns nothing from ``poll()``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task

RELEASE = threading.Event()
"""Set it to let every blocked :class:`BlockingStartSource` start; clear it to block again."""


class IdleTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self._stop = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self._stop.wait(0.2)
        return None

    def stop(self) -> None:
        self._stop.set()


class BlockingStartSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        RELEASE.wait(float(config.get("block.max.s", "120")))

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return IdleTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class ExitOnReconfigureSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._calls = 0
        # Asked from another thread, as a connector watching its source system would.
        threading.Timer(0.2, self.context.request_task_reconfiguration).start()

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return IdleTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        self._calls += 1
        if self._calls > 1:
            raise SystemExit("ExitOnReconfigureSource: exit from task_configs()")
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()
