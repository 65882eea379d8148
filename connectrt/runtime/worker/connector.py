"""One connector on a worker: its Connector object, configs, target state and task handles
(:class:`WorkerConnector`), the context its Connector object gets
(:class:`WorkerConnectorContext`), and a config a caller already resolved and validated
(:class:`ResolvedConnector`)."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from connectrt.api.connector import (
    Connector,
    SinkConnector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from connectrt.errors import ConnectError
from connectrt.runtime.executors.task_executor import TaskHandle
from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl
from connectrt.runtime.plugins.calls import PluginCallTimeout, call_plugin
from connectrt.runtime.plugins.metrics import PluginMetricsImpl
from connectrt.runtime.status import State, StatusBoard, TargetState
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["ResolvedConnector", "WorkerConnector", "WorkerConnectorContext", "string_task_config"]


@dataclass(frozen=True)
class ResolvedConnector:
    """A connector config as its caller (the herder's create or update) resolved and validated
    it: ``resolved`` is the config with provider references replaced (its secrets already
    registered with the redactor for good), ``connector_class`` the class validated. Handed
    to the worker so that one create resolves the config once and looks the class up once;
    used for the start that the create or update asks for only (a later restart or resume
    resolves again, so that rotated secrets are picked up)."""

    resolved: dict[str, str]
    connector_class: type[Connector]


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
    """The state of one connector on a :class:`~connectrt.runtime.worker.worker.Worker`.

    ``config`` is the config as given (it may hold ``${provider:...}`` references),
    ``resolved`` what the connector and its tasks were started with, ``connector_class`` the
    class last looked up for ``config`` (None until then); ``connector`` is None while
    the connector is stopped or failed to start; ``runners`` holds the handles of its running
    tasks by task index. Created when the worker starts the connector and dropped when it is
    deleted (``removed`` is then set).

    Threading: its lifecycle (start, stop, reconfiguration, restarts) is serialized by
    ``lock``, one per connector, so that a connector whose plugin code blocks holds up its own
    management only; the fields are written under it. Readers take no lock: they read a
    reference (a config, a copy of ``runners``) that a writer replaces whole or changes with
    single dict operations. Every call into the connector's plugin code is bounded
    (:func:`~connectrt.runtime.plugins.calls.call_plugin`).
    """

    name: str
    config: dict[str, str]  # raw, as given (may hold ${provider:...} references)
    connector: Connector | None
    target: TargetState
    task_configs: list[dict[str, str]] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)
    connector_class: type[Connector] | None = None
    runners: dict[int, TaskHandle] = field(default_factory=dict)
    plugin_metrics: PluginMetricsImpl | None = None  # the Connector object's (KIP-877)
    version: str | None = None  # the running Connector's version() (KIP-891)
    task_version: str | None = None  # its task class's version()
    fenced_count: int = 0  # tasks of the last generation fenced for (exactly-once sources)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    removed: bool = False  # deleted from its worker: no further lifecycle change applies
    # PAUSED without having run (created PAUSED, or paused while STOPPED): as in Kafka
    # Connect, neither the connector nor tasks start, and none are listed, until resumed.
    dormant: bool = False

    @property
    def connector_type(self) -> str:
        """``"source"``, ``"sink"``, or ``"unknown"`` (no running Connector object)."""
        if isinstance(self.connector, SourceConnector):
            return "source"
        if isinstance(self.connector, SinkConnector):
            return "sink"
        return "unknown"

    def generate_task_configs(self, timeout_s: float) -> bool:
        """Ask the connector for task configs (``task_configs()`` bounded by ``timeout_s``:
        :class:`~connectrt.runtime.plugins.calls.PluginCallTimeout` beyond); True if they
        changed. Raises :class:`ConnectError` when the connector generates more tasks than
        ``tasks.max`` allows or a task config that is not a map of strings to strings."""
        connector = self.connector
        assert connector is not None
        config = self.resolved
        max_tasks = int(config.get("tasks.max", "1"))
        raw, task_class = call_plugin(
            lambda: (connector.task_configs(max_tasks), connector.task_class()),
            timeout_s,
            f"task_configs() of connector {self.name}",
        )
        if not isinstance(raw, list | tuple):
            raise ConnectError(
                f"The connector {self.name} returned a {type(raw).__name__} from task_configs(),"
                " not a list of task configs"
            )
        enforce = str(config.get("tasks.max.enforce", "true")).lower() != "false"
        if len(raw) > max_tasks and enforce:
            raise ConnectError(
                f"The connector {self.name} has generated {len(raw)} tasks, which is greater "
                f"than {max_tasks}, the maximum number of tasks it is configured to create. "
                "This behaviour should be considered a bug and is disallowed."
            )
        configs = []
        for index, c in enumerate(raw):
            tc = string_task_config(self.name, index, c)
            tc["task.class"] = f"{task_class.__module__}.{task_class.__qualname__}"
            if isinstance(connector, SinkConnector):
                for key in ("topics", "topics.regex"):
                    if config.get(key):
                        tc[key] = config[key]
            configs.append(tc)
        changed = configs != self.task_configs
        self.task_configs = configs
        return changed

    def stop_connector(self, timeout_s: float) -> None:
        """Stop the Connector object, if any, and forget it and its metrics. An error in its
        ``stop()`` is logged; a ``stop()`` still running after ``timeout_s`` is abandoned and
        logged (Kafka Connect's words), and the stop goes on without it."""
        connector, self.connector = self.connector, None
        if connector is not None:
            try:
                call_plugin(connector.stop, timeout_s, f"stop() of connector {self.name}")
            except PluginCallTimeout:
                log.error(
                    "Connector '%s' failed to properly shut down within %.0f ms "
                    "(task.shutdown.graceful.timeout.ms), has become unresponsive, and may be "
                    "consuming external resources. Correct the configuration for this "
                    "connector or remove the connector. After fixing the connector, it may be "
                    "necessary to restart this worker to release any consumed resources.",
                    self.name,
                    timeout_s * 1000,
                )
            except Exception:
                log.exception("Error stopping connector %s", self.name)
        if self.plugin_metrics is not None:
            self.plugin_metrics.close()
            self.plugin_metrics = None

    def stop_tasks(self, timeout_s: float) -> None:
        """Ask every task to stop, wait up to ``timeout_s`` in all for them, forget them. A
        task still running then is abandoned: it may report nothing more (a task process is
        killed by its handle's ``join``), and ``Graceful stop of task ... failed`` is logged."""
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
                    "Graceful stop of task %s failed: it did not finish within %.0f ms "
                    "(task.shutdown.graceful.timeout.ms) and was abandoned",
                    r.id,
                    timeout_s * 1000,
                )
        self.runners.clear()


def string_task_config(connector: str, index: int, config: object) -> dict[str, str]:
    """Check that task config ``index`` of ``connector`` maps strings to strings (Kafka
    Connect's ``Map<String, String>``) and return a copy; :class:`ConnectError` naming the first
    key or value that is not a string otherwise (nothing is converted: ``None`` is not
    ``"None"``)."""
    if not isinstance(config, Mapping):
        raise ConnectError(
            f"The connector {connector} generated task config {index} as a "
            f"{type(config).__name__}: task configs must map strings to strings"
        )
    out: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise ConnectError(
                f"The connector {connector} generated task config {index} with a key of type "
                f"{type(key).__name__} ({key!r}): task configs must map strings to strings"
            )
        if not isinstance(value, str):
            raise ConnectError(
                f"The connector {connector} generated task config {index} whose value for "
                f"{key!r} is of type {type(value).__name__}, not a string: task configs must "
                "map strings to strings"
            )
        out[key] = value
    return out
