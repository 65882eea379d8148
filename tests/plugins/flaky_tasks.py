"""Test plugins for error handling: a sink that reports errant records, a task that fails a
few times before it works."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping

from connectrt.api import ConfigDef, ConnectError, SinkConnector, SinkRecord, SinkTask, Task

WRITTEN: dict[str, list[object]] = defaultdict(list)
STARTS: dict[str, int] = defaultdict(int)
LOCK = threading.Lock()


class _Sink(SinkConnector):
    task: type[Task]

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return self.task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class ReportingSinkTask(SinkTask):
    """Writes every value; values equal to "bad" go to the errant record reporter."""

    def start(self, config: Mapping[str, str]) -> None:
        self.store = config["store.id"]

    def put(self, records: list[SinkRecord]) -> None:
        reporter = self.context.errant_record_reporter
        for r in records:
            if r.value == "bad":
                assert reporter is not None
                reporter.report(r, ValueError(f"cannot write {r.value!r}"))
            else:
                with LOCK:
                    WRITTEN[self.store].append(r.value)

    def stop(self) -> None:
        pass


class ReportingSink(_Sink):
    task = ReportingSinkTask


class FailTwiceSinkTask(SinkTask):
    """Fails in put() on its first two incarnations, works from the third."""

    def start(self, config: Mapping[str, str]) -> None:
        self.store = config["store.id"]
        with LOCK:
            STARTS[self.store] += 1
            self.incarnation = STARTS[self.store]

    def put(self, records: list[SinkRecord]) -> None:
        if records and self.incarnation <= 2:
            raise ConnectError(f"incarnation {self.incarnation} cannot write yet")
        with LOCK:
            WRITTEN[self.store].extend(r.value for r in records)

    def stop(self) -> None:
        pass


class FailTwiceSink(_Sink):
    task = FailTwiceSinkTask
