"""``GET /metrics``: the worker's metrics in Prometheus' (or OpenMetrics') text format.

:class:`MetricsExposition` holds one prometheus-client registry per REST app with the
standard process, GC and platform collectors and a :class:`WorkerCollector` that turns the
herder's metrics snapshot (:meth:`WorkerOverview.metrics_snapshot`: states, the counters and
histograms the task runners keep, sink consumer lag) into metric families at scrape time.
Nothing is kept here between scrapes: a deleted connector's series disappear with it.

Metric names (unchanged from the hand-written exposition this replaces, plus the new ones):
``connectrt_connector_state``, ``connectrt_task_state`` (1 for the current state),
``connectrt_task_<counter>_total``, ``connectrt_task_{batch,put,poll,commit}_seconds``
and ``connectrt_task_e2e_latency_seconds`` (histograms), ``connectrt_task_consumer_lag`` (per
sink partition), ``connectrt_plugin_<name>``
(KIP-877: what plugins registered), ``connectrt_uptime_seconds``,
and prometheus-client's ``process_*``, ``python_gc_*`` and ``python_info``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = ["COUNTERS", "HISTOGRAMS", "MetricsExposition", "WorkerCollector"]

_STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING")
# TaskMetrics counter -> help text; exposed as connectrt_task_<name>_total.
COUNTERS = {
    "records_polled": "Records returned by poll() (source) or consumed from Kafka (sink)",
    "records_produced": "Source records acknowledged by Kafka",
    "records_put": "Sink records accepted by put()",
    "records_committed": "Records whose offsets were committed",
    "records_skipped": "Records dropped by transforms or tolerated errors",
    "offset_commits": "Successful offset commits",
    "offset_commit_failures": "Failed or postponed offset commits",
    "transactions_aborted": "Exactly-once source transactions aborted",
    "transaction_restarts": "Exactly-once source task restarts after a transaction was lost to "
    "the broker",
    "errors": "Task failures",
    "retries": "Retried poll()/put() calls after a RetriableError",
    "batches": "Batches processed",
    "deadletterqueue_produce_requests": "Records written to the dead letter queue",
    "deadletterqueue_produce_failures": "Dead letter queue writes that failed",
    "share_acquired": "Share-group sink: records acquired from the share group",
    "share_accepted": "Share-group sink: records acknowledged ACCEPT (written or sent to the DLQ)",
    "share_released": "Share-group sink: records acknowledged RELEASE (delivered again)",
    "share_rejected": "Share-group sink: records acknowledged REJECT (archived unwritten)",
    "share_archived": "Share-group sink: records released on their last delivery (archived by "
    "the broker past share.delivery.count.limit)",
}
# TaskMetrics histogram -> help text; exposed as connectrt_task_<name>.
HISTOGRAMS = {
    "batch_seconds": "Time spent converting and delivering one batch",
    "put_seconds": "Time in SinkTask.put() per call",
    "poll_seconds": "Time in SourceTask.poll() per call",
    "commit_seconds": "Time of one offset commit (flush/pre_commit and the commit itself)",
    "e2e_latency_seconds": "End-to-end latency per record: sink, the record's Kafka timestamp "
    "to put() returned; source, poll() returned to Kafka's acknowledgement (per batch, from a "
    "sample of its records)",
}


class WorkerCollector(Collector):
    """Metric families from ``snapshot()`` (the herder's metrics snapshot), built per scrape."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snapshot = self._snapshot()
        connectors = snapshot["connectors"]
        state = GaugeMetricFamily(
            "connectrt_connector_state",
            "1 for the connector's current state, 0 otherwise.",
            labels=["connector", "type", "state"],
        )
        task_state = GaugeMetricFamily(
            "connectrt_task_state",
            "1 for the task's current state, 0 otherwise.",
            labels=["connector", "task", "state"],
        )
        for name, info in sorted(connectors.items()):
            for s in _STATES:
                state.add_metric([name, info["type"], s], 1 if info["state"] == s else 0)
            for task, current in sorted(info["tasks"].items()):
                for s in _STATES:
                    task_state.add_metric([name, str(task), s], 1 if current == s else 0)
        yield state
        yield task_state
        stalled_tasks = {(c, t) for c, t in snapshot.get("stalled", ())}
        stalled = GaugeMetricFamily(
            "connectrt_task_stalled",
            "1 while the task is stuck in one call longer than task.stall.timeout.ms, 0 otherwise.",
            labels=["connector", "task"],
        )
        for name, info in sorted(connectors.items()):
            for task in sorted(info["tasks"]):
                stalled.add_metric([name, str(task)], 1 if (name, task) in stalled_tasks else 0)
        yield stalled

        tasks = snapshot["tasks"]
        for counter, help_text in COUNTERS.items():
            family = CounterMetricFamily(
                f"connectrt_task_{counter}", f"{help_text}.", labels=["connector", "task"]
            )
            for t in tasks:
                family.add_metric([t["connector"], str(t["task"])], t[counter])
            yield family
        for name, help_text in HISTOGRAMS.items():
            hist = HistogramMetricFamily(
                f"connectrt_task_{name}", f"{help_text}.", labels=["connector", "task"]
            )
            for t in tasks:
                h = t[name]
                buckets = [(_bound(b), c) for b, c in h["buckets"]]
                hist.add_metric([t["connector"], str(t["task"])], buckets, h["sum"])
            yield hist
        lag = GaugeMetricFamily(
            "connectrt_task_consumer_lag",
            "Records between a sink task's position and its partition's high watermark (from "
            "fetch responses; holds its last value while the partition is paused).",
            labels=["connector", "task", "topic", "partition"],
        )
        for t in tasks:
            for p in t["partition_lag"]:
                lag.add_metric(
                    [t["connector"], str(t["task"]), p["topic"], str(p["partition"])], p["lag"]
                )
        yield lag
        yield from _plugin_families(snapshot.get("plugins", ()))
        yield GaugeMetricFamily(
            "connectrt_uptime_seconds",
            "Seconds since the worker started.",
            value=snapshot["uptime_seconds"],
        )


def _name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


def _plugin_families(metrics: Iterable[dict[str, Any]]) -> Iterator[Metric]:
    """KIP-877 plugin metrics: one gauge family per metric name, ``connectrt_plugin_<name>``
    (non-alphanumerics become ``_``), each sample labelled with its metric's tags."""
    families: dict[str, Metric] = {}
    for m in metrics:
        name = "connectrt_plugin_" + _name(m["name"])
        family = families.get(name)
        if family is None:
            help_text = m["description"] or "A metric a plugin registered (KIP-877)."
            family = families[name] = Metric(name, help_text, "gauge")
        elif not family.documentation and m["description"]:
            family.documentation = m["description"]
        labels = {_name(k): str(v) for k, v in m["tags"].items()}
        family.add_sample(name, labels, float(m["value"]))
    for name in sorted(families):
        yield families[name]


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


class MetricsExposition:
    """One registry: process, GC and platform collectors plus the worker's metrics. Thread-safe
    (each scrape builds its own families)."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(WorkerCollector(snapshot))

    def render(self, accept: str | None) -> tuple[bytes, str]:
        """The body and content type for a scraper's ``Accept`` header (OpenMetrics when it
        asks for it, else Prometheus text 0.0.4)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type
