"""How a task process makes sure it never outlives its worker (the child's side).

Two independent mechanisms, because either alone has a gap:

* ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (Linux): the kernel kills the child when the thread that
  spawned it ends, which includes ``kill -9`` of the worker. The worker therefore spawns every
  child from one long-lived launcher thread (:class:`~.launcher.Launcher`): a short-lived thread
  (a REST request's, a restart timer's) would take its children with it when it returns. If the
  worker died between the spawn and the ``prctl``, the parent pid has already changed; the child
  checks that and exits.
* The channel (:mod:`.channel`): the worker's end closes when it dies, for any reason and on any
  platform, and the child's reader thread then exits the process at once
  (:func:`exit_now`, no final commit: nobody is left to record it).

A child also ignores SIGINT and SIGTERM: a Ctrl-C in a terminal or a service manager's SIGTERM
reaches the whole process group, and the worker, which receives them too, stops its tasks
gracefully (they commit) instead of letting them die mid-batch. SIGKILL still kills a child;
the worker reports that task FAILED.

Standard library only, called before the child imports anything heavy.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["EXIT_PARENT_GONE", "EXIT_SETUP_FAILED", "die_with_parent", "exit_now"]

PR_SET_PDEATHSIG = 1

EXIT_PARENT_GONE = 75
"""The exit status of a child that exits because its worker is gone (or its channel failed)."""

EXIT_SETUP_FAILED = 70
"""The exit status of a child that could not even report why its task did not start."""


def die_with_parent(parent_pid: int) -> bool:
    """Arrange to be killed when the worker dies; returns whether ``prctl`` was available.

    Exits at once (status :data:`EXIT_PARENT_GONE`) when the worker is already gone.
    """
    armed = False
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent_pid:
        exit_now("the worker process exited before this task process started")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    return armed


def exit_now(reason: str) -> None:
    """End the process immediately (no cleanup, no commit), saying why on stderr."""
    try:
        os.write(2, f"connectrt task process {os.getpid()}: {reason}; exiting\n".encode())
    finally:
        os._exit(EXIT_PARENT_GONE)
