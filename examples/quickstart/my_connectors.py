"""A tiny source and a tiny sink: the connectors of the docs' walkthrough.

TickSource counts "tick 1", "tick 2", ... into a topic and resumes from its committed offset
after a restart. LineFileSink appends each record's value to a file, one line per record.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from connectrt.api import (
    BatchingSinkTask,
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)

SOURCE_CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Topic.")
    .define("interval.ms", ConfigType.INT, 500, documentation="Milliseconds between ticks.")
)
SINK_CONFIG = ConfigDef().define(
    "file", ConfigType.STRING, importance=Importance.HIGH, documentation="File to append to."
)


class TickSource(SourceConnector):
    def config_def(self) -> ConfigDef:
        return SOURCE_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        SOURCE_CONFIG.parse(config)  # fail early, naming a bad key
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return TickTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]  # one clock, one task

    def stop(self) -> None:
        pass


class TickTask(SourceTask):
    PARTITION = {"clock": "main"}

    def start(self, config: Mapping[str, str]) -> None:
        cfg = SOURCE_CONFIG.parse(config)
        self.topic, self.interval = cfg["topic"], cfg["interval.ms"] / 1000
        last = self.context.offset_storage_reader.offset(self.PARTITION)
        self.count = last["count"] if last else 0
        self.stopping = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.stopping.wait(self.interval):  # stop() wakes this up
            return None
        self.count += 1
        offset = {"count": self.count}
        return [SourceRecord(self.PARTITION, offset, self.topic, value=f"tick {self.count}")]

    def stop(self) -> None:
        self.stopping.set()


class LineFileSink(SinkConnector):
    def config_def(self) -> ConfigDef:
        return SINK_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        SINK_CONFIG.parse(config)
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return LineFileTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]  # one file, one writer

    def stop(self) -> None:
        pass


class LineFileTask(BatchingSinkTask):
    batch_size = 50  # write when 50 records wait, and before every offset commit

    def start(self, config: Mapping[str, str]) -> None:
        self.path = SINK_CONFIG.parse(config)["file"]

    def write(self, batch: list[SinkRecord]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.writelines(f"{record.value}\n" for record in batch)
