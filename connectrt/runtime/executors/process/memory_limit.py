"""``task.memory.limit.mb``: the OS limit on a task process's memory, and how it is reported.

The child applies the limit to itself (:func:`apply_memory_limit`) before it imports the
runtime, as ``RLIMIT_DATA``: since Linux 4.7 it bounds the process's private writable memory
(heap, anonymous mappings such as CPython's arenas and large buffers, thread stacks at their
reserved size), so an allocation beyond it fails with ENOMEM and Python raises
:class:`MemoryError`. Not ``RLIMIT_AS``: the address space of a task process with its Kafka
clients is several hundred MB of reservations that are never used (glibc reserves 64 MB per
malloc arena and librdkafka starts a dozen threads), so an address-space limit would have to
be set far above what the task really uses to let it start, and would then not hold it.
Shared libraries, file mappings and shared memory are not counted.

Reporting: a task that fails with a :class:`MemoryError` anywhere in its exception chain while
a limit is set is reported FAILED with a trace that starts with :func:`memory_limit_message`.
A C library that cannot allocate may abort the process instead; the worker then reports how
the process died and, with a limit set, says that the limit may be why
(:mod:`.exit_report`).

Standard library only: the child calls this before it imports anything heavy.
"""

from __future__ import annotations

import resource

__all__ = [
    "MIN_MEMORY_LIMIT_MB",
    "apply_memory_limit",
    "caused_by_memory_error",
    "memory_limit_message",
]

MIN_MEMORY_LIMIT_MB = 128
"""The smallest limit accepted: a task process with a producer or consumer has about 100 MB of
private writable memory before its task allocates anything (mostly reserved thread stacks)."""


def apply_memory_limit(limit_mb: int) -> None:
    """Limit this process's private writable memory to ``limit_mb`` MiB (0: no limit)."""
    if limit_mb <= 0:
        return
    limit = limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def caused_by_memory_error(error: BaseException | None) -> bool:
    """Whether ``error`` is, or was caused by (``__cause__``/``__context__``), a MemoryError."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, MemoryError):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def memory_limit_message(task: str, limit_mb: int, pid: int) -> str:
    return (
        f"Task {task} exceeded its memory limit: an allocation failed in task process {pid} "
        f"under task.memory.limit.mb={limit_mb} (enforced by the OS as RLIMIT_DATA). Raise the "
        "limit or make the task hold less (smaller batches, bounded buffers)."
    )
