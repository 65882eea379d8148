"""A task's open call, reported from where its runner runs to the worker that watches it.

The worker's stall watchdog (:mod:`connectrt.runtime.tasks.liveness`) reads a handle's
:class:`CallClock`. A task thread's runner *is* its handle; an executor that runs the runner
elsewhere (a task process, a Spark task on an executor) reports the clock instead, in one shape for
every such executor:

* on the runner's side, :class:`CallReporter` is a thread that every second hands the runner's
  metrics snapshot and a :data:`CallReport` of the call the task is in (None: in no call) to
  the executor's ``send`` (its channel to the worker: the task process's socket, the Spark
  task's status topic), and once more, with no call, when stopped;
* on the worker's side, :class:`CallMirror` turns the reports it receives into a
  :class:`CallClock` in the worker's own time (``entered`` = receipt time - the call's age, so
  the two ends' clocks need not agree) and keeps the last stack for a stalled task's trace. It
  shows a call once it is reported with its stack: a stall (``task.stall.timeout.ms``) shows
  within the timeout plus about a second, and never without its stack.

A report is ``(call, entered, age_s, stack)``: the call's name, when it was entered in the
runner's monotonic time (with the name, what tells one call from the next), how long it has
lasted, and the task thread's stack once the call has lasted :data:`STACK_AFTER_S` (a stack
costs a few hundred microseconds: taken only for a call that is long already).

Threading: the reporter reads the runner's clock racily (as the watchdog reads a thread's);
``send`` is called on the reporter's thread. A mirror is updated by one thread (the executor's
receiver) and read by the watchdog.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from connectrt.periodic import Periodic
from connectrt.runtime.tasks.liveness import CallClock, thread_stack

__all__ = ["STACK_AFTER_S", "CallMirror", "CallReport", "CallReporter", "open_call_report"]

CallReport = tuple[str, float, float, str | None]
"""``(call, entered in the runner's monotonic time, age in seconds, stack or None)``."""

REPORT_INTERVAL_S = 1.0
STACK_AFTER_S = 1.0  # a call open this long is reported with the task thread's stack


def open_call_report(clock: CallClock, task_thread: int | None) -> CallReport | None:
    """The call ``clock`` shows open (with the stack of ``task_thread`` once it is long), or
    None."""
    open_call = clock.open_call()
    if open_call is None:
        return None
    call, entered = open_call
    age = time.monotonic() - entered
    stack = thread_stack(task_thread) if age >= STACK_AFTER_S else None
    return call, entered, age, stack


class CallReporter:
    """Sends ``(metrics snapshot, call report)`` of a runner every second, on a thread of its
    own, until :meth:`stop` (which sends a last one with no call). ``runner`` has ``metrics``
    and ``call_clock``; ``task_thread`` is the ident of the thread that runs it."""

    def __init__(
        self,
        runner: Any,
        task_thread: int,
        send: Callable[[dict[str, Any], CallReport | None], None],
        interval_s: float = REPORT_INTERVAL_S,
    ) -> None:
        self._runner = runner
        self._task_thread = task_thread
        self._send = send
        self._ticks = Periodic("task-call-reporter", self._report, interval_s)

    def start(self) -> None:
        self._ticks.start()

    def _report(self) -> None:
        runner = self._runner
        report = open_call_report(runner.call_clock, self._task_thread)
        self._send(runner.metrics.snapshot(), report)

    def stop(self) -> None:
        self._ticks.stop(5)
        self._send(self._runner.metrics.snapshot(), None)


class CallMirror:
    """The worker's copy of a remote task's open call: :attr:`call_clock` for the watchdog,
    :meth:`current_stack` for the trace. ``where`` names the remote end in that trace (e.g.
    ``task process 1234``)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.call_clock = CallClock()
        self._remote_call: tuple[str, float] | None = None
        self._stack: tuple[float, str] | None = None

    def update(self, report: CallReport | None) -> None:
        """Apply a report. A call is shown only once a report of it carries the stack (it has
        lasted :data:`STACK_AFTER_S`), so a stalled task's trace always has a stack, however
        late the reports arrive; a report without one means the task is in no long call. The
        entry time is set once per call, in this process's time (the watchdog tells one call
        from the next by it)."""
        stack = None if report is None else report[3]
        if report is None or stack is None:
            if self._remote_call is not None:
                self._remote_call = None
                self.call_clock.leave()
            return
        call, remote_entered, age, _ = report
        self._stack = (time.monotonic(), stack)
        if self._remote_call != (call, remote_entered):
            self._remote_call = (call, remote_entered)
            self.call_clock.entered = time.monotonic() - age  # written before call, as enter()
            self.call_clock.call = call

    def current_stack(self) -> str:
        """The task thread's stack as last reported (for a stalled task's trace)."""
        stack = self._stack
        if stack is None:
            return f"({self.where} has not sent a stack of the call yet)"
        ago = time.monotonic() - stack[0]
        return f"(in {self.where}, sent {ago:.1f} s ago)\n{stack[1]}"
