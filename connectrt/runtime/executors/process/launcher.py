"""Spawning task processes, always from one long-lived thread of the worker.

Why one thread: Linux delivers a child's ``PR_SET_PDEATHSIG`` when the *thread* that spawned it
ends, not only when the worker process does. Tasks are started from REST request threads, the
herder's threads and one-shot restart timers; a child spawned from any of those would be
killed as soon as that thread returned. :class:`Launcher` runs every spawn on its own thread,
which lives until the executor stops (after every child was stopped).

How: ``subprocess.Popen`` of ``sys.executable -m connectrt.runtime.executors.process.child_main``
(fork and exec at once: a fresh interpreter, nothing of the worker's librdkafka threads or
locks is copied), with one end of a ``socketpair`` passed as the only inherited descriptor,
stdin from /dev/null, stdout and stderr shared with the worker (the child's log lines go where
the worker's go), and ``PYTHONPATH`` starting with the worker's ``sys.path`` so that the child
imports connectrt and the plugins from where the worker does.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from connectrt.runtime.executors.process.channel import Channel

__all__ = ["Launcher", "spawn_task_process"]

T = TypeVar("T")

CHILD_MODULE = "connectrt.runtime.executors.process.child_main"


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [p or os.getcwd() for p in sys.path]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def spawn_task_process(memory_limit_mb: int) -> tuple[subprocess.Popen[bytes], Channel]:
    """Start a task process; returns it and the worker's end of its channel.

    Call it on the :class:`Launcher`'s thread (see the module docstring).
    """
    ours, theirs = socket.socketpair()
    try:
        command = [
            sys.executable,
            "-m",
            CHILD_MODULE,
            "--fd",
            str(theirs.fileno()),
            "--parent-pid",
            str(os.getpid()),
            "--memory-limit-mb",
            str(memory_limit_mb),
        ]
        process = subprocess.Popen(
            command,
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=_child_env(),
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return process, Channel(ours)


class Launcher:
    """Runs callables on one long-lived thread (see the module docstring). Thread-safe;
    started lazily by the first :meth:`call`, ended by :meth:`stop`."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the launcher thread and return its result (or raise its error)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="task-process-launcher", daemon=True
                )
                self._thread.start()
        future: Future[T] = Future()
        self._queue.put((fn, future))
        return future.result()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as e:
                future.set_exception(e)

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(10)
