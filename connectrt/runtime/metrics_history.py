"""The last minutes of every task's throughput and consumer lag, for the web console's charts.

:class:`MetricsHistory` samples the task metrics (``TaskMetrics.records_polled``: records a
source's ``poll()`` returned or a sink consumed; and a sink's total consumer lag) every
``interval`` seconds and keeps ``window`` seconds of samples. :meth:`MetricsHistory.series`
turns them into per-task points of (time, records per second, lag). A counter that went down
(the task was restarted with new metrics) counts from zero again, never as a negative rate.

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

from connectrt.runtime.metrics import TaskMetrics

__all__ = ["MetricsHistory", "TaskPoint"]

# One sample: when, and per (connector, task) the records counter and the total lag (None for
# a task without a consumer).
_Sample = tuple[float, dict[tuple[str, int], tuple[int, int | None]]]


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
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="metrics-history", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5)

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a metrics read must never end the sampling
                pass
            if self._stop.wait(self.interval):
                return

    def sample(self) -> None:
        """Take one sample now."""
        values: dict[tuple[str, int], tuple[int, int | None]] = {}
        for m in self._tasks():
            lag = m.lag() if m.partition_lag is not None else {}
            total = sum(lag.values()) if m.partition_lag is not None else None
            values[(m.connector, m.task)] = (m.records_polled, total)
        now = self._clock()
        with self._lock:
            self._samples.append((now, values))
            while self._samples and self._samples[0][0] < now - self.window:
                self._samples.popleft()

    def series(self, connector: str) -> dict[int, list[TaskPoint]]:
        """Per task of ``connector``: its points, oldest first (one per sample after the first
        in which the task appears)."""
        with self._lock:
            samples = list(self._samples)
        out: dict[int, list[TaskPoint]] = {}
        previous: dict[int, tuple[float, int]] = {}
        for when, values in samples:
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
