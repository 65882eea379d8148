"""Servers a test session starts (Apache Kafka, the Spark Connect server) die with it.

A test process that is killed (an interrupted pytest-xdist worker, ``kill -9``, a CI timeout)
runs no fixture teardown, and a server it started in a session of its own
(``start_new_session=True``) would be left running, holding ports, memory and CPU for the
tests that follow. :func:`die_with_this_thread` gives ``subprocess.Popen`` a ``preexec_fn``
that asks Linux to SIGKILL the child when the spawning thread ends
(``prctl(PR_SET_PDEATHSIG)``).

Linux ties that signal to the *thread* that forked, so it is armed only when the caller is the
main thread (which lives as long as the process): a server started from a short-lived thread
(a test's helper thread restarting a broker) would otherwise die with that thread. Elsewhere
(other platforms, other threads) it returns ``None`` and the child is on its own, as before.
The returned callable runs in the child between fork and exec: it only calls the ``prctl``
bound here in the parent, so it needs no lock and imports nothing.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from collections.abc import Callable

__all__ = ["die_with_this_thread"]

_PR_SET_PDEATHSIG = 1


def die_with_this_thread() -> Callable[[], None] | None:
    """A ``preexec_fn`` arming ``PR_SET_PDEATHSIG`` (SIGKILL), or ``None`` where it cannot
    hold (see the module docstring)."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    sigkill = int(signal.SIGKILL)

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0)

    return arm
