"""Timing a task's ``put`` and ``poll`` calls into its metrics, from outside the runners.

:func:`time_task_calls` replaces the bound ``put`` (a :class:`SinkTask`) or ``poll`` (a
:class:`SourceTask`) on the task *instance* with a wrapper that observes each call's duration
in :attr:`TaskMetrics.put_seconds` / :attr:`TaskMetrics.poll_seconds`. The runner factory
applies it once, before the runner starts, so the runners' loops stay as they are and every
runner kind (threads, or an executor that builds its runner elsewhere) is timed the same way.
The wrapper costs two clock reads per call, that is per batch, not per record. A task whose
class forbids instance attributes (``__slots__`` without ``__dict__``) is left untimed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from connectrt.api.task import SinkTask, SourceTask
from connectrt.runtime.metrics import LatencyHistogram, TaskMetrics

__all__ = ["time_task_calls"]


def _timed(call: Callable[..., Any], histogram: LatencyHistogram) -> Callable[..., Any]:
    clock = time.perf_counter
    observe = histogram.observe

    @functools.wraps(call)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return call(*args, **kwargs)
        finally:
            observe(clock() - start)

    return timed


def time_task_calls(task: object, metrics: TaskMetrics) -> bool:
    """Time ``task.put`` or ``task.poll`` into ``metrics``; False if the task cannot be
    wrapped (or is neither a sink nor a source task)."""
    if isinstance(task, SinkTask):
        name, histogram = "put", metrics.put_seconds
    elif isinstance(task, SourceTask):
        name, histogram = "poll", metrics.poll_seconds
    else:
        return False
    try:
        setattr(task, name, _timed(getattr(task, name), histogram))
    except AttributeError:
        return False
    return True
