"""Scale-out on Spark: connector tasks as long-running Spark tasks (see :mod:`.backend`), and
the Spark DataFrame bridge (:mod:`.datasource`).

Importing this package does not import pyspark; the modules that need it import it lazily.
"""

from __future__ import annotations

__all__ = ["task_attempt"]


def task_attempt() -> int:
    """The Spark attempt number of the task running this code (0 outside a Spark task).

    Lets a connector (or a test plugin) tell a task that Spark re-ran from its first attempt.
    """
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    ctx = TaskContext.get()
    return ctx.attemptNumber() if ctx is not None else 0
