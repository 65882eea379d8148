"""What the worker reports when a task process ended without saying it was done.

:func:`death_trace` turns the exit status of the child (``Popen.returncode``: an exit code, or
minus the number of the signal that killed it) into the FAILED task's trace: how it died
(exit code, or signal name and number), whether the worker sent that signal, the last memory
figures the worker sampled, and, when a memory limit is set, whether that limit may explain it.
Pure functions.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

from connectrt.runtime.executors.process.lifeline import EXIT_PARENT_GONE, EXIT_SETUP_FAILED

__all__ = ["death_trace", "describe_returncode"]


def describe_returncode(returncode: int) -> str:
    """``exited with code 3`` or ``killed by signal SIGSEGV (11)``."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"killed by signal {name} ({number})"


def _mb(kb: int) -> str:
    return f"{kb / 1024:.1f} MB"


def death_trace(
    task: str,
    pid: int,
    returncode: int,
    *,
    stopping: bool,
    memory_limit_mb: int,
    last_memory_kb: Mapping[str, int],
) -> str:
    """The trace of a task whose process ended without a final report (see the module doc)."""
    how = describe_returncode(returncode)
    lines = [
        f"Task {task} failed: its process (pid {pid}) {how} "
        + ("while stopping, " if stopping else "")
        + "without reporting an end. Records produced or consumed since the last offset "
        "commit are not committed; the next run resumes from that commit."
    ]
    if returncode == EXIT_PARENT_GONE:
        lines.append(
            "The task process lost its channel to the worker (see the worker's log for the "
            "task process's last line)."
        )
    elif returncode == EXIT_SETUP_FAILED:
        lines.append("The task process could not start the task nor report why (see the log).")
    elif returncode >= 0:
        lines.append(
            "An exit without a report comes from os._exit() in the task or a library it uses, "
            "or from native code that exited the process."
        )
    elif -returncode == signal.SIGKILL:
        lines.append(
            "SIGKILL was not sent by the worker: the kernel's OOM killer, a cgroup memory "
            "limit or an operator (kill -9) sent it."
        )
    elif -returncode in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL):
        lines.append("A crash in native code (a C extension or a library it uses).")
    if last_memory_kb:
        figures = ", ".join(
            f"{name} {_mb(kb)}" for name, kb in sorted(last_memory_kb.items()) if kb
        )
        lines.append(f"Last sampled memory of the process: {figures}.")
    if memory_limit_mb > 0 and returncode < 0:
        lines.append(
            f"The task runs under a memory limit (task.memory.limit.mb={memory_limit_mb}, "
            "enforced as RLIMIT_DATA): native code that cannot allocate under the limit aborts "
            "or crashes the process like this, so the memory limit may be the cause (compare "
            "the last sampled memory)."
        )
    return "\n".join(lines)
