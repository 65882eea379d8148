"""FileStreamSourceConnector: streams the lines of a (growing) text file into a topic.

Kafka Connect's file source, with the same keys (``file``, ``topic``, ``batch.size``), the same
source partition ``{"filename": <file>}`` and offset ``{"position": <n>}``. One difference:
``position`` counts bytes, not Java chars, so a restart resumes exactly even after non-ASCII
lines (for ASCII files the two are equal). The file must be one the worker's
``file.connectors.allowed.dirs`` allows (:func:`connectrt.api.file_access`): the task fails
otherwise.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate
from typing import Any, cast, overload

from connectrt.api import (
    ConfigDef,
    ConfigType,
    ConnectError,
    Importance,
    NonEmptyString,
    Range,
    SourceConnector,
    SourceRecordBatch,
    SourceTask,
    Task,
    file_access,
)
from connectrt.data import Schema

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
VERSION = "0.1.0"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Source filename. If not specified, the standard input will be used",
    )
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic to publish data to",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        2000,
        Range.at_least(1),
        Importance.LOW,
        "The maximum number of records the source task can read from the file each poll",
    )
)

_READ_CHUNK = 1 << 16
_IDLE_WAIT_S = 0.25  # how long an idle poll() blocks (Kafka waits 1 s)


class FileStreamSourceConnector(SourceConnector):
    """Always exactly one task, whose config equals the connector's."""

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
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def records_have_keys(self, config: Mapping[str, str]) -> bool | None:
        return False  # one record per line, its value; never a key

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        return "SUPPORTED" if config.get(FILE_CONFIG) else "UNSUPPORTED"

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]
    ) -> bool:
        if not config.get(FILE_CONFIG):
            raise NotImplementedError("Offsets cannot be modified when reading from stdin")
        for partition, offset in offsets.items():
            if "filename" not in dict(partition):
                raise ConnectError("Partitions must contain the key 'filename'")
            if offset is None:
                continue
            pos = offset.get("position")
            if not isinstance(pos, int) or isinstance(pos, bool) or pos < 0:
                raise ConnectError("The 'position' offset must be a non-negative integer")
        return True


class FileStreamSourceTask(SourceTask):
    """Reads complete lines; a trailing partial line waits until its newline arrives."""

    def __init__(self) -> None:
        self._filename: str | None = None
        self._topic = ""
        self._batch_size = 2000
        self._stream: io.BufferedIOBase | None = None
        self._position = 0
        self._lines: list[str] = []  # complete lines of the last chunk, decoded, without EOL
        self._ends: list[int] = []  # the byte position just after each of them
        self._next_line = 0
        self._tail = b""  # a partial last line, waiting for its newline
        self._partition: dict[str, str] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # held by poll(); stop() takes it to close the stream
        self._warned_missing = False

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG_DEF.parse(config)
        self._filename = cfg[FILE_CONFIG] or None
        self._topic = cfg[TOPIC_CONFIG]
        self._batch_size = cfg[BATCH_SIZE_CONFIG]
        self._partition = {"filename": self._filename or ""}
        if self._filename is not None:
            file_access().readable(self._filename)  # fail at start, not at the first poll
        self._stopping.clear()

    def _open(self) -> bool:
        if self._filename is None:
            self._stream = cast(io.BufferedIOBase, sys.stdin.buffer)
            return True
        path = file_access().readable(self._filename)
        try:
            stream = open(path, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            if not self._warned_missing:
                log.warning(
                    "Couldn't find file %s for FileStreamSourceTask, sleeping to wait "
                    "for it to be created",
                    self._filename,
                )
                self._warned_missing = True
            return False
        except OSError as e:
            raise ConnectError(f"Cannot read file {self._filename}: {e}") from e
        committed = self.context.offset_storage_reader.offset(self._partition)
        position = 0
        if committed is not None:
            pos = committed.get("position")
            if not isinstance(pos, int):
                stream.close()
                raise ConnectError(f"Offset position is the incorrect type: {pos!r}")
            position = pos
            log.debug("Found previous offset, trying to skip to file offset %d", position)
            stream.seek(position)
        self._stream = stream
        self._position = position
        return True

    def poll(self) -> SourceRecordBatch | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            batch = self._read_batch()
        if batch is None:
            self._stopping.wait(_IDLE_WAIT_S if self._filename else 0.1)
        return batch

    def _read_batch(self) -> SourceRecordBatch | None:
        """Up to ``batch.size`` complete lines as one batch (None: none yet). Each chunk read is
        split and decoded once (:meth:`_take_chunk`); a trailing partial line is kept until its
        newline arrives. The batch holds the lines as its values column and their end positions
        (the offset maps are made only for the records the runtime asks about)."""
        if self._stream is None and not self._open():
            return None
        stream = self._stream
        assert stream is not None
        lines: list[str] = []
        ends: list[int] = []
        try:
            while len(lines) < self._batch_size:
                if self._next_line >= len(self._lines):
                    chunk = stream.read1(_READ_CHUNK) if self._filename else stream.readline()
                    if not chunk:
                        break
                    self._take_chunk(chunk)
                    continue
                start = self._next_line
                stop = min(len(self._lines), start + self._batch_size - len(lines))
                if start == 0 and stop == len(self._lines) and not lines:
                    lines, ends = self._lines, self._ends  # the whole chunk: no copy
                else:
                    lines += self._lines[start:stop]
                    ends += self._ends[start:stop]
                self._next_line = stop
                self._position = self._ends[stop - 1]
        except OSError as e:
            raise ConnectError(f"Error while reading file {self._filename}: {e}") from e
        if not lines:
            return None
        offsets: Sequence[Mapping[str, int] | None]
        if self._filename:
            offsets = _PositionOffsets(ends)
            partition: dict[str, str] | None = self._partition
        else:
            offsets, partition = [None] * len(lines), None
        return SourceRecordBatch(
            partition,
            offsets,
            self._topic,
            lines,
            Schema.STRING_SCHEMA,
            int(time.time() * 1000),
        )

    def _take_chunk(self, chunk: bytes) -> None:
        """Split the complete lines of ``tail + chunk`` into ``_lines`` (decoded, ``\\r\\n`` or
        ``\\n`` removed) and ``_ends`` (each one's end position in bytes, counting the line
        break); keep the partial last line in ``_tail``.

        An ASCII chunk (the usual case) is decoded once and its positions summed at C level;
        otherwise each line is decoded on its own (invalid UTF-8 replaced), counted in bytes.
        """
        data = self._tail + chunk
        cut = data.rfind(b"\n")
        self._next_line = 0
        if cut < 0:
            self._tail = data
            self._lines, self._ends = [], []
            return
        complete, self._tail = data[:cut], data[cut + 1 :]
        if complete.isascii():
            lines = complete.decode("ascii").split("\n")
            self._ends = _line_ends(self._position, lines)
            if b"\r" in complete:
                lines = [line[:-1] if line[-1:] == "\r" else line for line in lines]
            self._lines = lines
            return
        raw = complete.split(b"\n")
        self._ends = _line_ends(self._position, raw)
        self._lines = [
            (line[:-1] if line[-1:] == b"\r" else line).decode("utf-8", "replace") for line in raw
        ]

    def stop(self) -> None:
        """Called from another thread: wakes an idle poll, then closes the file."""
        self._stopping.set()
        with self._lock:
            stream, self._stream = self._stream, None
            if stream is not None and self._filename is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class _PositionOffsets(Sequence[Mapping[str, int]]):
    """A batch's source offsets, ``{"position": end}`` per line, each map made when read."""

    __slots__ = ("_ends",)

    def __init__(self, ends: list[int]) -> None:
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    def __iter__(self) -> Iterator[Mapping[str, int]]:
        return iter([{"position": end} for end in self._ends])  # the records being built

    @overload
    def __getitem__(self, index: int) -> Mapping[str, int]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, int]]: ...

    def __getitem__(self, index: int | slice) -> Mapping[str, int] | Sequence[Mapping[str, int]]:
        if isinstance(index, slice):
            return [{"position": end} for end in self._ends[index]]
        return {"position": self._ends[index]}


_plus_one = (1).__add__


def _line_ends(start: int, lines: list[str] | list[bytes]) -> list[int]:
    """The position after each line and its ``\\n``, from ``start``: a running sum at C level
    (the lengths count bytes: ``lines`` are bytes, or ASCII text)."""
    return list(accumulate(map(_plus_one, map(len, lines)), initial=start))[1:]
