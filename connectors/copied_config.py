"""The sink connector shape four bundled sinks share: every task runs with the connector's config.

:class:`CopiedConfigSinkConnector` keeps the config ``start`` was given and hands a copy of it
to each of ``max_tasks`` tasks (Kafka's consumer group spreads the partitions over them). A
subclass names its version, its ConfigDef and its task class as class attributes, checks the
rules between keys in :meth:`~CopiedConfigSinkConnector.check` (run by ``start``, so a bad
config fails the connector before any task starts) and reports them per key from
:meth:`~CopiedConfigSinkConnector.rule_errors` (run by ``validate`` once every key parsed).

Lifecycle and threading: as :class:`connectrt.api.SinkConnector`'s (the runtime calls one
method at a time); ``stop`` has nothing to release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from connectrt.api import ConfigDef, ConfigValue, SinkConnector, Task

__all__ = ["CopiedConfigSinkConnector"]


class CopiedConfigSinkConnector(SinkConnector):
    """A sink connector whose tasks all get its own config (see the module docstring)."""

    #: What ``version()`` answers.
    plugin_version: ClassVar[str]
    #: What ``config_def()`` answers.
    definition: ClassVar[ConfigDef]
    #: What ``task_class()`` answers (or override ``task_class``, for a task defined later).
    task_type: ClassVar[type[Task]]

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return self.plugin_version

    def config_def(self) -> ConfigDef:
        return self.definition

    def check(self, config: Mapping[str, str]) -> None:
        """Raise (a ConfigError, or what opening the destination raises) unless ``config``
        can run; the default parses it with :attr:`definition`."""
        self.definition.parse(config)

    def rule_errors(
        self, config: Mapping[str, str], values: Mapping[str, object]
    ) -> Iterable[tuple[str, str]]:
        """``(key, message)`` of each rule between keys that ``config`` breaks (``values``: the
        parsed value of each key); none by default."""
        return ()

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """The per-key results, plus :meth:`rule_errors` on the keys they name once every key
        is valid on its own."""
        result = super().validate(config)
        if any(v.errors for v in result.values()):
            return result
        values = {name: v.value for name, v in result.items()}
        for key, message in self.rule_errors(config, values):
            result[key].errors.append(message)
        return result

    def start(self, config: Mapping[str, str]) -> None:
        self.check(config)
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return self.task_type

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass
