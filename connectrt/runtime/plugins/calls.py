"""Calls into plugin code that management waits for, each bounded by a timeout.

A connector's ``start()``, ``task_configs()`` and ``stop()``, and the validation of its config,
run plugin code that may block for ever (a connection without a timeout, a bug, a hostile
plugin). Management (a REST request, the CLI, the control topic) must never wait on it longer
than a bound, as Kafka Connect has ensured since KAFKA-10792. :func:`call_plugin` runs one such
call on a thread of its own and waits for it at most ``timeout_s``:

* it ends in time: its result is returned, or its exception raised, on the caller's thread;
* it does not: the call is *abandoned*. Python cannot stop a thread, so it is left running as
  a daemon thread renamed ``abandoned: <what>``, listed by :func:`abandoned_calls` while it
  runs, and :class:`PluginCallTimeout` is raised. Should the call end after all, the caller is
  gone: its result goes to ``on_late`` (e.g. to stop a connector whose ``start()`` came back
  too late), its error is logged.

Threading: any thread may call :func:`call_plugin`, concurrently; each call gets a new thread
(these calls are rare: lifecycle changes, not records). The caller should hold no lock that
the plugin code could need.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from connectrt.errors import ConnectError

__all__ = ["AbandonedCall", "PluginCallTimeout", "abandoned_calls", "call_plugin"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAX_LISTED = 1000  # abandoned calls remembered at most (those still running are listed)


class PluginCallTimeout(ConnectError):
    """A call into plugin code did not end within its timeout and was abandoned."""


@dataclass(frozen=True)
class AbandonedCall:
    """One abandoned call: what it was, its thread, and when it was abandoned (epoch s)."""

    what: str
    thread: threading.Thread
    abandoned_at: float


_abandoned_lock = threading.Lock()
_abandoned: list[AbandonedCall] = []


def abandoned_calls() -> list[AbandonedCall]:
    """The abandoned calls of this process whose threads still run, oldest first."""
    with _abandoned_lock:
        _abandoned[:] = [c for c in _abandoned if c.thread.is_alive()]
        return list(_abandoned)


def _remember(call: AbandonedCall) -> None:
    with _abandoned_lock:
        _abandoned[:] = [c for c in _abandoned if c.thread.is_alive()][-_MAX_LISTED + 1 :]
        _abandoned.append(call)


def call_plugin(
    fn: Callable[[], T],
    timeout_s: float,
    what: str,
    on_late: Callable[[T], None] | None = None,
) -> T:
    """Run ``fn()`` on a new daemon thread and wait for it at most ``timeout_s`` seconds.

    ``what`` names the call in the thread's name and in messages (``stop() of connector
    orders``). Returns ``fn``'s result or raises its exception; raises
    :class:`PluginCallTimeout` when it is still running after ``timeout_s`` (see the module
    docstring for what becomes of it).
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()
    guard = threading.Lock()
    abandoned = False

    def run() -> None:
        nonlocal abandoned
        try:
            outcome["value"] = fn()
        except BaseException as e:  # handed to the caller (or logged, when it is gone)
            outcome["error"] = e
        with guard:
            late = abandoned
            done.set()
        if not late:
            return
        if "error" in outcome:
            log.warning("Abandoned %s ended with an error", what, exc_info=outcome["error"])
            return
        log.warning("Abandoned %s returned after all", what)
        if on_late is not None:
            try:
                on_late(outcome["value"])
            except Exception:
                log.exception("Cleaning up after the abandoned %s failed", what)

    thread = threading.Thread(target=run, name=f"plugin-call: {what}", daemon=True)
    started = time.monotonic()
    thread.start()
    if not done.wait(max(0.0, timeout_s)):
        with guard:
            abandoned = not done.is_set()
        if abandoned:
            thread.name = f"abandoned: {what}"
            _remember(AbandonedCall(what, thread, time.time()))
            raise PluginCallTimeout(
                f"{what} did not return within {timeout_s * 1000:.0f} ms; it was abandoned "
                f"(its thread {thread.name!r} is left running)"
            )
    log.debug("%s took %.3f s", what, time.monotonic() - started)
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value
