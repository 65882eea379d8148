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

import functools
import time
from collections.abc import Callable, Sequence
from operator import itemgetter, methodcaller
from typing import Any

from connectrt.runtime.clients.kafka import Message
from connectrt.runtime.metrics import TaskMetrics

__all__ = ["SAMPLE_SIZE", "observe_put", "timestamps_sample"]

SAMPLE_SIZE = 8
"""Messages of a batch whose timestamps are read: enough for the histogram over the thousands
of batches a busy task puts each second (a batch of 500 read 32 at first: 14 ns per record of
the task thread, where the raw consume loop's whole work is about 50)."""


@functools.lru_cache(maxsize=16)
def _picker(n: int) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """The messages of a batch of ``n`` (n >= 1) that :func:`timestamps_sample` reads, picked
    in one C call (batches mostly come in a few sizes: ``max.poll.records`` and the tails)."""
    k = n if n <= SAMPLE_SIZE else SAMPLE_SIZE
    if k == 1:
        return lambda msgs: (msgs[0],)
    return itemgetter(*[i * n // k for i in range(k)])


def timestamps_sample(msgs: Sequence[Any]) -> list[int]:
    """The Kafka timestamps (epoch ms) of an even sample of ``msgs``: all of them up to
    :data:`SAMPLE_SIZE`, else that many spread over the batch."""
    if not msgs:
        return []
    picked = _picker(len(msgs))(msgs)
    timestamp = Message.timestamp if type(msgs[0]) is Message else methodcaller("timestamp")
    # TIMESTAMP_NOT_AVAILABLE is kind 0
    return [ts for kind, ts in map(timestamp, picked) if kind and ts > 0]


def observe_put(metrics: TaskMetrics, stamps: Sequence[int], count: int) -> None:
    """``count`` records put just now, of which ``stamps`` are a sample of the timestamps;
    also notes when (``last_delivered_ms``)."""
    if count <= 0:
        return
    now_ms = time.time() * 1000.0
    metrics.last_delivered_ms = int(now_ms)
    metrics.e2e_latency_seconds.observe_ages(now_ms, stamps, count)
