"""FileStreamSinkConnector: appends each record's value as one line to a file (or stdout).

Kafka Connect's file sink, with the same key (``file``). ``flush()`` fsyncs, so the offsets the
runtime commits afterwards never pass what is on disk. A batch is written from its ``values``
column with one ``join``; how each kind of value reads as text is :func:`value_text`'s.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping
from typing import IO

from connectors.file.text import value_text
from connectrt.api import (
    ConfigDef,
    ConfigType,
    ConnectError,
    Importance,
    SinkConnector,
    SinkRecordBatch,
    SinkTask,
    Task,
    TopicPartition,
)

FILE_CONFIG = "file"
VERSION = "0.1.0"

CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG,
    ConfigType.STRING,
    None,
    None,
    Importance.HIGH,
    "Destination filename. If not specified, the standard output will be used",
)


class FileStreamSinkConnector(SinkConnector):
    """Every task gets the connector's config; all tasks append to the same file."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, config: Mapping[str, str]) -> None:
        CONFIG_DEF.parse(config)
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # the file keeps no offsets of its own


def lines(values: tuple[object, ...]) -> str:
    """The values as lines (without the last newline): one ``join`` when all are strings (or
    all bytes), else :func:`value_text` for each."""
    try:
        return "\n".join(values)  # type: ignore[arg-type]
    except TypeError:
        pass
    if values and type(values[0]) is bytes:
        try:
            return b"\n".join(values).decode("utf-8", errors="replace")  # type: ignore[arg-type]
        except TypeError:
            pass
    return "\n".join(map(value_text, values))


class FileStreamSinkTask(SinkTask):
    def __init__(self) -> None:
        self._filename: str | None = None
        self._out: IO[str] | None = None

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        self._filename = CONFIG_DEF.parse(config)[FILE_CONFIG] or None
        if self._filename is None:
            self._out = sys.stdout
            return
        try:
            self._out = open(self._filename, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as e:
            raise ConnectError(f"Couldn't find or create file '{self._filename}': {e}") from e

    def put(self, records: SinkRecordBatch) -> None:
        if not records or self._out is None:
            return
        self._out.write(lines(SinkRecordBatch.of(records).values))
        self._out.write("\n")

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self._out is None:
            return
        self._out.flush()
        if self._filename is not None:
            os.fsync(self._out.fileno())

    def close(self, partitions: Collection[TopicPartition]) -> None:
        pass

    def stop(self) -> None:
        out, self._out = self._out, None
        if out is not None and self._filename is not None:
            out.flush()
            os.fsync(out.fileno())
            out.close()
