"""End-to-end latency bookkeeping: weighted histogram samples, quantiles, the sink's timestamp
sample and the source's acknowledgement tracking (no Kafka: the pieces the runners call)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from connectrt.runtime.metrics import E2E_LATENCY_BUCKETS, LatencyHistogram, TaskMetrics, quantile
from connectrt.runtime.sink.latency import SAMPLE_SIZE, observe_put, timestamps_sample
from connectrt.runtime.source.latency import AckLatency


class Msg:
    def __init__(self, ts: int, kind: int = 1) -> None:
        self._ts = (kind, ts)

    def timestamp(self) -> tuple[int, int]:
        return self._ts


def test_a_sample_stands_for_the_whole_count_so_the_histogram_counts_every_record() -> None:
    h = LatencyHistogram(E2E_LATENCY_BUCKETS)
    h.observe_sample([0.002, 0.2, 20.0], 10)  # weights 4, 3, 3
    snap = h.snapshot()
    assert snap["count"] == 10
    assert snap["sum"] == pytest.approx(0.002 * 4 + 0.2 * 3 + 20.0 * 3)
    cumulative = dict(snap["buckets"])
    assert cumulative[0.0025] == 4 and cumulative[0.25] == 7 and cumulative[10.0] == 7
    assert cumulative[30.0] == 10
    h.observe_sample([], 5)  # nothing to stand for them: nothing observed
    h.observe_sample([1.0, 2.0], 1)  # fewer records than samples: the first counts
    assert h.snapshot()["count"] == 11


def test_quantiles_interpolate_inside_the_bucket_as_prometheus_does() -> None:
    h = LatencyHistogram((1.0, 2.0))
    h.observe_sample([0.5], 50)
    h.observe_sample([1.5], 50)
    buckets = h.snapshot()["buckets"]
    assert quantile(0.5, buckets) == pytest.approx(1.0)
    assert quantile(0.99, buckets) == pytest.approx(1.98)
    assert quantile(0.5, LatencyHistogram().snapshot()["buckets"]) is None
    h.observe_sample([100.0], 900)  # in +Inf: the highest finite bound
    assert quantile(0.99, h.snapshot()["buckets"]) == 2.0


def test_the_e2e_histogram_crosses_a_snapshot_with_its_own_bounds() -> None:
    remote = TaskMetrics("c", 0)
    remote.e2e_latency_seconds.observe_sample([120.0], 7)
    local = TaskMetrics("c", 0)
    local.apply_snapshot(remote.snapshot())
    assert local.e2e_latency_seconds.bounds == E2E_LATENCY_BUCKETS
    assert local.e2e_latency_seconds.snapshot() == remote.e2e_latency_seconds.snapshot()


def test_the_sink_samples_at_most_sample_size_timestamps_spread_over_the_batch() -> None:
    msgs = [Msg(1000 + i) for i in range(1000)]
    stamps = timestamps_sample(msgs)
    assert len(stamps) == SAMPLE_SIZE
    assert stamps[0] == 1000 and stamps[-1] >= 2000 - 1000 // SAMPLE_SIZE  # spread to the end
    assert timestamps_sample([Msg(5), Msg(0, kind=0)]) == [5]  # no timestamp: left out
    m = TaskMetrics("c", 0)
    now_ms = int(time.time() * 1000)
    observe_put(m, [now_ms - 3000, now_ms + 60_000], 9)  # a clock ahead counts as 0
    snap = m.e2e_latency_seconds.snapshot()
    assert snap["count"] == 9
    assert 3 * 5 <= snap["sum"] < 3 * 5 + 60  # five at >= 3 s, four at 0 s
    assert m.last_delivered_ms >= now_ms  # stuck-task detection reads it


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-70_000, 4_000_000), min_size=0, max_size=SAMPLE_SIZE),
    st.integers(0, 2000),
)
def test_observing_ages_is_observing_their_sample(ages_ms: list[int], count: int) -> None:
    """observe_ages (the sink's per-batch path, C-level when the sample is in one bucket) files
    what observe_sample of the ages in seconds, clamped at 0, files."""
    now_ms = 1_764_000_000_123.5
    stamps = [int(now_ms) - age for age in ages_ms]  # a negative age: a clock ahead of ours
    fast = LatencyHistogram(E2E_LATENCY_BUCKETS)
    fast.observe_ages(now_ms, stamps, count)
    plain = LatencyHistogram(E2E_LATENCY_BUCKETS)
    plain.observe_sample([max(0.0, (now_ms - ts) / 1000.0) for ts in stamps], count)
    assert fast.counts == plain.counts
    assert fast.total == pytest.approx(plain.total, rel=1e-9, abs=1e-6)


def test_the_sample_of_real_messages_is_spread_over_the_batch() -> None:
    for n in (1, 2, SAMPLE_SIZE, SAMPLE_SIZE + 1, 500):
        msgs = [Message(timestamp=(1, 1000 + i), value=b"") for i in range(n)]
        expected = [1000 + i * n // min(n, SAMPLE_SIZE) for i in range(min(n, SAMPLE_SIZE))]
        assert timestamps_sample(msgs) == expected
    no_time = Message(timestamp=(0, 0), value=b"")
    assert timestamps_sample([no_time, Message(timestamp=(2, 7), value=b"")]) == [7]
    assert timestamps_sample([]) == []


def test_the_source_observes_each_batch_once_its_end_is_acknowledged() -> None:
    metrics = TaskMetrics("c", 0)
    h = metrics.e2e_latency_seconds
    acks = AckLatency(metrics)
    t0 = time.monotonic()
    acks.sent(t0 - 2.0, 10, 10)
    acks.sent(t0, 5, 15)
    acks.acknowledged(15, 6)  # 9 acknowledged: not the whole first batch
    assert h.snapshot()["count"] == 0
    assert metrics.last_delivered_ms == 0
    acks.acknowledged(15, 5)
    assert h.snapshot()["count"] == 10 and h.total >= 20.0
    assert metrics.last_delivered_ms > 0
    acks.reset()  # a lost producer: its batches are forgotten
    acks.acknowledged(15, 0)
    assert h.snapshot()["count"] == 10


def test_a_stall_report_says_how_long_ago_the_task_last_delivered() -> None:
    from connectrt.runtime.tasks.liveness import CallClock, StallWatchdog, WatchedTask

    class Handle:
        def __init__(self) -> None:
            self.call_clock = CallClock()
            self.metrics = TaskMetrics("c", 0)

        def is_alive(self) -> bool:
            return True

        def current_stack(self) -> str:
            return "the stack"

    delivered, idle = Handle(), Handle()
    delivered.metrics.last_delivered_ms = int(time.time() * 1000) - 42_000
    for h in (delivered, idle):
        h.call_clock.enter("put")
        h.call_clock.entered -= 10.0  # inside put() for 10 s already
    watched = [WatchedTask("c", 0, delivered, 1.0, "log"), WatchedTask("c", 1, idle, 1.0, "log")]
    watchdog = StallWatchdog(lambda: watched, lambda *a: None)
    watchdog.check()
    report = watchdog.stall("c", 0)
    assert report is not None and report.delivered_ago_s is not None
    assert 42.0 <= report.delivered_ago_s < 42.0 + 60
    assert "last delivered records end to end 4" in report.trace()
    never = watchdog.stall("c", 1)
    assert never is not None and never.delivered_ago_s is None
    assert "delivered no record end to end since it started" in never.trace()
