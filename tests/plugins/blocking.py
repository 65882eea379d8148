"""A test source whose lifecycle calls block, for "management never waits on plugin code".

:class:`BlockingSource` is an idle source (its task's ``poll()`` returns None every 0.1 s) that
blocks where its config says:

* ``block.in``: Connector calls that block, comma-separated: ``start``, ``task_configs``,
  ``stop``;
* ``task.block.in``: task calls that block: ``stop`` (``SourceTask.stop()``), ``poll``
  (``poll()``, which ``stop()`` does not wake);
* ``block.seconds``: how long a blocking call blocks (600 by default).

A blocking call returns early when :data:`RELEASE` is set (in this process: tests set it in
teardown, so no thread of theirs stays blocked); in a task process of its own
(``task.executor=processes``) only the process's end stops it. Each blocking call that began
is recorded in :data:`ENTERED` as ``(store.id, call)``, ``call`` being e.g. ``"start"`` or
``"task.stop"``, so a test knows when the call is blocked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task

RELEASE = threading.Event()
"""Set it to let every blocked call (of this process) return."""

ENTERED: set[tuple[str, str]] = set()
"""``(store.id, call)`` of every blocking call that began in this process."""

_LOCK = threading.Lock()


def _calls(config: Mapping[str, str], key: str) -> set[str]:
    return {c.strip() for c in config.get(key, "").split(",") if c.strip()}


def _block(config: Mapping[str, str], call: str) -> None:
    with _LOCK:
        ENTERED.add((config.get("store.id", ""), call))
    RELEASE.wait(float(config.get("block.seconds", "600")))


def entered(store: str, call: str) -> bool:
    """Whether the blocking ``call`` of the connector with ``store.id`` ``store`` began."""
    with _LOCK:
        return (store, call) in ENTERED


class BlockingSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        if "start" in _calls(config, "block.in"):
            _block(config, "start")

    def stop(self) -> None:
        if "stop" in _calls(self._config, "block.in"):
            _block(self._config, "stop")

    def task_class(self) -> type[Task]:
        return BlockingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if "task_configs" in _calls(self._config, "block.in"):
            _block(self._config, "task_configs")
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class BlockingSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._blocks = _calls(config, "task.block.in")

    def poll(self) -> list[SourceRecord] | None:
        if "poll" in self._blocks:
            _block(self._config, "task.poll")
        else:
            time.sleep(0.1)
        return None

    def stop(self) -> None:
        if "stop" in self._blocks:
            _block(self._config, "task.stop")


class NonStringTaskConfigs(SourceConnector):
    """A connector whose task configs hold a value that is not a string (``None``)."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return BlockingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "not.a.string": None}]  # type: ignore[dict-item]

    def config_def(self) -> ConfigDef:
        return ConfigDef()
