"""One connector on a worker: its Connector object, configs, target state and task handles
(:class:`WorkerConnector`), and the context its Connector object gets
(:class:`WorkerConnectorContext`)."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from connectrt.api.connector import (
    Connector,
    SinkConnector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from connectrt.errors import ConnectError
from connectrt.runtime.offset_reader import OffsetStorageReaderImpl
from connectrt.runtime.plugin_metrics import PluginMetricsImpl
from connectrt.runtime.status import State, StatusBoard, TargetState
from connectrt.runtime.task_executors import TaskHandle
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["WorkerConnector", "WorkerConnectorContext"]


class WorkerConnectorContext(SourceConnectorContext, SinkConnectorContext):
    """What a connector of a worker sees of it. Thread-safe: a connector may call it from its
    own threads. ``reconfigure(name)`` queues a task reconfiguration on the worker's thread;
    ``status`` takes a failure; source offsets are read from ``offset_store``."""

    def __init__(
        self,
        name: str,
        reconfigure: Callable[[str], None],
        status: StatusBoard,
        offset_store: OffsetStore,
        metrics: PluginMetricsImpl,
    ) -> None:
        self._name = name
        self._reconfigure = reconfigure
        self._status = status
        self._offset_store = offset_store
        self._metrics = metrics

    def request_task_reconfiguration(self) -> None:
        self._reconfigure(self._name)

    def raise_error(self, error: BaseException) -> None:
        trace = "".join(traceback.format_exception(error))
        self._status.put(self._name, None, State.FAILED, trace)

    @property
    def offset_storage_reader(self) -> OffsetStorageReaderImpl:
        return OffsetStorageReaderImpl(self._offset_store, self._name)

    @property
    def plugin_metrics(self) -> PluginMetricsImpl:
        return self._metrics


@dataclass
class WorkerConnector:
    """The state of one connector on a :class:`~connectrt.runtime.worker.Worker`.

    ``config`` is the config as given (it may hold ``${provider:...}`` references),
    ``resolved`` what the connector and its tasks were started with; ``connector`` is None while
    the connector is stopped or failed to start; ``runners`` holds the handles of its running
    tasks by task index. Created when the worker starts the connector and dropped when it is
    deleted; read and written only under the worker's lock.
    """

    name: str
    config: dict[str, str]  # raw, as given (may hold ${provider:...} references)
    connector: Connector | None
    target: TargetState
    task_configs: list[dict[str, str]] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)
    runners: dict[int, TaskHandle] = field(default_factory=dict)
    plugin_metrics: PluginMetricsImpl | None = None  # the Connector object's (KIP-877)
    version: str | None = None  # the running Connector's version() (KIP-891)
    task_version: str | None = None  # its task class's version()
    fenced_count: int = 0  # tasks of the last generation fenced for (exactly-once sources)

    @property
    def connector_type(self) -> str:
        """``"source"``, ``"sink"``, or ``"unknown"`` (no running Connector object)."""
        if isinstance(self.connector, SourceConnector):
            return "source"
        if isinstance(self.connector, SinkConnector):
            return "sink"
        return "unknown"

    def generate_task_configs(self) -> bool:
        """Ask the connector for task configs; True if they changed."""
        connector = self.connector
        assert connector is not None
        config = self.resolved
        max_tasks = int(config.get("tasks.max", "1"))
        raw = connector.task_configs(max_tasks)
        enforce = str(config.get("tasks.max.enforce", "true")).lower() != "false"
        if len(raw) > max_tasks and enforce:
            raise ConnectError(
                f"The connector {self.name} has generated {len(raw)} tasks, which is greater "
                f"than {max_tasks}, the maximum number of tasks it is configured to create. "
                "This behaviour should be considered a bug and is disallowed."
            )
        task_class = connector.task_class()
        configs = []
        for c in raw:
            tc = {str(k): str(v) for k, v in c.items()}
            tc["task.class"] = f"{task_class.__module__}.{task_class.__qualname__}"
            if isinstance(connector, SinkConnector):
                for key in ("topics", "topics.regex"):
                    if config.get(key):
                        tc[key] = config[key]
            configs.append(tc)
        changed = configs != self.task_configs
        self.task_configs = configs
        return changed

    def stop_connector(self) -> None:
        """Stop the Connector object, if any (an error is logged), and forget it and its
        metrics."""
        if self.connector is not None:
            try:
                self.connector.stop()
            except Exception:
                log.exception("Error stopping connector %s", self.name)
            self.connector = None
        if self.plugin_metrics is not None:
            self.plugin_metrics.close()
            self.plugin_metrics = None

    def stop_tasks(self, timeout_s: float) -> None:
        """Ask every task to stop, wait up to ``timeout_s`` in all for them, forget them."""
        runners = list(self.runners.values())
        for r in runners:
            r.stop()
        deadline = time.monotonic() + timeout_s
        for r in runners:
            r.join(max(0.0, deadline - time.monotonic()))
            if r.is_alive():
                if hasattr(r, "abandon"):
                    r.abandon()  # it must not report over the tasks that replace it
                log.error(
                    "Graceful stop of task %s failed: it did not finish within "
                    "task.shutdown.graceful.timeout.ms",
                    r.id,
                )
        self.runners.clear()
