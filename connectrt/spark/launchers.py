"""How a task launch becomes a Spark job: on a classic SparkContext (RDDs) or over Spark
Connect (the DataFrame API only).

Both run one job of one partition per task launch, whose single Spark task runs the connector
task to its end (:func:`~connectrt.spark.executor_task.run_task`, shared by both), block the
calling driver thread until the job ends, and return the task's result dict. A failed task is
re-run by Spark (``spark.task.maxFailures``); the job raises once Spark gives up. ``cancel``
kills a launch's job by its tag (the last resort: no final commit).

* :class:`ClassicLauncher`: ``sc.parallelize([payload], 1).mapPartitions(...)``, in the
  connector's job group, with a job tag per launch; ``cancelJobsWithTag``.
* :class:`ConnectLauncher`: ``spark.range(1, numPartitions=1).mapInArrow(...)`` with the
  payload in the function's closure (:mod:`.connect_task`), the launch's tag and the
  connector's tag added on the launching thread (Spark Connect tags are per thread);
  ``interruptTag``. Works where RDDs and SparkContext are unavailable (Spark Connect servers,
  serverless and shared clusters).

Threading: ``run`` is called on each launch's own driver thread (``thread`` creates it),
``cancel`` from any thread.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from connectrt.errors import ConfigError
from connectrt.spark.executor_task import SparkTaskPayload, run_task_partition

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = ["ClassicLauncher", "ConnectLauncher", "TaskLauncher", "local_threads"]

log = logging.getLogger(__name__)

_LOCAL = re.compile(r"^local(?:\[(\d+|\*)(?:,\s*\d+)?\])?$")


def local_threads(master: str) -> int | None:
    """The task slots of a ``local``/``local[N]``/``local[N,F]`` master (``*``: this
    machine's cores); None for any other master."""
    import os

    match = _LOCAL.match(master.strip())
    if not match:
        return None
    n = match.group(1)
    if n is None:
        return 1
    return (os.cpu_count() or 1) if n == "*" else int(n)


class TaskLauncher(Protocol):
    """What :class:`~connectrt.spark.backend.SparkTaskExecutor` needs from Spark."""

    kind: str  # "classic" or "connect", for logs

    @property
    def master(self) -> str: ...

    def slots(self) -> int: ...

    def cluster_slots(self) -> tuple[int, int] | None:
        """``(slots, executors)`` of the executors registered now, on a cluster whose slots
        come and go; None where the slots are fixed (a local master, Spark Connect)."""
        ...

    def thread(self, target: Callable[[], None], name: str) -> threading.Thread: ...

    def run(self, payload: SparkTaskPayload, tag: str, group: str) -> dict[str, Any] | None: ...

    def cancel(self, tag: str) -> None: ...


class ClassicLauncher:
    """Launches on a classic :class:`SparkContext` (see the module docstring)."""

    kind = "classic"

    def __init__(self, sc: SparkContext) -> None:
        self.sc = sc

    @property
    def master(self) -> str:
        return str(self.sc.master)

    def slots(self) -> int:
        """The slots now: the registered executors' on a cluster (see :meth:`cluster_slots`),
        ``defaultParallelism`` (the threads) on a local master."""
        live = self.cluster_slots()
        return live[0] if live is not None else int(self.sc.defaultParallelism)

    def cluster_slots(self) -> tuple[int, int] | None:
        """On a cluster master: the tasks the registered executors can run at once (their
        cores over ``spark.task.cpus``, as Spark's barrier scheduling counts them) and the
        executor count; None on a local master."""
        if local_threads(self.master) is not None:
            return None
        jsc = self.sc._jsc.sc()
        profile = jsc.resourceProfileManager().defaultResourceProfile()
        return int(jsc.maxNumConcurrentTasks(profile)), int(jsc.getExecutorIds().size())

    def thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        from pyspark import InheritableThread

        return InheritableThread(target=target, name=name)

    def run(self, payload: SparkTaskPayload, tag: str, group: str) -> dict[str, Any] | None:
        sc = self.sc
        sc.setJobGroup(group, f"connectrt connector {payload.connector}", interruptOnCancel=True)
        sc.addJobTag(tag)
        try:
            results = sc.parallelize([payload], 1).mapPartitions(run_task_partition).collect()
            return results[0] if results else None
        finally:
            try:
                sc.removeJobTag(tag)
            except Exception:
                log.debug("Could not remove job tag %s", tag, exc_info=True)

    def cancel(self, tag: str) -> None:
        self.sc.cancelJobsWithTag(tag)


class ConnectLauncher:
    """Launches over a Spark Connect session (see the module docstring)."""

    kind = "connect"

    def __init__(self, spark: SparkSession, slots: int | None = None) -> None:
        self.spark = spark
        self._slots = slots
        self._master: str | None = None

    @property
    def master(self) -> str:
        if self._master is None:
            try:
                self._master = str(self.spark.conf.get("spark.master", "") or "")
            except Exception:
                self._master = ""
        return self._master

    def slots(self) -> int:
        """``task.executor.spark.slots`` if given, else a local server's thread count, else
        the server's ``spark.default.parallelism``; a cluster without it is a config error."""
        if self._slots:
            return self._slots
        threads = local_threads(self.master)
        if threads is not None:
            return threads
        try:
            parallelism = self.spark.conf.get("spark.default.parallelism", None)
        except Exception:
            parallelism = None
        if parallelism:
            return int(parallelism)
        raise ConfigError(
            f"Cannot tell how many task slots the Spark Connect server's cluster "
            f"({self.master or 'master unknown'}) has: set task.executor.spark.slots to its "
            "executor cores",
            "task.executor.spark.slots",
        )

    def cluster_slots(self) -> tuple[int, int] | None:
        """None: a Spark Connect client cannot see the server's executors."""
        return None

    def thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        return threading.Thread(target=target, name=name)

    def run(self, payload: SparkTaskPayload, tag: str, group: str) -> dict[str, Any] | None:
        from connectrt.spark.connect_task import RESULT_SCHEMA, run_task_batches

        spark = self.spark
        spark.addTag(group)
        spark.addTag(tag)
        try:
            job = spark.range(0, 1, 1, 1).mapInArrow(
                functools.partial(run_task_batches, payload), RESULT_SCHEMA
            )
            rows = job.collect()
        finally:
            spark.removeTag(tag)
            spark.removeTag(group)
        if not rows:
            return None
        result: dict[str, Any] = orjson.loads(rows[0]["result"])
        return result

    def cancel(self, tag: str) -> None:
        interrupted = self.spark.interruptTag(tag)
        log.info("Interrupted Spark Connect operations %s (tag %s)", interrupted, tag)
