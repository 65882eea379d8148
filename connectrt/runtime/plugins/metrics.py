"""The runtime side of plugin metrics (KIP-877): one registry per worker, one handle per plugin.

:class:`PluginMetricsRegistry` holds every metric the worker's plugins published, read by
``GET /metrics`` (through the worker overview's snapshot). A plugin gets a
:class:`PluginMetricsImpl` carrying its runtime tags, in Kafka's order and names:

========================= ==========================================================
plugin                    tags
========================= ==========================================================
connector                 ``connector``
task                      ``connector``, ``task``
key/value/header converter ``connector``, ``task``, ``converter`` (``key``/``value``/``header``)
transformation            ``connector``, ``task``, ``transformation`` (its alias)
predicate                 ``connector``, ``task``, ``predicate`` (its alias)
========================= ==========================================================

Closing a handle removes what it registered. :class:`TaskPluginMetrics` gathers a task's
handles: the task's own, and those handed to its :class:`~connectrt.api.metrics.Monitorable`
converters, transformations and predicates when the runner is built; the runner closes it when
its thread ends.

Threading: registration and closing may come from any thread (a lock guards the registry);
:meth:`PluginMetricsRegistry.snapshot` reads the values without the lock, calling the plugins'
value functions on the reading thread. Nothing here runs per record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from connectrt.api.metrics import MetricName, Monitorable, PluginMetrics, Sensor

__all__ = ["PluginMetricsImpl", "PluginMetricsRegistry", "TaskPluginMetrics"]

log = logging.getLogger(__name__)

GROUP = "plugins"

R = TypeVar("R")


class PluginMetricsRegistry:
    """Every plugin metric of one worker: ``MetricName -> value function``.

    A name is unique per plugin handle (the handle refuses duplicates). Across handles the
    newest registration wins: a task instance that has not finished stopping must not keep its
    replacement from starting; the stale handle's close then leaves the new metric alone.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[MetricName, tuple[object, Callable[[], float]]] = {}

    def register(self, name: MetricName, value: Callable[[], float], owner: object) -> None:
        with self._lock:
            previous = self._metrics.get(name)
            self._metrics[name] = (owner, value)
        if previous is not None and previous[0] is not owner:
            log.warning(
                "Plugin metric %s %s replaces one of a plugin instance still stopping",
                name.name,
                name.tag_map,
            )

    def unregister(self, name: MetricName, owner: object) -> None:
        with self._lock:
            current = self._metrics.get(name)
            if current is not None and current[0] is owner:
                del self._metrics[name]

    def names(self) -> list[MetricName]:
        with self._lock:
            return list(self._metrics)

    def snapshot(self) -> list[dict[str, Any]]:
        """``{"name", "group", "description", "tags", "value"}`` per metric; a value function
        that raises is logged and left out."""
        with self._lock:
            items = [(name, read) for name, (_, read) in self._metrics.items()]
        out = []
        for name, read in items:
            try:
                value = float(read())
            except Exception:
                log.debug("Plugin metric %s could not be read", name, exc_info=True)
                continue
            out.append(
                {
                    "name": name.name,
                    "group": name.group,
                    "description": name.description,
                    "tags": name.tag_map,
                    "value": value,
                }
            )
        return out

    # -- handles ---------------------------------------------------------------------------
    def connector(self, connector: str) -> PluginMetricsImpl:
        return PluginMetricsImpl(self, {"connector": connector})

    def task(self, connector: str, task: int) -> TaskPluginMetrics:
        return TaskPluginMetrics(self, {"connector": connector, "task": str(task)})


class PluginMetricsImpl(PluginMetrics):
    """One plugin's handle (see :class:`~connectrt.api.metrics.PluginMetrics`)."""

    def __init__(self, registry: PluginMetricsRegistry, tags: Mapping[str, str]) -> None:
        self._registry = registry
        self.tags = dict(tags)
        self._lock = threading.Lock()
        self._names: set[MetricName] = set()
        self._sensors: dict[str, list[MetricName]] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("This PluginMetrics instance is closed")

    def metric_name(
        self, name: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> MetricName:
        self._check_open()
        extra = dict(tags or {})
        for tag in extra:
            if tag in self.tags:
                raise ValueError(f"Cannot use {tag} as a tag name")
        merged = {**self.tags, **{str(k): str(v) for k, v in extra.items()}}
        return MetricName(name, GROUP, description, tuple(merged.items()))

    def add_metric(self, metric_name: MetricName, value: Callable[[], float]) -> None:
        with self._lock:
            self._check_open()
            if metric_name in self._names:
                raise ValueError(f"Metric {metric_name.name} already exists")
            self._registry.register(metric_name, value, self)
            self._names.add(metric_name)

    def remove_metric(self, metric_name: MetricName) -> None:
        with self._lock:
            self._check_open()
            if metric_name not in self._names:
                raise ValueError(f"Unknown metric {metric_name.name}")
            self._names.discard(metric_name)
            self._registry.unregister(metric_name, self)

    def add_sensor(self, name: str) -> Sensor:
        with self._lock:
            self._check_open()
            if name in self._sensors:
                raise ValueError(f"Sensor {name} already exists")
            names: list[MetricName] = []
            self._sensors[name] = names

        def register(metric_name: MetricName, read: Callable[[], float]) -> None:
            self.add_metric(metric_name, read)
            names.append(metric_name)

        return Sensor(name, register)

    def remove_sensor(self, name: str) -> None:
        with self._lock:
            self._check_open()
            if name not in self._sensors:
                raise ValueError(f"Unknown sensor {name}")
            for metric_name in self._sensors.pop(name):
                self._names.discard(metric_name)
                self._registry.unregister(metric_name, self)

    def close(self) -> None:
        """Remove every metric this plugin registered; later calls raise. Idempotent."""
        with self._lock:
            self._closed = True
            names, self._names = self._names, set()
            self._sensors.clear()
        for metric_name in names:
            self._registry.unregister(metric_name, self)


class TaskPluginMetrics:
    """A task's handles: :attr:`task` (its context's) and its plugins'. Built with the runner,
    closed when the runner's thread ends."""

    def __init__(self, registry: PluginMetricsRegistry, tags: Mapping[str, str]) -> None:
        self._registry = registry
        self._tags = dict(tags)
        self.task = PluginMetricsImpl(registry, tags)
        self._handles = [self.task]

    def monitor(self, plugin: object, tag: str, value: str) -> None:
        """Hand ``plugin`` its handle if it is :class:`~connectrt.api.metrics.Monitorable`."""
        if isinstance(plugin, Monitorable):
            handle = PluginMetricsImpl(self._registry, {**self._tags, tag: value})
            self._handles.append(handle)
            plugin.with_plugin_metrics(handle)

    def monitor_all(
        self,
        converters: Mapping[str, object],
        stages: Iterable[Any] = (),
    ) -> TaskPluginMetrics:
        """Converters by kind (``key``/``value``/``header``) and transformation stages (each with
        ``alias``, ``transformation``, ``predicate``, ``predicate_alias``)."""
        for kind, converter in converters.items():
            self.monitor(converter, "converter", kind)
        seen: set[int] = set()
        for stage in stages:
            self.monitor(stage.transformation, "transformation", stage.alias)
            predicate = stage.predicate
            if predicate is not None and id(predicate) not in seen:
                seen.add(id(predicate))
                self.monitor(predicate, "predicate", stage.predicate_alias or "")
        return self

    def bind(self, runner: R) -> R:
        """Give ``runner`` (a TaskRunner) these handles; it closes them when its thread ends."""
        runner.plugin_metrics = self  # type: ignore[attr-defined]
        return runner

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
