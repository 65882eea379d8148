"""Careless plugins for the security tests: they put the secrets of their config into their
errors and log lines, as is and ``repr``-escaped (backslashes doubled).

``leak.fail`` says where it goes wrong: ``connector`` (the connector's ``start`` raises),
``task`` (the task's ``start`` raises) or ``none`` (the task produces one record a second; pair
it with :class:`LeakyTransform` to fail records into a dead letter queue). ``auth.blob`` is
PASSWORD-typed under an innocent name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from connectrt.api import (
    ConfigDef,
    ConfigType,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    Transformation,
)
from connectrt.errors import ConnectError, DataError

log = logging.getLogger("leaky_secrets")  # a plugin's own logger, outside connectrt's

_SECRET_KEYS = ("db.password", "note.env", "note.file", "auth.blob", "jdbc.url")


def _confession(config: Mapping[str, Any]) -> str:
    plain = " ".join(f"{k}={config.get(k)}" for k in _SECRET_KEYS)
    return f"cannot log in with {plain}; config was {dict(config)!r}"


class LeakySource(SourceConnector):
    """See the module docstring."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        log.warning("connector starting: %s", _confession(config))
        if config.get("leak.fail") == "connector":
            raise ConnectError(_confession(config))

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return LeakyTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", ConfigType.STRING, "leaky")
            .define("leak.fail", ConfigType.STRING, "task")
            .define("auth.blob", ConfigType.PASSWORD, None)
        )


class LeakyTask(SourceTask):
    """See the module docstring."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._next = 0
        log.warning("task starting: %r", dict(config))
        if config.get("leak.fail", "task") == "task":
            raise RuntimeError(_confession(config))

    def poll(self) -> list[SourceRecord] | None:
        time.sleep(1)
        self._next += 1
        record = SourceRecord(
            {"p": 0}, {"n": self._next}, self._config.get("topic", "leaky"), value=self._next
        )
        return [record]

    def stop(self) -> None:
        pass


class LeakyTransform(Transformation[Any]):
    """Fails every record with an error quoting its own (secret) settings."""

    def configure(self, config: Mapping[str, Any]) -> None:
        self._config = dict(config)

    def apply(self, record: Any) -> Any:
        raise DataError(_confession(self._config))

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass
