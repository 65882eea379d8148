"""``task.executor=processes``: every task of the worker in an OS process of its own.

:class:`ProcessTaskExecutor` is the third implementation of the worker's
:class:`~connectrt.runtime.executors.task_executor.TaskExecutor` (beside threads and Spark). Each
task launch is a child process on this machine (:mod:`.launcher`), given a payload
(:class:`~.payload.ProcessTaskPayload`: worker properties, resolved connector and task configs,
memory limit) over its channel; the child rebuilds the task as a local worker would and runs
it (:mod:`.child_task`), and the worker watches and controls it through a
:class:`~.handle.ProcessTaskHandle`.

What a process buys: a task has its own interpreter (its own GIL: CPU-bound tasks use one core
each), its own heap under its own limit (``task.memory.limit.mb``), and its own crash domain (a
segfault, ``os._exit`` or an OOM kill fails that task alone; ``errors.task.restart.*`` restarts
it). What it costs: a process start per launch (an interpreter and the runtime's imports,
about a second) and about 30 MB of resident memory per task.

Threading: ``start_tasks`` is called under the worker's lock; spawning happens on the
launcher's thread; each handle has its supervisor thread.
"""

from __future__ import annotations

import itertools
import logging
import threading
import traceback
from collections.abc import Mapping

from connectrt.runtime.config.task_limits import task_limit
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.process.handle import KILL_WAIT_S, ProcessTaskHandle
from connectrt.runtime.executors.process.launcher import Launcher, spawn_task_process
from connectrt.runtime.executors.process.payload import ProcessTaskPayload
from connectrt.runtime.executors.task_executor import OnFailure, TaskConfigs, TaskHandle, WorkerView
from connectrt.runtime.executors.task_payload import ConnectorLaunch
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.status import State
from connectrt.runtime.tasks.runner import TaskId

__all__ = ["ProcessTaskExecutor", "memory_limit_mb"]

log = logging.getLogger(__name__)

MEMORY_LIMIT_KEY = "task.memory.limit.mb"


def memory_limit_mb(connector_config: Mapping[str, str], wc: WorkerConfig) -> int:
    """The connector's ``task.memory.limit.mb``, else the worker's (0: no limit)."""
    return int(task_limit(connector_config, wc, MEMORY_LIMIT_KEY) or 0)


def _secrets_in(config: Mapping[str, str]) -> tuple[str, ...]:
    """The secrets the worker's log filter hides that occur in ``config``."""
    return tuple(process_redactor().secrets_in(str(v) for v in config.values()))


class ProcessTaskExecutor:
    """See the module docstring. Stateless toward the worker apart from its live handles."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self._launcher = Launcher()
        self._generations = itertools.count(1)
        self._lock = threading.Lock()
        self._live: dict[TaskId, ProcessTaskHandle] = {}
        self.launches = 0

    def start_tasks(
        self, worker: WorkerView, connector: str, tasks: TaskConfigs, on_failure: OnFailure
    ) -> dict[int, TaskHandle]:
        launch = ConnectorLaunch.read(worker, connector)
        limit = memory_limit_mb(launch.config, self.config)
        handles: dict[int, TaskHandle] = {}
        for index, task_config in tasks:
            payload = launch.payload(
                ProcessTaskPayload,
                index,
                task_config,
                worker_id=worker.status.worker_id,
                log_level=logging.getLogger().getEffectiveLevel(),
                memory_limit_mb=limit,
                redact=_secrets_in({**launch.config, **task_config}),
                generation=next(self._generations),
                worker_props=self.config.originals,
            )
            try:
                process, channel = self._launcher.call(lambda: spawn_task_process(limit))
            except Exception:
                trace = traceback.format_exc()
                log.error("Could not start a process for task %s\n%s", payload.task_id, trace)
                worker.status.put(connector, index, State.FAILED, trace)
                continue
            handle = ProcessTaskHandle(worker, payload, process, channel, on_failure, self._ended)
            with self._lock:
                self._live[handle.id] = handle
            worker.status.put(connector, index, State.UNASSIGNED)
            handle.start()
            self.launches += 1
            log.info("Task %s started in process %d", handle.id, handle.pid)
            handles[index] = handle
        return handles

    def _ended(self, handle: ProcessTaskHandle) -> None:
        with self._lock:
            if self._live.get(handle.id) is handle:
                del self._live[handle.id]

    def stop(self) -> None:
        """Kill whatever task process is still running (the worker stopped every task
        before), then end the launcher thread."""
        with self._lock:
            left = list(self._live.values())
        for handle in left:
            log.error(
                "Task %s: process %d still running at shutdown; killing it", handle.id, handle.pid
            )
            handle.kill()
        for handle in left:
            handle.join(KILL_WAIT_S)
        self._launcher.stop()

    # -- observation ---------------------------------------------------------------------------
    def live_handles(self) -> dict[TaskId, ProcessTaskHandle]:
        with self._lock:
            return dict(self._live)
