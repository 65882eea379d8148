"""Test connectors that misbehave on purpose."""

from __future__ import annotations

from collections.abc import Mapping

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task
from connectrt.data import Schema, SchemaBuilder, Struct

USER = (
    SchemaBuilder.struct()
    .name("user")
    .field("id", Schema.INT32_SCHEMA)
    .field("email", Schema.STRING_SCHEMA)
    .build()
)


class SchemaMismatchSource(SourceConnector):
    """Emits one valid record, then a Struct whose required ``email`` is missing."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return SchemaMismatchTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class SchemaMismatchTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self._topic = config["topic"]
        self._sent = False

    def poll(self) -> list[SourceRecord] | None:
        if self._sent:
            return None
        self._sent = True
        good = Struct(USER).put("id", 1).put("email", "a@example.com")
        bad = Struct(USER).put("id", 2)
        return [
            SourceRecord({"p": 0}, {"n": 1}, self._topic, None, None, None, USER, good),
            SourceRecord({"p": 0}, {"n": 2}, self._topic, None, None, None, USER, bad),
        ]

    def stop(self) -> None:
        pass


class TooManyTasksSource(SchemaMismatchSource):
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks + 1)]
