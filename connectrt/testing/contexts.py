"""Task and connector contexts for driving a connector outside a worker (unit tests, benches).

* :class:`MemoryOffsetReader` - source offsets held in memory; ``commit(records)`` keeps the
  last offset per source partition, as the runtime does once records are acknowledged.
* :class:`StandaloneSourceTaskContext` - a source task's configs and offset reader (and, to
  test connector-defined transaction boundaries, a :class:`RecordingTransactionContext`).
* :class:`RecordingTransactionContext` - records ``commit_transaction``/``abort_transaction``
  requests (KIP-618) as ``("commit"|"abort", record or None)`` in ``requests``.
* :class:`RecordingSinkTaskContext` - a sink task's context that records what the task asks
  the runtime for (``rewinds``, ``timeouts``, ``commit_requests``, paused partitions) instead
  of acting on it, with an optional errant record reporter.
* :class:`RecordingConnectorContext` - records reconfiguration requests and raised errors.
* :class:`MetricsContext` - their common base: ``plugin_metrics`` (KIP-877) over a registry of
  its own, read back with :meth:`MetricsContext.metric_values`.

Not thread-safe beyond what CPython's list/dict operations give; one per task or connector.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from connectrt.api import (
    ErrantRecordReporter,
    OffsetStorageReader,
    PluginMetrics,
    SinkConnectorContext,
    SinkTaskContext,
    SourceConnectorContext,
    SourceRecord,
    SourceTaskContext,
    TopicPartition,
    TransactionContext,
)
from connectrt.runtime.plugins.metrics import PluginMetricsImpl, PluginMetricsRegistry

__all__ = [
    "MemoryOffsetReader",
    "MetricsContext",
    "RecordingConnectorContext",
    "RecordingSinkTaskContext",
    "RecordingTransactionContext",
    "StandaloneSourceTaskContext",
]


def _key(partition: Mapping[str, Any]) -> str:
    return json.dumps(dict(partition), sort_keys=True)


class MemoryOffsetReader(OffsetStorageReader):
    """Source offsets in memory, keyed by source partition (empty by default)."""

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any] | None] = {}

    def commit(self, records: Iterable[SourceRecord]) -> None:
        """Keep each record's offset as its partition's latest (records in order)."""
        for r in records:
            if r.source_partition is not None:
                offset = None if r.source_offset is None else dict(r.source_offset)
                self.stored[_key(r.source_partition)] = offset

    def put(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self.stored[_key(partition)] = dict(offset)

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        return [self.stored.get(_key(p)) for p in partitions]


class MetricsContext:
    """``plugin_metrics`` as a worker gives it (tagged ``metric_tags``), in a private registry;
    :meth:`metric_values` reads what the plugin published."""

    metric_tags: Mapping[str, str] = {"connector": "test", "task": "0"}
    _metrics: PluginMetricsImpl | None = None
    _registry: PluginMetricsRegistry | None = None

    @property
    def plugin_metrics(self) -> PluginMetrics:
        if self._metrics is None:
            self._registry = PluginMetricsRegistry()
            self._metrics = PluginMetricsImpl(self._registry, self.metric_tags)
        return self._metrics

    def metric_values(self) -> dict[str, float]:
        """``{metric name: current value}`` of what the plugin registered (values read now)."""
        if self._registry is None:
            return {}
        return {m["name"]: m["value"] for m in self._registry.snapshot()}


class RecordingTransactionContext(TransactionContext):
    """Records a task's transaction requests in ``requests``, in call order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, SourceRecord | None]] = []

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        self.requests.append(("commit", record))

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        self.requests.append(("abort", record))


class StandaloneSourceTaskContext(MetricsContext, SourceTaskContext):
    """``configs``, an offset reader (a fresh, empty :class:`MemoryOffsetReader` if none) and
    ``transaction_context`` (None unless given: what the task sees when it does not run with
    ``transaction.boundary=connector``)."""

    def __init__(
        self,
        config: Mapping[str, str],
        offsets: OffsetStorageReader | None = None,
        transactions: TransactionContext | None = None,
    ) -> None:
        self._config = config
        self._offsets = offsets if offsets is not None else MemoryOffsetReader()
        self._transactions = transactions

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._transactions

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._offsets


class RecordingSinkTaskContext(MetricsContext, SinkTaskContext):
    """Records rewinds, timeouts, commit requests and pauses, as a runtime would apply them."""

    def __init__(
        self, config: Mapping[str, str], reporter: ErrantRecordReporter | None = None
    ) -> None:
        self._config = dict(config)
        self._reporter = reporter
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeouts: list[int] = []
        self.commit_requests = 0
        self.paused: set[TopicPartition] = set()

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    def offset(self, offsets: Any, offset: int | None = None) -> None:
        if isinstance(offsets, TopicPartition):
            offsets = {offsets: offset}
        self.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        return set()

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)

    def request_commit(self) -> None:
        self.commit_requests += 1

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter


class RecordingConnectorContext(MetricsContext, SourceConnectorContext, SinkConnectorContext):
    """A connector context outside any worker: reconfiguration requests and errors are
    recorded; source connectors read offsets from ``offsets`` (empty by default)."""

    metric_tags: Mapping[str, str] = {"connector": "test"}

    def __init__(self, offsets: OffsetStorageReader | None = None) -> None:
        self.reconfigurations = 0
        self.errors: list[BaseException] = []
        self._offsets = offsets if offsets is not None else MemoryOffsetReader()

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1

    def raise_error(self, error: BaseException) -> None:
        self.errors.append(error)

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._offsets
