"""A sink whose ``put`` can be held shut from the test, to stall a sink while records arrive.

``GATES[gate.id]`` is an Event: while it is clear, ``put`` blocks (at most two minutes, so a
forgotten gate cannot hang a worker's shutdown forever) and ``BLOCKED[gate.id]`` is set.
``PUT[gate.id]`` counts the records ``put`` returned from.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping

from connectrt.api import ConfigDef, ConfigType, SinkConnector, SinkRecord, SinkTask, Task

GATES: dict[str, threading.Event] = defaultdict(threading.Event)
BLOCKED: dict[str, threading.Event] = defaultdict(threading.Event)
PUT: dict[str, int] = defaultdict(int)


class GatedSink(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return GatedSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "gate.id", ConfigType.STRING, documentation="Key of the gate in GATES"
        )


class GatedSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.gate_id = config["gate.id"]

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        gate = GATES[self.gate_id]
        if not gate.is_set():
            BLOCKED[self.gate_id].set()
            gate.wait(120)
        PUT[self.gate_id] += len(records)

    def stop(self) -> None:
        pass
