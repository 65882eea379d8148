"""Test plugins that publish metrics of their own (KIP-877), one of each kind.

* :class:`MeteredSource`: the connector publishes ``task-configs-made``; each task publishes a
  ``batches`` sensor (CumulativeCount) and a ``records`` sensor (CumulativeSum) recorded once
  per ``poll()`` batch, and a ``last-record`` gauge. Config: ``topic``, ``records`` (how many
  in all, default 50), ``batch.size`` (default 10). Values are ``"<n>"``.
* :class:`CountingConverter`: a StringConverter counting the values it serialized.
* :class:`TaggingTransform` / :class:`EvenPredicate`: count the records they saw.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connectrt.api import (
    ConfigDef,
    Converter,
    CumulativeCount,
    CumulativeSum,
    Monitorable,
    PluginMetrics,
    Predicate,
    SchemaAndValue,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    Transformation,
)


class MeteredSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._made = 0
        metrics = self.context.plugin_metrics
        assert metrics is not None
        metrics.add_metric(
            metrics.metric_name("task-configs-made", "Task config sets generated"),
            lambda: self._made,
        )

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return MeteredSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        self._made += 1
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def version(self) -> str:
        return "1.0.0"


class MeteredSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.total = int(config.get("records", "50"))
        self.batch = int(config.get("batch.size", "10"))
        stored = self.context.offset_storage_reader.offset({"source": "metered"})
        self.next = int(stored["next"]) if stored else 0
        self._stop = threading.Event()
        metrics = self.context.plugin_metrics
        assert metrics is not None
        self.batches = metrics.add_sensor("batches")
        self.batches.add(metrics.metric_name("poll-batches", "Batches returned"), CumulativeCount())
        self.records = metrics.add_sensor("records")
        self.records.add(
            metrics.metric_name("records-polled", "Records returned", {"unit": "records"}),
            CumulativeSum(),
        )
        metrics.add_metric(metrics.metric_name("last-record", "Last number returned"), self._last)

    def _last(self) -> float:
        return float(self.next - 1)

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.total:
            self._stop.wait(0.2)
            return None
        end = min(self.total, self.next + self.batch)
        out = [
            SourceRecord({"source": "metered"}, {"next": n + 1}, self.topic, value=str(n))
            for n in range(self.next, end)
        ]
        self.next = end
        self.batches.record()
        self.records.record(len(out))
        return out

    def stop(self) -> None:
        self._stop.set()


class CountingConverter(Converter, Monitorable):
    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.converted = 0

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        metrics.add_metric(metrics.metric_name("values-converted"), lambda: self.converted)

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> Any:
        self.converted += 1
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        return SchemaAndValue(None, None if data is None else data.decode())


class TaggingTransform(Transformation[Any], Monitorable):
    def configure(self, config: Mapping[str, Any]) -> None:
        self.seen = 0

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        metrics.add_metric(metrics.metric_name("records-seen"), lambda: self.seen)

    def apply(self, record: Any) -> Any:
        self.seen += 1
        return record

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class EvenPredicate(Predicate[Any], Monitorable):
    def configure(self, config: Mapping[str, Any]) -> None:
        self.tested = 0

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        metrics.add_metric(metrics.metric_name("records-tested"), lambda: self.tested)

    def test(self, record: Any) -> bool:
        self.tested += 1
        return int(record.value) % 2 == 0

    def config_def(self) -> ConfigDef:
        return ConfigDef()
