"""TaskMetrics' histograms and lag, the put/poll timing wrapper, and their exposition."""

from __future__ import annotations

from typing import Any

import orjson
from prometheus_client.parser import text_string_to_metric_families

from connectrt.api import SinkRecord, SinkTask, SourceRecord, SourceTask
from connectrt.rest.metrics import MetricsExposition
from connectrt.runtime.metrics import LATENCY_BUCKETS, LatencyHistogram, TaskMetrics
from connectrt.runtime.tasks.timing import time_task_calls


def test_histogram_buckets_are_cumulative_and_bounds_inclusive() -> None:
    h = LatencyHistogram()
    for seconds in (0.0005, 0.0006, 0.2, 100.0):
        h.observe(seconds)
    snap = h.snapshot()
    buckets = dict(snap["buckets"])
    assert buckets[0.0005] == 1  # le is inclusive
    assert buckets[0.001] == 2
    assert buckets[0.25] == 3
    assert buckets[30.0] == 3
    assert buckets[float("inf")] == 4 == snap["count"]
    assert abs(snap["sum"] - 100.2011) < 1e-9
    assert [b for b, _ in snap["buckets"]][:-1] == list(LATENCY_BUCKETS)


def test_lag_probe_failures_read_as_no_lag() -> None:
    m = TaskMetrics("c", 0)
    assert m.lag() == {}

    def broken() -> dict[tuple[str, int], int]:
        raise RuntimeError("Consumer closed")

    m.partition_lag = broken
    assert m.lag() == {}
    m.partition_lag = lambda: {("t", 2): 7}
    assert m.snapshot()["partition_lag"] == [{"topic": "t", "partition": 2, "lag": 7}]


class _Sink(SinkTask):
    def start(self, config: Any) -> None: ...
    def put(self, records: list[SinkRecord]) -> None:
        self.seen = len(records)

    def stop(self) -> None: ...


class _Source(SourceTask):
    def start(self, config: Any) -> None: ...
    def poll(self) -> list[SourceRecord] | None:
        raise ValueError("poll failed")

    def stop(self) -> None: ...


def test_put_and_poll_are_timed_even_when_they_raise() -> None:
    sink, metrics = _Sink(), TaskMetrics("s", 0)
    assert time_task_calls(sink, metrics)
    sink.put([])
    assert sink.seen == 0 and metrics.put_seconds.snapshot()["count"] == 1
    source, source_metrics = _Source(), TaskMetrics("src", 1)
    assert time_task_calls(source, source_metrics)
    try:
        source.poll()
    except ValueError:
        pass
    assert source_metrics.poll_seconds.snapshot()["count"] == 1
    assert source_metrics.put_seconds.snapshot()["count"] == 0
    assert not time_task_calls(object(), TaskMetrics("x", 0))


def test_exposition_keeps_the_existing_names_and_adds_histograms_and_lag() -> None:
    m = TaskMetrics("c", 0, records_polled=5)
    m.observe_batch(0.003)
    m.partition_lag = lambda: {("t", 1): 4}
    snapshot = {
        "connectors": {"c": {"state": "RUNNING", "type": "sink", "tasks": {0: "FAILED"}}},
        "tasks": [m.snapshot()],
        "uptime_seconds": 2.0,
    }
    body, content_type = MetricsExposition(lambda: snapshot).render(None)
    assert content_type.startswith("text/plain; version=0.0.4")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
    }
    task = (("connector", "c"), ("task", "0"))
    assert samples[("connectrt_task_records_polled_total", task)] == 5
    assert samples[("connectrt_task_batch_seconds_count", task)] == 1
    assert samples[("connectrt_task_batch_seconds_sum", task)] == 0.003
    assert (
        samples[("connectrt_task_state", (("connector", "c"), ("state", "FAILED"), ("task", "0")))]
        == 1
    )
    lag_labels = (("connector", "c"), ("partition", "1"), ("task", "0"), ("topic", "t"))
    assert samples[("connectrt_task_consumer_lag", lag_labels)] == 4
    assert samples[("connectrt_uptime_seconds", ())] == 2.0
    assert any(name.startswith("python_gc_") for name, _ in samples)


def _remote_task_metrics() -> TaskMetrics:
    remote = TaskMetrics("c", 1)
    remote.records_polled, remote.records_put, remote.batch_seconds_max = 61, 11, 0.25
    for seconds in (0.0004, 0.02, 0.02, 45.0):
        remote.put_seconds.observe(seconds)
    remote.partition_lag = lambda: {("orders", 0): 50, ("orders", 3): 2}
    return remote


def test_a_remote_tasks_snapshot_is_applied_whole_lag_included() -> None:
    """A task process's or Spark task's snapshot, applied to the worker's copy, reads back as
    the remote task's own: counters, histograms and the consumer lag (which a copy by
    attribute used to lose: the lag is computed at read time)."""
    remote = _remote_task_metrics()
    local = TaskMetrics("c", 1)
    local.apply_snapshot(remote.snapshot())
    assert local.snapshot() == remote.snapshot()
    assert local.lag() == {("orders", 0): 50, ("orders", 3): 2}
    assert isinstance(local.put_seconds, LatencyHistogram)


def test_a_snapshot_that_crossed_json_applies_the_same() -> None:
    """Over the status topic (Spark) the snapshot is JSON: tuples become lists and the +Inf
    bound null."""
    remote = _remote_task_metrics()
    local = TaskMetrics("c", 1)
    local.apply_snapshot(orjson.loads(orjson.dumps(remote.snapshot())))
    assert local.snapshot() == remote.snapshot()


def test_a_later_snapshot_replaces_the_earlier_one() -> None:
    local = TaskMetrics("c", 1)
    local.apply_snapshot(_remote_task_metrics().snapshot())
    drained = TaskMetrics("c", 1)
    drained.records_put = 61
    local.apply_snapshot(drained.snapshot())
    assert local.records_put == 61 and local.lag() == {}
    assert local.put_seconds.snapshot()["count"] == 0


def test_malformed_snapshot_values_are_ignored() -> None:
    local = TaskMetrics("c", 1)
    local.records_put = 3
    local.apply_snapshot(
        {
            "connector": "other",
            "task": 9,
            "records_put": "many",
            "errors": True,
            "put_seconds": {"buckets": [[0.1, 1]], "sum": 0.1},
            "partition_lag": [{"topic": "t"}, "x", {"topic": "t", "partition": 0, "lag": 4}],
            "unknown_counter": 5,
        }
    )
    assert (local.connector, local.task, local.records_put, local.errors) == ("c", 1, 3, 0)
    assert local.put_seconds.snapshot()["count"] == 0
    assert local.lag() == {("t", 0): 4}
