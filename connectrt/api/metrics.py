"""Plugin metrics (KIP-877): what a plugin uses to publish metrics of its own.

A connector or task finds its :class:`PluginMetrics` at ``context.plugin_metrics``; a
converter, header converter, transformation or predicate that also subclasses
:class:`Monitorable` is handed one through :meth:`Monitorable.with_plugin_metrics` right after
it is configured. The runtime tags every metric with where the plugin runs (``connector``, then
``task``, then ``converter`` = ``key``/``value``/``header``, ``transformation`` = alias or
``predicate`` = alias, as Kafka does), shows it in ``GET /metrics`` and removes it when the
plugin is stopped or closed.

Two ways to publish:

* ``add_metric(name, lambda: value)``: a gauge read when metrics are scraped, for values the
  plugin keeps anyway (a queue length, a lag);
* ``add_sensor(name)`` and ``sensor.add(metric_name, CumulativeCount())`` (or ``Avg``, ``Max``,
  ...), then ``sensor.record(value)``: the runtime keeps the statistic.

The runtime does no per-record work for plugin metrics; ``Sensor.record`` costs what its stats
cost (a few additions). A plugin should record per batch where it can.

Threading: a plugin records on its own thread (a task's thread, or the connector's); the values
are read from the REST threads. Recording is not locked: a scrape may see a statistic between
two updates (Avg's sum and count), never a torn number.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "Avg",
    "CumulativeCount",
    "CumulativeSum",
    "Max",
    "MeasurableStat",
    "MetricName",
    "Min",
    "Monitorable",
    "PluginMetrics",
    "Sensor",
    "Value",
]


@dataclass(frozen=True)
class MetricName:
    """A metric's identity: its name, group (``plugins`` for plugin metrics), description and
    tags (in order: the runtime's first, then the plugin's)."""

    name: str
    group: str
    description: str
    tags: tuple[tuple[str, str], ...] = ()

    @property
    def tag_map(self) -> dict[str, str]:
        return dict(self.tags)


class MeasurableStat(abc.ABC):
    """A statistic a :class:`Sensor` updates: ``record`` per value, ``measure`` when read."""

    @abc.abstractmethod
    def record(self, value: float) -> None: ...

    @abc.abstractmethod
    def measure(self) -> float: ...


class CumulativeCount(MeasurableStat):
    """How many values were recorded."""

    def __init__(self) -> None:
        self._count = 0

    def record(self, value: float) -> None:
        self._count += 1

    def measure(self) -> float:
        return float(self._count)


class CumulativeSum(MeasurableStat):
    """The sum of the values recorded."""

    def __init__(self) -> None:
        self._sum = 0.0

    def record(self, value: float) -> None:
        self._sum += value

    def measure(self) -> float:
        return self._sum


class Avg(MeasurableStat):
    """The mean of the values recorded (NaN before the first)."""

    def __init__(self) -> None:
        self._sum = 0.0
        self._count = 0

    def record(self, value: float) -> None:
        self._sum += value
        self._count += 1

    def measure(self) -> float:
        return self._sum / self._count if self._count else math.nan


class Max(MeasurableStat):
    """The largest value recorded (NaN before the first)."""

    def __init__(self) -> None:
        self._max = -math.inf

    def record(self, value: float) -> None:
        if value > self._max:
            self._max = value

    def measure(self) -> float:
        return self._max if self._max != -math.inf else math.nan


class Min(MeasurableStat):
    """The smallest value recorded (NaN before the first)."""

    def __init__(self) -> None:
        self._min = math.inf

    def record(self, value: float) -> None:
        if value < self._min:
            self._min = value

    def measure(self) -> float:
        return self._min if self._min != math.inf else math.nan


class Value(MeasurableStat):
    """The last value recorded (NaN before the first)."""

    def __init__(self) -> None:
        self._value = math.nan

    def record(self, value: float) -> None:
        self._value = value

    def measure(self) -> float:
        return self._value


class Sensor:
    """Records values into its stats; each stat is published under its own metric name.

    Made by :meth:`PluginMetrics.add_sensor`; ``register(metric_name, read)`` is how the
    sensor publishes a stat (the runtime's hook).
    """

    def __init__(self, name: str, register: Callable[[MetricName, Callable[[], float]], None]):
        self.name = name
        self._register = register
        self._stats: list[MeasurableStat] = []

    def add(self, metric_name: MetricName, stat: MeasurableStat) -> Sensor:
        """Publish ``stat`` as ``metric_name`` (ValueError if that name is already used)."""
        self._register(metric_name, stat.measure)
        self._stats.append(stat)
        return self

    def record(self, value: float = 1.0) -> None:
        """Record one value into every stat (a count counts calls; a sum adds ``value``)."""
        for stat in self._stats:
            stat.record(value)


class PluginMetrics(abc.ABC):
    """Registers a plugin's metrics; every metric it made is removed when the plugin stops.

    The methods raise ValueError for a duplicate or unknown name, and for plugin tags that
    collide with the runtime's (``connector``, ``task``, ...); RuntimeError once the plugin
    has stopped.
    """

    @abc.abstractmethod
    def metric_name(
        self, name: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> MetricName:
        """A name in group ``plugins`` with the runtime's tags followed by ``tags``."""

    @abc.abstractmethod
    def add_metric(self, metric_name: MetricName, value: Callable[[], float]) -> None:
        """Publish ``value()`` (called when metrics are read; keep it cheap)."""

    @abc.abstractmethod
    def remove_metric(self, metric_name: MetricName) -> None: ...

    @abc.abstractmethod
    def add_sensor(self, name: str) -> Sensor:
        """A new sensor (names are per plugin: two plugins may both have a ``batches``)."""

    @abc.abstractmethod
    def remove_sensor(self, name: str) -> None:
        """Remove the sensor and every metric of its stats."""


class Monitorable(abc.ABC):
    """A converter, header converter, transformation or predicate that publishes metrics."""

    @abc.abstractmethod
    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        """Called once, after ``configure`` and before the first record."""
