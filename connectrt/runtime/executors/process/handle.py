"""One task process as the worker controls and watches it: :class:`ProcessTaskHandle`.

The handle is the worker's :class:`~connectrt.runtime.executors.task_executor.TaskHandle` for a task
running in a child process. ``stop``, ``transition_to`` send controls over the channel; the
child commits and ends on stop. ``join`` waits for the end and, when a stopped task is still
running after the timeout (``task.shutdown.graceful.timeout.ms``), kills the child (SIGKILL, no
final commit; the next run resumes from the last commit).

Its supervisor thread reads what the child sends: states go to the worker's status board (and
so to its status store), topics to the worker's hooks, offset requests to the worker's offset
store (answered once stored), metrics into :attr:`metrics`, the call the task is in into
:attr:`call_clock` (with the stack the child sends once a call lasts a second: the worker's
stall watchdog reads both, as for a thread). It also samples the child's memory
from ``/proc`` once a second (:attr:`memory_kb`). When the channel ends, it reaps the child: a
child that reported ``done`` ended normally (or after reporting its failure); one that did not
died, and the task is reported FAILED with a trace saying how (:func:`~.exit_report.death_trace`).
``on_failure`` is called after that, on the supervisor thread, when the task failed for good.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from connectrt.errors import ConnectError
from connectrt.runtime.executors.process.channel import Channel, ChannelClosed
from connectrt.runtime.executors.process.exit_report import death_trace
from connectrt.runtime.executors.process.payload import ProcessTaskPayload
from connectrt.runtime.executors.remote_handle import RemoteTaskHandle
from connectrt.runtime.executors.task_executor import OnFailure, WorkerView
from connectrt.runtime.status import State, TargetState

__all__ = ["ProcessTaskHandle", "TaskProcessDied", "TaskProcessFailed"]

log = logging.getLogger(__name__)

_SAMPLE_INTERVAL_S = 1.0
_EXIT_WAIT_S = 10.0
KILL_WAIT_S = 10.0
_MEMORY_FIELDS = {"VmRSS": "rss", "VmHWM": "peak rss", "VmData": "data"}


class TaskProcessFailed(ConnectError):
    """The task failed in its process and reported it (the trace is in its status)."""


class TaskProcessDied(ConnectError):
    """The task's process ended without reporting an end; the message is the trace."""


def read_memory_kb(pid: int) -> dict[str, int]:
    """``{"rss", "peak rss", "data"}`` of a live process in KiB (Linux), else ``{}``."""
    if not sys.platform.startswith("linux"):
        return {}
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in _MEMORY_FIELDS:
                    out[_MEMORY_FIELDS[key]] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    return out


class ProcessTaskHandle(RemoteTaskHandle):
    """See the module docstring. Built by the executor; :meth:`start` sends the payload and
    starts the supervisor thread. Control methods may be called from any thread."""

    def __init__(
        self,
        worker: WorkerView,
        payload: ProcessTaskPayload,
        process: subprocess.Popen[bytes],
        channel: Channel,
        on_failure: OnFailure,
        on_end: Callable[[ProcessTaskHandle], None],
    ) -> None:
        # The child's open call, for the stall watchdog (task.stall.timeout.ms).
        super().__init__(payload, on_failure, f"task process {process.pid}")
        self.payload = payload
        self.process = process
        self.pid = process.pid
        self.memory_kb: dict[str, int] = {}
        self.returncode: int | None = None
        self._worker = worker
        self._channel = channel
        self._on_end = on_end
        self._killed = False
        self._thread = threading.Thread(
            target=self._supervise, name=f"task-process-{self.id}", daemon=True
        )

    def start(self) -> None:
        self._send(("payload", self.payload))
        self._thread.start()

    # -- TaskHandle ----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop_requested = True
        self._send(("stop",))

    def transition_to(self, target: TargetState) -> None:
        self._send(("target", target.value))

    def _end_now(self) -> float:
        log.error(
            "Task %s did not stop within task.shutdown.graceful.timeout.ms; killing its "
            "process %d (no final commit: the next run resumes from the last commit)",
            self.id,
            self.pid,
        )
        self.kill()
        return KILL_WAIT_S

    def kill(self) -> None:
        """SIGKILL the child (the worker's own kill: not reported as a failure)."""
        self._killed = True
        try:
            self.process.kill()
        except ProcessLookupError:
            pass

    def _send(self, message: tuple[Any, ...]) -> None:
        try:
            self._channel.send(message)
        except ChannelClosed:
            log.debug("Task %s: process already gone, %s not sent", self.id, message[0])

    # -- the supervisor thread -----------------------------------------------------------------
    def _supervise(self) -> None:
        reported: bool | None = None  # the child's ("done", failed), once received
        next_sample = time.monotonic() + _SAMPLE_INTERVAL_S  # not before the child runs
        try:
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    self.memory_kb = read_memory_kb(self.pid) or self.memory_kb
                    next_sample = now + _SAMPLE_INTERVAL_S
                try:
                    message = self._channel.recv(_SAMPLE_INTERVAL_S)
                except ChannelClosed:
                    break
                if message is None:
                    continue
                if message[0] == "done":
                    reported = bool(message[1])
                    continue
                try:
                    self._dispatch(message)
                except Exception:  # e.g. the status store: the task itself is fine
                    log.exception(
                        "Task %s: handling %r from its process failed", self.id, message[0]
                    )
        except Exception:
            log.exception("Task %s: supervising its process failed; killing it", self.id)
            self.kill()
        finally:
            self._channel.close()
        self.returncode = self._reap()
        self._finish(reported)

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        connector, task = self.id.connector, self.id.task
        if kind == "status":
            self._worker.status.put(connector, task, State(message[1]), message[2])
        elif kind == "metrics":
            self.metrics.apply_snapshot(message[1])
            self.call_mirror.update(message[2])
        elif kind == "topic":
            self._worker.hooks.on_topic(connector, message[1], task)
        elif kind.startswith("offsets."):
            self._serve_offsets(kind, message[1], message[2:])
        else:
            log.warning("Task %s: unknown message %r from its process", self.id, kind)

    def _serve_offsets(self, kind: str, request_id: int, args: tuple[Any, ...]) -> None:
        store = self._worker.offset_store
        try:
            if kind == "offsets.get":
                value: Any = store.get(args[0])
            elif kind == "offsets.set":
                store.set(args[0])
                value = None
            else:
                value = store.all()
        except Exception as e:
            log.warning("Task %s: %s failed: %s", self.id, kind, e)
            self._send(("reply", request_id, False, f"{type(e).__name__}: {e}"))
            return
        self._send(("reply", request_id, True, value))

    def _reap(self) -> int:
        try:
            return self.process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            log.error(
                "Task %s: process %d closed its channel but did not exit; killing it",
                self.id,
                self.pid,
            )
            self.process.kill()
            return self.process.wait()

    def _finish(self, reported: bool | None) -> None:
        returncode = self.returncode if self.returncode is not None else 0
        if reported is not None:
            if reported:
                self.failed = TaskProcessFailed(f"Task {self.id} failed in process {self.pid}")
            if returncode != 0:
                log.warning(
                    "Task %s: process %d exited with %d after its end",
                    self.id,
                    self.pid,
                    returncode,
                )
        elif self._killed:
            log.warning("Task %s: process %d killed by the worker", self.id, self.pid)
        else:
            trace = death_trace(
                str(self.id),
                self.pid,
                returncode,
                stopping=self._stop_requested,
                memory_limit_mb=self.payload.memory_limit_mb,
                last_memory_kb=self.memory_kb,
            )
            log.error("%s", trace)
            self.failed = TaskProcessDied(trace)
            self._worker.status.put(self.id.connector, self.id.task, State.FAILED, trace)
        self._on_end(self)
        self._done.set()
        if self.failed is not None and self.on_failure is not None:
            self.on_failure(self)
