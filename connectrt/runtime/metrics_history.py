"""The last minutes of every task's throughput and consumer lag, for the web console's charts.

:class:`MetricsHistory` samples the task metrics (``TaskMetrics.records_polled``: records a
source's ``poll()`` returned or a sink consumed; and a sink's total consumer lag) every
``interval`` seconds and keeps ``window`` seconds of samples. :meth:`MetricsHistory.series`
turns them into per-task points of (time, records per second, lag). A counter that went down
(the task was restarted with new metrics) counts from zero again, never as a negative rate.
:meth:`MetricsHistory.latency` answers a task's end-to-end latency quantiles over the window,
from the difference of its ``e2e_latency_seconds`` histogram between the oldest and the newest
sample, or its whole histogram while the task is younger than the window (or restarted within
it).

Lifecycle: the herder calls :meth:`start` once it runs and :meth:`stop` when it stops; a daemon
thread takes the samples. Threading: :meth:`sample` runs on that thread (or a test's);
:meth:`series` may be called from any thread; both take the one lock for a copy of the samples.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from connectrt.periodic import Periodic
from connectrt.runtime.metrics import TaskMetrics, quantile

__all__ = ["MetricsHistory", "TaskPoint"]

# One sample: when, per (connector, task) the records counter and the total lag (None for a
# task without a consumer), and per (connector, task) its end-to-end latency histogram's
# cumulative buckets.
_Buckets = list[tuple[float, int]]
_Sample = tuple[
    float, dict[tuple[str, int], tuple[int, int | None]], dict[tuple[str, int], _Buckets]
]


@dataclass(frozen=True)
class TaskPoint:
    """One point of a task's series: ``time`` (epoch seconds), ``rate`` (records/s since the
    previous sample) and ``lag`` (records behind, summed over partitions; None for sources)."""

    time: float
    rate: float
    lag: int | None


class MetricsHistory:
    """Samples of the metrics ``tasks()`` returns (see the module docstring)."""

    def __init__(
        self,
        tasks: Callable[[], list[TaskMetrics]],
        interval: float = 5.0,
        window: float = 900.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._tasks = tasks
        self.interval = interval
        self.window = window
        self._clock = clock
        self._samples: deque[_Sample] = deque(maxlen=int(window / interval) + 2)
        self._lock = threading.Lock()
        # Tasks some of whose samples left the window: their latency is measured from the
        # oldest sample kept; the others' from their start (their whole histogram).
        self._dropped: set[tuple[str, int]] = set()
        self._ticks = Periodic("metrics-history", self._tick, interval, at_once=True)

    def start(self) -> None:
        self._ticks.start()

    def stop(self) -> None:
        self._ticks.stop(5)

    def _tick(self) -> None:
        try:
            self.sample()
        except Exception:  # a metrics read must never end the sampling
            pass

    def sample(self) -> None:
        """Take one sample now."""
        values: dict[tuple[str, int], tuple[int, int | None]] = {}
        latencies: dict[tuple[str, int], _Buckets] = {}
        for m in self._tasks():
            lag = m.lag() if m.partition_lag is not None else {}
            total = sum(lag.values()) if m.partition_lag is not None else None
            values[(m.connector, m.task)] = (m.records_polled, total)
            latencies[(m.connector, m.task)] = m.e2e_latency_seconds.snapshot()["buckets"]
        now = self._clock()
        with self._lock:
            if len(self._samples) == self._samples.maxlen:
                self._dropped.update(self._samples[0][2])
            self._samples.append((now, values, latencies))
            while self._samples and self._samples[0][0] < now - self.window:
                self._dropped.update(self._samples.popleft()[2])
            self._dropped &= set(values)  # forget tasks that are gone

    def series(self, connector: str) -> dict[int, list[TaskPoint]]:
        """Per task of ``connector``: its points, oldest first (one per sample after the first
        in which the task appears)."""
        with self._lock:
            samples = list(self._samples)
        out: dict[int, list[TaskPoint]] = {}
        previous: dict[int, tuple[float, int]] = {}
        for when, values, _ in samples:
            for (name, task), (count, lag) in values.items():
                if name != connector:
                    continue
                before = previous.get(task)
                previous[task] = (when, count)
                if before is None:
                    continue
                elapsed = when - before[0]
                delta = count - before[1] if count >= before[1] else count
                rate = delta / elapsed if elapsed > 0 else 0.0
                out.setdefault(task, []).append(TaskPoint(when, rate, lag))
        return out

    def latency(self, connector: str) -> dict[int, tuple[float | None, float | None]]:
        """Per task of ``connector``: its end-to-end latency ``(p50, p99)`` in seconds over the
        window (None while nothing was observed in it): the observations since the oldest
        sample kept, or since the task started if that sample is its first."""
        with self._lock:
            samples = list(self._samples)
            dropped = set(self._dropped)
        first: dict[int, _Buckets] = {}
        last: dict[int, _Buckets] = {}
        for _, _, latencies in samples:
            for (name, task), buckets in latencies.items():
                if name == connector:
                    first.setdefault(task, buckets)
                    last[task] = buckets
        out: dict[int, tuple[float | None, float | None]] = {}
        for task, newest in last.items():
            diff = _difference(newest, first[task]) if (connector, task) in dropped else newest
            out[task] = (quantile(0.5, diff), quantile(0.99, diff))
        return out


def _difference(newest: _Buckets, oldest: _Buckets) -> _Buckets:
    """The observations of ``newest`` not in ``oldest``; all of ``newest`` when ``oldest`` is
    not an earlier state of it (the task restarted with new metrics)."""
    if len(oldest) != len(newest):
        return newest
    diff = [
        (bound, count - before) for (bound, count), (_, before) in zip(newest, oldest, strict=True)
    ]
    return newest if any(count < 0 for _, count in diff) else diff
