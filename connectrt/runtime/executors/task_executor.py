"""Where a worker's tasks run: the executor interface and the in-process thread executor.

A :class:`~connectrt.runtime.worker.worker.Worker` hands the tasks of a connector to its
:class:`TaskExecutor` and controls each started task through the :class:`TaskHandle` it gets
back. The executor sees the worker only through :class:`WorkerView`, so executors need not
import the worker. Implementations:

* :class:`ThreadTaskExecutor` (here, the default): one :class:`TaskRunner` thread per task in
  this process;
* ``connectrt.runtime.executors.process.executor.ProcessTaskExecutor``
  (``task.executor=processes``): one child process per task on this machine;
* ``connectrt.spark.backend.SparkTaskExecutor``: one long-running Spark task per task.

This module is the contract they meet; the two that run a task elsewhere send it a
:class:`~connectrt.runtime.executors.task_payload.TaskPayload`.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

from connectrt.runtime.executors.worker_hooks import WorkerHooks
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.status import State, StatusBoard, TargetState
from connectrt.runtime.tasks.runner import TaskId, TaskRunner
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = [
    "OnFailure",
    "TaskConfigs",
    "TaskExecutor",
    "TaskHandle",
    "ThreadTaskExecutor",
    "WorkerView",
]

TaskConfigs: TypeAlias = list[tuple[int, dict[str, str]]]
"""The tasks of one connector an executor is asked to start: (index, resolved task config)."""

OnFailure: TypeAlias = Callable[[Any], None]
"""Called (from any thread) once when a task has failed for good."""


class TaskHandle(Protocol):
    """One running task as the worker controls it (a :class:`TaskRunner` is one).

    ``stop()`` asks the task to commit and exit and returns at once; ``join`` waits for it;
    ``transition_to`` pauses or resumes it. ``on_failure`` is set by the worker before the task
    starts and is called (from any thread) once when the task has failed for good.
    """

    id: TaskId
    metrics: TaskMetrics
    failed: BaseException | None
    on_failure: OnFailure | None

    def stop(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...

    def is_alive(self) -> bool: ...

    def transition_to(self, target: TargetState) -> None: ...


class WorkerView(Protocol):
    """What an executor may use of the worker that calls it (the Worker is the implementation).

    ``status`` is the worker's status board (thread-safe); ``hooks`` its process hooks;
    ``offset_store`` its source offset store (thread-safe).
    ``build_runner`` builds, without starting, the local runner of a task of a started connector.
    The per-connector getters return the connector's resolved config, target state and type
    (``"source"``/``"sink"``). Called from ``start_tasks`` (under the worker's lock) or from the
    executor's own threads.
    """

    @property
    def status(self) -> StatusBoard: ...

    @property
    def hooks(self) -> WorkerHooks: ...

    @property
    def offset_store(self) -> OffsetStore: ...

    def build_runner(self, task_id: TaskId, task_config: dict[str, str]) -> TaskRunner: ...

    def resolved_config(self, name: str) -> dict[str, str]: ...

    def target_state(self, name: str) -> TargetState: ...

    def connector_type(self, name: str) -> str: ...


class TaskExecutor(Protocol):
    """Where a worker's tasks run.

    ``start_tasks`` is called by the worker under its lock with the tasks of one connector to
    start (index, resolved task config). It builds and starts them, calling ``on_failure`` from
    each task when it fails for good, and returns a handle per started task; a task that cannot
    start is reported FAILED on the worker's status board and gets no handle. ``stop`` is called
    once when the worker stops, after every task was stopped.
    """

    def start_tasks(
        self, worker: WorkerView, connector: str, tasks: TaskConfigs, on_failure: OnFailure
    ) -> dict[int, TaskHandle]: ...

    def stop(self) -> None: ...


class ThreadTaskExecutor:
    """The default executor: one :class:`TaskRunner` thread per task, in this process.

    Stateless: the runners are the handles, and the worker stops and joins them.
    """

    def start_tasks(
        self, worker: WorkerView, connector: str, tasks: TaskConfigs, on_failure: OnFailure
    ) -> dict[int, TaskHandle]:
        handles: dict[int, TaskHandle] = {}
        for index, task_config in tasks:
            task_id = TaskId(connector, index)
            try:
                runner = worker.build_runner(task_id, task_config)
            except Exception:
                trace = traceback.format_exc()
                log.error("Failed to start task %s\n%s", task_id, trace)
                worker.status.put(connector, index, State.FAILED, trace)
                continue
            runner.on_failure = on_failure
            worker.status.put(connector, index, State.UNASSIGNED)
            runner.start()
            handles[index] = runner
        return handles

    def stop(self) -> None:
        return None
