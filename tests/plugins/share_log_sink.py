"""A slow sink that logs what each task wrote and flushed, for share-group tests (issue 37).

Each task appends to ``<dir>/task-<index>-<pid>.jsonl`` (one file per task process or thread
run): per record of a ``put`` batch ``{"b": batch, "v": value, "o": offset}`` after sleeping
``per.record.ms`` for each record (a destination that takes that long per record), and
``{"flushed": batch}`` when ``flush`` returns after that batch. Lines are written with
``os.write`` (no Python buffer), so what a task wrote survives its process being killed; a
reader may catch a batch half written (or a killed task's last one), so only lines that end
in a newline count.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from connectrt.api import (
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)

CONFIG = (
    ConfigDef()
    .define("dir", ConfigType.STRING, importance=Importance.HIGH, documentation="Output folder.")
    .define("per.record.ms", ConfigType.DOUBLE, 0.0, documentation="Time per record written.")
)


class ShareLogSink(SinkConnector):
    def config_def(self) -> ConfigDef:
        return CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return ShareLogSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.index": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass


class ShareLogSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG.parse(config)
        folder = Path(cfg["dir"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"task-{config['task.index']}-{os.getpid()}.jsonl"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._delay = cfg["per.record.ms"] / 1000
        self._batch = 0

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        self._batch += 1
        time.sleep(self._delay * len(records))
        lines = "".join(
            json.dumps({"b": self._batch, "v": r.value, "o": r.kafka_offset}) + "\n"
            for r in records
        )
        _write_all(self._fd, lines.encode())

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self._batch:
            _write_all(self._fd, (json.dumps({"flushed": self._batch}) + "\n").encode())

    def stop(self) -> None:
        os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (it may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_logs(folder: Path) -> dict[str, list[dict[str, object]]]:
    """Every task log of ``folder``: file stem (``task-<index>-<pid>``) -> its complete lines
    (a last line without its newline is still being written, or its writer was killed)."""
    out: dict[str, list[dict[str, object]]] = {}
    for path in sorted(folder.glob("task-*.jsonl")):
        complete = path.read_text().split("\n")[:-1]
        out[path.stem] = [json.loads(line) for line in complete if line]
    return out
