"""FileStreamSinkConnector: appends each record's value as one line to a file (or stdout).

Kafka Connect's file sink, with the same key (``file``). ``flush()`` fsyncs, so the offsets the
runtime commits afterwards never pass what is on disk. A batch is written from its ``values``
column with one ``join``; how each kind of value reads as text is :func:`value_text`'s.

The file must be one the worker's ``file.connectors.allowed.dirs`` allows, and never under its
``plugin.path`` or ``sys.path`` (:func:`connectrt.api.file_access`); the task fails at start
otherwise. Whole lines only: each batch is one ``os.write`` of complete lines on an
``O_APPEND`` descriptor, under an exclusive ``flock`` shared by every task appending to the file,
and a task starting on a file whose last line has no newline (a worker killed in the middle of
a write) cuts that partial line off first: its records were not committed, so they are
delivered again.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Collection, Mapping

from connectors.copied_config import CopiedConfigSinkConnector
from connectors.file.text import value_text
from connectrt.api import (
    ConfigDef,
    ConfigType,
    ConnectError,
    Importance,
    SinkRecordBatch,
    SinkTask,
    Task,
    TopicPartition,
    file_access,
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


class FileStreamSinkConnector(CopiedConfigSinkConnector):
    """Every task gets the connector's config; all tasks append to the same file."""

    plugin_version = VERSION
    definition = CONFIG_DEF

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask  # defined below

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
    """Appends to ``file`` (or writes to stdout). Every method runs on the task's thread."""

    def __init__(self) -> None:
        self._filename: str | None = None
        self._fd: int | None = None
        self._started = False

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        self._filename = CONFIG_DEF.parse(config)[FILE_CONFIG] or None
        self._started = True
        if self._filename is None:
            return
        path = file_access().writable(self._filename)
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConnectError(f"Couldn't find or create file '{self._filename}': {e}") from e
        _cut_partial_line(self._fd)

    def put(self, records: SinkRecordBatch) -> None:
        if not records or not self._started:
            return
        data = lines(SinkRecordBatch.of(records).values) + "\n"
        if self._fd is None:
            sys.stdout.write(data)
            return
        _append(self._fd, data.encode("utf-8"))

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
        elif self._started:
            sys.stdout.flush()

    def close(self, partitions: Collection[TopicPartition]) -> None:
        pass

    def stop(self) -> None:
        fd, self._fd = self._fd, None
        self._started = False
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _append(fd: int, data: bytes) -> None:
    """Append ``data`` (complete lines) under the file's exclusive lock: one ``os.write``,
    continued only if the kernel wrote part of it (a full disk, a signal)."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _cut_partial_line(fd: int) -> None:
    """Cut off a last line without its newline (left by a write a kill interrupted), under the
    file's exclusive lock so that no other task's write is in flight."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        end = size
        while end > 0:
            start = max(0, end - 65536)
            chunk = os.pread(fd, end - start, start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                os.ftruncate(fd, start + cut + 1)
                return
            end = start
        os.ftruncate(fd, 0)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
