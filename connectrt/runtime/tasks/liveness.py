"""Stuck-task detection: a per-task call clock and one watchdog thread per worker.

A task runner owns a :class:`CallClock` and brackets each call into the task or a blocking
client call (``start``, ``poll``, ``put``, ``flush``/``pre_commit``, ``commit``, ``stop``) with
:meth:`CallClock.enter` and :meth:`CallClock.leave`: two attribute writes per *batch*, never per
record. Only time spent inside one call counts, so a sink whose partitions are idle (consume
returns nothing) or a source whose ``poll()`` returns ``None`` quickly is never stalled.

The :class:`StallWatchdog` is one daemon thread per worker. Every tick it asks the worker for the
tasks it watches (:class:`WatchedTask`: the handle, its ``task.stall.timeout.ms`` and
``task.stall.action``), and a task whose clock shows one call open longer than its timeout
becomes *stalled*: a :class:`StallReport` (the call's name, since when, the thread's current
stack, and how long ago the task last delivered records end to end, from the end-to-end latency
bookkeeping of its metrics) is kept until that call returns, when it is cleared. The task keeps
its Kafka Connect state; the REST status adds ``"stalled": true`` and the report as ``trace``,
and /metrics a ``connectrt_task_stalled`` gauge. With action ``restart`` the watchdog asks the
worker (on a thread of its own, so one slow restart does not stop the watch) to restart the
task, which cancels the stuck thread as the graceful-shutdown timeout does.

Thread-safety: the clock is written by the task thread only and read racily by the watchdog
(``entered`` is written before ``call``, so a read never pairs a new call with an old time);
the watchdog's reports are guarded by a lock.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from connectrt.periodic import Periodic

__all__ = [
    "CallClock",
    "LivenessSource",
    "StallReport",
    "StallWatchdog",
    "WatchedTask",
    "thread_stack",
]

log = logging.getLogger(__name__)

STALL_ACTIONS = ("log", "restart")


class CallClock:
    """When the task thread entered the call it is in (if any), and when one last returned.

    ``enter(name)`` before the call, ``leave()`` after it (in a ``finally``). Cheap: no lock,
    no allocation.
    """

    __slots__ = ("call", "entered", "returned")

    def __init__(self) -> None:
        self.call: str | None = None
        self.entered = 0.0
        self.returned = time.monotonic()

    def enter(self, call: str) -> None:
        self.entered = time.monotonic()
        self.call = call

    def leave(self) -> None:
        self.call = None
        self.returned = time.monotonic()

    def open_call(self) -> tuple[str, float] | None:
        """``(call, entered monotonic time)`` of the call in progress, or None."""
        call = self.call
        entered = self.entered
        return None if call is None else (call, entered)


def thread_stack(ident: int | None) -> str:
    """The current stack of the thread ``ident`` of this process, formatted as a trace."""
    frame = sys._current_frames().get(ident) if ident is not None else None
    if frame is None:
        return "(no stack: the thread is not running)"
    return "".join(traceback.format_stack(frame))


class LivenessSource(Protocol):
    """What the watchdog needs of a task handle (a :class:`TaskRunner` is one; another executor's
    handle may implement it too, e.g. from a clock its child reports)."""

    call_clock: CallClock

    def current_stack(self) -> str: ...


@dataclass(frozen=True)
class WatchedTask:
    """One task to watch: its id as ``(connector, task)``, its handle, its timeout and action."""

    connector: str
    task: int
    handle: Any
    timeout_s: float
    action: str


@dataclass(frozen=True)
class StallReport:
    """A task found stuck in one call: which, since when (monotonic), for how long so far at
    detection, the thread's stack then, and how long before detection the task last delivered
    records end to end (``delivered_ago_s``; None: never, or unknown)."""

    call: str
    entered: float
    stuck_s: float
    stack: str
    delivered_ago_s: float | None = None

    def trace(self) -> str:
        delivered = (
            "it has delivered no record end to end since it started"
            if self.delivered_ago_s is None
            else f"it last delivered records end to end {self.delivered_ago_s:.1f} s ago"
        )
        return (
            f"Task stalled: inside {self.call}() for more than {self.stuck_s:.1f} s "
            f"(task.stall.timeout.ms); {delivered}; current stack of the task thread:\n"
            f"{self.stack}"
        )


def delivered_ago(handle: Any) -> float | None:
    """Seconds since the task behind ``handle`` last delivered records end to end (its
    metrics' ``last_delivered_ms``: a sink's ``put()`` returned, a source's records
    acknowledged), or None if it never did or has no metrics."""
    last = getattr(getattr(handle, "metrics", None), "last_delivered_ms", 0)
    if not isinstance(last, int | float) or last <= 0:
        return None
    return max(0.0, time.time() - last / 1000.0)


class StallWatchdog:
    """The worker's one thread that finds stalled tasks (see the module docstring).

    ``tasks()`` is called on the watchdog thread each tick and returns the tasks to watch;
    ``restart(connector, task, handle)`` is called on a new daemon thread when a task with
    action ``restart`` stalls. ``start()``/``stop()`` are called by the worker.
    """

    def __init__(
        self,
        tasks: Callable[[], list[WatchedTask]],
        restart: Callable[[str, int, Any], None],
        max_interval_s: float = 1.0,
    ) -> None:
        self._tasks = tasks
        self._restart = restart
        self._max_interval = max_interval_s
        self._lock = threading.Lock()
        self._stalls: dict[tuple[str, int], tuple[Any, StallReport]] = {}
        self._ticks = Periodic("stall-watchdog", self._tick, max_interval_s)

    def start(self) -> None:
        self._ticks.start()

    def stop(self) -> None:
        self._ticks.stop(5)

    def stall(self, connector: str, task: int) -> StallReport | None:
        """The task's stall report while it is stalled, else None."""
        with self._lock:
            entry = self._stalls.get((connector, task))
        return None if entry is None else entry[1]

    def stalled(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._stalls)

    def _tick(self) -> float | None:
        try:
            return self.check()
        except Exception:
            log.exception("Stall watchdog: check failed")
            return None  # the same wait again

    def check(self) -> float:
        """One pass over the watched tasks; returns the wait before the next pass."""
        now = time.monotonic()
        watched = self._tasks()
        interval = self._max_interval
        seen: set[tuple[str, int]] = set()
        for w in watched:
            if w.timeout_s <= 0:
                continue
            interval = min(interval, max(w.timeout_s / 4, 0.05))
            clock = getattr(w.handle, "call_clock", None)
            if clock is None or not w.handle.is_alive():
                continue
            key = (w.connector, w.task)
            open_call = clock.open_call()
            with self._lock:
                known = self._stalls.get(key)
            if (
                known is not None
                and known[0] is w.handle
                and open_call == (known[1].call, known[1].entered)
            ):
                seen.add(key)  # still stuck in the same call
                continue
            if open_call is None or now - open_call[1] < w.timeout_s:
                continue
            call, entered = open_call
            report = StallReport(
                call, entered, now - entered, w.handle.current_stack(), delivered_ago(w.handle)
            )
            with self._lock:
                self._stalls[key] = (w.handle, report)
            seen.add(key)
            log.warning("Task %s-%d: %s", w.connector, w.task, report.trace())
            if w.action == "restart":
                threading.Thread(
                    target=self._restart,
                    args=(w.connector, w.task, w.handle),
                    name=f"stall-restart-{w.connector}-{w.task}",
                    daemon=True,
                ).start()
        with self._lock:
            for key in set(self._stalls) - seen:
                del self._stalls[key]
        return interval
