"""MetricsHistory's rates and lag series, and the console's SVG sparklines."""

from __future__ import annotations

import time

from connectrt.rest.console.charts import sparkline
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.metrics_history import MetricsHistory


def test_rates_per_task_from_counter_deltas_and_restarts_count_from_zero() -> None:
    now = [1000.0]
    sink = TaskMetrics("c", 0)
    sink.partition_lag = lambda: {("t", 0): 3, ("t", 1): 4}
    other = TaskMetrics("d", 0)
    tasks = [sink, other]
    history = MetricsHistory(lambda: tasks, interval=5, window=60, clock=lambda: now[0])
    history.sample()
    sink.records_polled = 50
    now[0] += 5
    history.sample()
    restarted = TaskMetrics("c", 0, records_polled=10)  # a restart: new, smaller counters
    tasks[0] = restarted
    now[0] += 5
    history.sample()
    points = history.series("c")[0]
    assert [p.rate for p in points] == [10.0, 2.0]
    assert points[0].lag == 7 and points[1].lag is None  # the new task has no consumer yet
    assert history.series("d")[0][0].rate == 0.0
    assert history.series("missing") == {}


def test_samples_older_than_the_window_are_dropped() -> None:
    now = [0.0]
    m = TaskMetrics("c", 0)
    history = MetricsHistory(lambda: [m], interval=5, window=20, clock=lambda: now[0])
    for _ in range(10):
        history.sample()
        m.records_polled += 5
        now[0] += 5
    points = history.series("c")[0]
    assert len(points) == 4  # 5 samples in the window give 4 rates
    assert all(p.rate == 1.0 for p in points)


def test_sampling_thread_starts_and_stops() -> None:
    m = TaskMetrics("c", 0)
    history = MetricsHistory(lambda: [m], interval=0.01, window=1)
    history.start()
    try:
        deadline = 200
        while not history.series("c") and deadline:
            m.records_polled += 1
            deadline -= 1
            time.sleep(0.01)
        assert history.series("c")
    finally:
        history.stop()


def test_sparkline_scales_and_escapes() -> None:
    svg = sparkline([0.0, 5.0, 10.0], 'task <0> "rate"')
    assert "<polyline" in svg and 'points="0.0,58.0 150.0,31.0 300.0,4.0"' in svg
    assert "&lt;0&gt;" in svg and "<0>" not in svg
    empty = sparkline([1.0], "t")
    assert "collecting samples" in empty and "<polyline" not in empty


def test_latency_quantiles_cover_the_window_only_and_survive_a_restart() -> None:
    now = [0.0]
    m = TaskMetrics("c", 0)
    tasks = [m]
    m.e2e_latency_seconds.observe_sample([60.0], 1000)  # before the first sample
    history = MetricsHistory(lambda: tasks, interval=5, window=20, clock=lambda: now[0])
    history.sample()
    p99 = history.latency("c")[0][1]
    assert p99 is not None and 30.0 < p99 <= 60.0  # a young task: its whole histogram
    now[0] += 5
    history.sample()
    p99 = history.latency("c")[0][1]
    assert p99 is not None and 30.0 < p99 <= 60.0  # still young: the minute-long ones count
    for _ in range(5):  # its first samples leave the 20 s window
        now[0] += 5
        history.sample()
    assert history.latency("c")[0] == (None, None)  # nothing observed within the window
    m.e2e_latency_seconds.observe_sample([0.003], 100)
    now[0] += 5
    history.sample()
    p50, p99 = history.latency("c")[0]
    assert p50 is not None and p99 is not None
    assert 0.0025 < p50 <= p99 <= 0.005  # the old minute-long ones are outside the window
    tasks[0] = TaskMetrics("c", 0)  # restarted: counts from zero again
    tasks[0].e2e_latency_seconds.observe_sample([0.2], 10)
    now[0] += 5
    history.sample()
    p50, _ = history.latency("c")[0]
    assert p50 is not None and 0.1 < p50 <= 0.25
    assert history.latency("missing") == {}
