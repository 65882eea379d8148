"""A sink task's end-to-end latency: a record's Kafka timestamp -> ``put()`` returned.

Batch-native: per consumed batch, :func:`timestamps_sample` reads the timestamps of an even
sample of at most :data:`SAMPLE_SIZE` messages (never one Python object per record), and once
``put()`` took the batch :func:`observe_put` files the sample in
:attr:`~connectrt.runtime.metrics.TaskMetrics.e2e_latency_seconds`, weighted so that the
histogram's count grows by the number of records put, and notes the time in
:attr:`~connectrt.runtime.metrics.TaskMetrics.last_delivered_ms` (stuck-task detection reports
it). Messages without a timestamp are left out
of the sample; a timestamp ahead of the worker's clock (producer clock skew) counts as 0 s.
Both run on the task's thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from connectrt.runtime.metrics import TaskMetrics

__all__ = ["SAMPLE_SIZE", "observe_put", "timestamps_sample"]

SAMPLE_SIZE = 32
"""Messages of a batch whose timestamps are read."""


def timestamps_sample(msgs: Sequence[Any]) -> list[int]:
    """The Kafka timestamps (epoch ms) of an even sample of ``msgs``: all of them up to
    :data:`SAMPLE_SIZE`, else that many spread over the batch."""
    n = len(msgs)
    k = n if n <= SAMPLE_SIZE else SAMPLE_SIZE
    out: list[int] = []
    for i in range(k):
        kind, ts = msgs[i * n // k].timestamp()
        if kind and ts > 0:  # TIMESTAMP_NOT_AVAILABLE is 0
            out.append(ts)
    return out


def observe_put(metrics: TaskMetrics, stamps: Sequence[int], count: int) -> None:
    """``count`` records put just now, of which ``stamps`` are a sample of the timestamps;
    also notes when (``last_delivered_ms``)."""
    if count <= 0:
        return
    now_ms = time.time() * 1000.0
    metrics.last_delivered_ms = int(now_ms)
    if stamps:
        metrics.e2e_latency_seconds.observe_sample(
            [max(0.0, (now_ms - ts) / 1000.0) for ts in stamps], count
        )
