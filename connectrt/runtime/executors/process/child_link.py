"""The child's end of its channel to the worker: one reader thread, requests and controls.

:class:`ChildLink` owns the channel in the task process. Its reader thread (started by the
constructor, before the task is built) receives the payload, the worker's controls and the
answers to requests; when the channel reaches end-of-file the worker is gone and the reader
ends the process at once (:func:`~.lifeline.exit_now`).

Controls (pause, resume, stop) are applied on a control thread of their own, not on the reader:
a task whose ``stop()`` blocks must not hold up the answers its own final commit waits for.
Controls that arrive before the task's runner exists are kept (the latest target state, a stop)
and applied by :meth:`attach`. :meth:`request` sends a request and blocks its caller until the
worker answers (the offset store proxy uses it). ``send`` is safe from any thread.

Standard library only (the payload's classes are imported when it is unpickled, after the
memory limit is in place).
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any, Protocol

from connectrt.runtime.executors.process.channel import Channel, ChannelClosed
from connectrt.runtime.executors.process.lifeline import exit_now

__all__ = ["ChildLink", "Controllable", "RequestFailed"]


class RequestFailed(Exception):
    """The worker could not serve a request; the message says why."""


class Controllable(Protocol):
    """What the link controls: a task runner."""

    def stop(self) -> None: ...

    def transition_to(self, target: Any) -> None: ...


class _Pending:
    __slots__ = ("done", "ok", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = False
        self.value: Any = None


class ChildLink:
    """See the module docstring. ``make_target(value)`` turns a target state name into what
    the runner's ``transition_to`` takes (set by the caller once the runtime is imported)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._lock = threading.Lock()
        self._payload: Any = None
        self._has_payload = threading.Event()
        self._runner: Controllable | None = None
        self._pending_target: str | None = None
        self._stop_requested = False
        self._closing = False
        self._ids = itertools.count(1)
        self._requests: dict[int, _Pending] = {}
        self.make_target: Any = str
        self._controls: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._control = threading.Thread(target=self._apply, name="task-control", daemon=True)
        self._control.start()
        self._reader = threading.Thread(target=self._read, name="task-link-reader", daemon=True)
        self._reader.start()

    # -- sending -------------------------------------------------------------------------------
    def send(self, message: tuple[Any, ...]) -> None:
        try:
            self.channel.send(message)
        except ChannelClosed:
            exit_now("the channel to the worker is closed")

    def request(self, kind: str, *args: Any, timeout: float) -> Any:
        """Send ``(kind, id, *args)`` and return the worker's answer; raises
        :class:`RequestFailed` with the worker's message, or after ``timeout`` seconds."""
        pending = _Pending()
        request_id = next(self._ids)
        with self._lock:
            self._requests[request_id] = pending
        try:
            self.send((kind, request_id, *args))
            if not pending.done.wait(timeout):
                raise RequestFailed(f"the worker did not answer {kind} within {timeout:.0f} s")
        finally:
            with self._lock:
                self._requests.pop(request_id, None)
        if not pending.ok:
            raise RequestFailed(str(pending.value))
        return pending.value

    # -- the task ------------------------------------------------------------------------------
    def wait_payload(self, timeout: float) -> Any:
        if not self._has_payload.wait(timeout):
            exit_now(f"no task payload from the worker within {timeout:.0f} s")
        return self._payload

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def attach(self, runner: Controllable) -> None:
        """Control ``runner`` from now on, applying a target state or stop received earlier."""
        with self._lock:
            self._runner = runner
            target, stop = self._pending_target, self._stop_requested
        if target is not None:
            runner.transition_to(self.make_target(target))
        if stop:
            runner.stop()

    def close(self) -> None:
        """Close the channel at the end of the task (the reader thread then just ends)."""
        self._closing = True
        self.channel.close()

    # -- the reader thread ---------------------------------------------------------------------
    def _read(self) -> None:
        try:
            while True:
                message = self.channel.recv()
                if message is not None:
                    self._dispatch(message)
        except ChannelClosed:
            if not self._closing:
                exit_now("the worker closed the channel or died")
        except BaseException as e:  # a bug or an unpicklable payload: nobody could control us
            exit_now(f"the task channel failed ({e!r})")

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "reply":
            _, request_id, ok, value = message
            with self._lock:
                pending = self._requests.get(request_id)
            if pending is not None:
                pending.ok, pending.value = ok, value
                pending.done.set()
        elif kind == "payload":
            self._payload = message[1]
            self._has_payload.set()
        elif kind in ("target", "stop"):
            self._controls.put(message)

    # -- the control thread --------------------------------------------------------------------
    def _apply(self) -> None:
        while True:
            message = self._controls.get()
            with self._lock:
                runner = self._runner
                if message[0] == "stop":
                    self._stop_requested = True
                elif runner is None:
                    self._pending_target = message[1]
            if runner is None:
                continue
            if message[0] == "stop":
                runner.stop()
            else:
                runner.transition_to(self.make_target(message[1]))
