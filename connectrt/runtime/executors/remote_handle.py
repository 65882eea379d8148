"""The worker's handle of a task that runs outside the worker's process:
:class:`RemoteTaskHandle`, what the child-process and the Spark handles share.

The handle mirrors the task for the worker: :attr:`metrics` and :attr:`call_mirror` (the
task's open call, for the stall watchdog) are updated from what the task reports, and
:attr:`failed` is set when it failed for good. ``join`` waits for the end; when a task asked to
stop is still running after the timeout (``task.shutdown.graceful.timeout.ms``) it takes the
subclass's last resort, :meth:`RemoteTaskHandle._end_now` (kill the process, cancel the Spark
job: no final commit, the next run resumes from the last commit).

Threading: the control methods may be called from any thread; the subclass sets
``_stop_requested`` in ``stop`` and ``_done`` once the task has ended (on its own thread).
"""

from __future__ import annotations

import threading

from connectrt.runtime.executors.call_reports import CallMirror
from connectrt.runtime.executors.task_executor import OnFailure
from connectrt.runtime.executors.task_payload import TaskPayload
from connectrt.runtime.metrics import TaskMetrics

__all__ = ["RemoteTaskHandle"]


class RemoteTaskHandle:
    """See the module docstring. ``where`` names the remote end in a stalled task's trace
    (e.g. ``task process 1234``)."""

    def __init__(self, payload: TaskPayload, on_failure: OnFailure, where: str) -> None:
        self.id = payload.task_id
        self.metrics = TaskMetrics(payload.connector, payload.task)
        self.failed: BaseException | None = None
        self.on_failure: OnFailure | None = on_failure
        self.call_mirror = CallMirror(where)
        self.call_clock = self.call_mirror.call_clock
        self._stop_requested = False
        self._done = threading.Event()

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the task to end; end a task asked to stop that is still running when
        ``timeout`` passes by :meth:`_end_now` (the last resort: no final commit)."""
        if self._done.wait(timeout) or not self._stop_requested:
            return
        self._done.wait(self._end_now())

    def current_stack(self) -> str:
        """The task thread's stack as the task last reported it (for a stalled task's trace)."""
        return self.call_mirror.current_stack()

    def _end_now(self) -> float:
        """Log why and end the still running task without its final commit; return how long
        to wait for its end then (seconds)."""
        raise NotImplementedError
