"""A source task's end-to-end latency: ``poll()`` returned -> Kafka acknowledged the record.

The producer reports failed deliveries only (``delivery.report.only.error``): a callback per
acknowledged record would cost a Python call per record. Instead, :class:`AckLatency` keeps one
entry per produced batch (when its ``poll()`` returned, and the running count of records
produced up to its end), and after each iteration of the poll loop asks the producer how many
records still wait for acknowledgement (``len(producer)``, one C call): every batch whose end
lies within ``produced - waiting`` is acknowledged, and its records' latency (now - poll time)
is filed in :attr:`~connectrt.runtime.metrics.TaskMetrics.e2e_latency_seconds` with one weighted
observation (and the time in ``last_delivered_ms``, which stuck-task detection reports).
Resolution is one loop iteration: a ``poll()`` that blocks while the source has
no data adds its wait to the batch acknowledged during it (a bias upward, never downward).
Records an exactly-once task writes to the offsets topic wait in the same queue and only delay
the observation until they are acknowledged too.

Used on the task's thread only.
"""

from __future__ import annotations

import time
from collections import deque

from connectrt.runtime.metrics import TaskMetrics

__all__ = ["AckLatency"]


class AckLatency:
    """Produced batches not yet acknowledged, and their observation (module docstring)."""

    __slots__ = ("_metrics", "_pending")

    def __init__(self, metrics: TaskMetrics) -> None:
        self._metrics = metrics
        self._pending: deque[tuple[float, int, int]] = deque()  # (polled, end, count)

    def sent(self, polled: float, count: int, end: int) -> None:
        """``count`` records polled at ``polled`` (``time.monotonic()``) were produced; ``end``
        is the running produced count after them."""
        if count > 0:
            self._pending.append((polled, end, count))

    def acknowledged(self, produced: int, waiting: int) -> None:
        """``produced`` records were produced so far, ``waiting`` of them not acknowledged."""
        pending = self._pending
        if not pending:
            return
        acked = produced - waiting
        if pending[0][1] > acked:
            return
        now = time.monotonic()
        histogram = self._metrics.e2e_latency_seconds
        while pending and pending[0][1] <= acked:
            polled, _, count = pending.popleft()
            histogram.observe_sample((now - polled,), count)
        self._metrics.last_delivered_ms = int(time.time() * 1000)

    def reset(self) -> None:
        """Forget the batches in flight (their producer was dropped: a restart in place)."""
        self._pending.clear()
