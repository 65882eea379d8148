"""The Spark task executor: a worker's connector tasks run as long-running Spark tasks.

:class:`SparkTaskExecutor` plugs into :class:`~connectrt.runtime.worker.worker.Worker` as its
:class:`~connectrt.runtime.executors.task_executor.TaskExecutor`; the herder, the REST API and the
Kafka-topic stores stay as in ``connectrt worker``, in the Spark driver. A running task's
metrics reach the driver's :attr:`SparkTaskHandle.metrics` every few seconds through the status
topic (:mod:`.status_relay`), and its final figures with its result. The worker's stall
watchdog (``task.stall.timeout.ms``) watches Spark tasks too: each task reports the call it has
been stuck in through the status topic (:mod:`.status_relay`) into its handle's
:class:`~connectrt.runtime.executors.call_reports.CallMirror`, and ``task.stall.action=restart``
restarts it as any restart does (stop signal, then a cancel after the graceful-shutdown timeout).

Launch: each task launch is a Spark job of one partition (its :class:`SparkTaskPayload`),
submitted from a driver thread of its own by a :mod:`launcher <.launchers>`: on a classic
SparkContext (an RDD in the connector's job group ``connectrt:<connector>``) or over Spark
Connect (a one-row DataFrame through ``mapInArrow``, tagged ``connectrt:<connector>``), with a
tag of its own. One job per task, not one job for all of a connector's tasks, because a Spark
job fails as a whole: a task that exhausts ``spark.task.maxFailures`` would kill its healthy
siblings without their final commit, and the driver learns that a partition ended only when
its job does; per task, a launch ends exactly when its task does.

Control: pause, resume and stop are signals in the signal topic (:mod:`.signals`); the task
commits and returns, so its job ends. Only a task that has not ended
``task.shutdown.graceful.timeout.ms`` after its stop signal is cancelled by its tag
(``cancelJobsWithTag`` / ``interruptTag``: a hard kill, no final commit; the next run resumes
from the last commit). Status flows back through the status topic (:mod:`.status_relay`).
Before a launch,
:class:`~.slots.SlotLedger` checks that the cluster keeps ``task.executor.spark.free.slots``
slots free beyond every running task; otherwise the tasks and the connector are reported FAILED
with the reason.

Exactly-once sources (KIP-618) need nothing of the backend: the worker fences the previous
generation before calling ``start_tasks``, and each Spark task builds its transactional
producer on the executor (:mod:`.executor_task`).

Threading: ``start_tasks`` is called under the worker's lock; handles are controlled from the
worker's threads; each launch has its own driver thread; the status relay has one thread.
"""

from __future__ import annotations

import itertools
import logging
import threading
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.call_reports import CallMirror
from connectrt.runtime.executors.task_executor import TaskHandle, WorkerView
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.tasks.runner import TaskId
from connectrt.spark.config import SparkBackendConfig
from connectrt.spark.executor_task import SparkTaskPayload
from connectrt.spark.launchers import TaskLauncher
from connectrt.spark.signals import Signal, SignalWriter
from connectrt.spark.slots import NotEnoughSlots, SlotLedger
from connectrt.spark.status_relay import StatusRelay
from connectrt.storage.status_codec import TaskCallRecord, TaskMetricsRecord

__all__ = ["SparkTaskExecutor", "SparkTaskHandle"]

log = logging.getLogger(__name__)


def job_group(connector: str) -> str:
    return f"connectrt:{connector}"


class SparkTaskHandle:
    """One task launch on Spark, as the worker controls it (see :class:`TaskHandle`)."""

    def __init__(
        self,
        backend: SparkTaskExecutor,
        payload: SparkTaskPayload,
        on_failure: Callable[[Any], None],
    ) -> None:
        self.backend = backend
        self.payload = payload
        self.id = TaskId(payload.connector, payload.task)
        self.generation = payload.generation
        self.metrics = TaskMetrics(payload.connector, payload.task)
        self.failed: BaseException | None = None
        self.on_failure: Callable[[Any], None] | None = on_failure
        self.result: dict[str, Any] | None = None
        self.cancelled = False
        self.tag = f"connectrt:{payload.connector}:{payload.task}:g{payload.generation}"
        # The call the Spark task is in, as it reports it (task.stall.timeout.ms).
        self.call_mirror = CallMirror(f"the Spark task {self.tag}")
        self.call_clock = self.call_mirror.call_clock
        self._target = TargetState(payload.target)
        self._stop_requested = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # -- TaskHandle ----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop_requested = True
        self.backend.send_signal(self, Signal("", 0, self._target, stop=True))

    def transition_to(self, target: TargetState) -> None:
        self._target = target
        self.backend.send_signal(self, Signal("", 0, target))

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the task to end; a task asked to stop that is still running when
        ``timeout`` passes is cancelled (the last resort)."""
        if self._done.wait(timeout) or not self._stop_requested:
            return
        log.error(
            "Task %s did not stop within task.shutdown.graceful.timeout.ms; cancelling its "
            "Spark job (no final commit: the next run resumes from the last committed offsets)",
            self.id,
        )
        self.cancelled = True
        self.backend.cancel(self)
        self._done.wait(self.backend.config.cancel_wait_s)

    def current_stack(self) -> str:
        """The task thread's stack as the Spark task last reported it (a stalled task's
        trace)."""
        return self.call_mirror.current_stack()

    # -- the driver thread ---------------------------------------------------------------------
    def start(self) -> None:
        self._thread = self.backend.launcher.thread(self._run, f"spark-task-{self.id}")
        self._thread.daemon = True
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self.backend.launcher.run(
                self.payload, self.tag, job_group(self.id.connector)
            )
            metrics = (self.result or {}).get("metrics")
            if metrics:
                self.metrics.apply_snapshot(metrics)
        except Exception as e:
            if self._stop_requested:
                log.info("Spark job of task %s ended while stopping: %s", self.id, e)
            else:
                self.failed = e
                trace = "".join(traceback.format_exception(e))
                log.error("Task %s failed on Spark (no attempts left)\n%s", self.id, trace)
                self.backend.task_failed(self, trace)
        finally:
            self.backend.ended(self)
            self._done.set()
        if self.failed is not None and self.on_failure is not None:
            self.on_failure(self)


class SparkTaskExecutor:
    """See the module docstring. ``start`` before the worker starts connectors."""

    def __init__(
        self, launcher: TaskLauncher, wc: WorkerConfig, config: SparkBackendConfig
    ) -> None:
        self.launcher = launcher
        self.worker_config = wc
        self.config = config
        self.run_id = uuid.uuid4().hex
        self.slots = SlotLedger(
            config.slots or launcher.slots(), config.free_slots_for(launcher.master)
        )
        self._generations = itertools.count(1)
        self._lock = threading.Lock()
        self._live: dict[tuple[str, int], SparkTaskHandle] = {}
        self._worker: WorkerView | None = None
        self._signals = SignalWriter(wc, config.signal_topic)
        self._relay = StatusRelay(
            wc, self._accept_status, self._on_topic, self._on_call, self._on_metrics
        )
        self.launches = 0
        self.cancels = 0

    def start(self) -> None:
        self._signals.start()
        self._relay.start()
        log.info(
            "Spark task executor ready (%s launcher, master %s): %d slot(s) (%d kept free), "
            "signals in %s",
            self.launcher.kind,
            self.launcher.master,
            self.slots.total,
            self.slots.free,
            self._signals.topic,
        )

    def stop(self) -> None:
        self._relay.stop()
        self._signals.stop()

    # -- TaskExecutor --------------------------------------------------------------------------
    def start_tasks(
        self,
        worker: WorkerView,
        connector: str,
        tasks: list[tuple[int, dict[str, str]]],
        on_failure: Callable[[Any], None],
    ) -> dict[int, TaskHandle]:
        self._worker = worker
        try:
            self.slots.reserve(connector, len(tasks))
        except NotEnoughSlots as e:
            message = str(e)
            log.error("%s", message)
            for index, _ in tasks:
                worker.status.put(connector, index, State.FAILED, message)
            worker.status.put(connector, None, State.FAILED, message)
            return {}
        resolved = worker.resolved_config(connector)
        target = worker.target_state(connector)
        kind = worker.connector_type(connector)
        handles: dict[int, TaskHandle] = {}
        for index, task_config in tasks:
            payload = SparkTaskPayload(
                connector=connector,
                task=index,
                kind=kind,
                target=target.value,
                run=self.run_id,
                generation=next(self._generations),
                signal_topic=self.config.signal_topic,
                worker_props=dict(self.worker_config.originals),
                connector_config=resolved,
                task_config=dict(task_config),
                redact=tuple(
                    process_redactor().secrets_in(
                        str(v) for v in {**resolved, **task_config}.values()
                    )
                ),
            )
            handle = SparkTaskHandle(self, payload, on_failure)
            try:
                self._signals.send(connector, index, Signal(self.run_id, handle.generation, target))
            except Exception:
                trace = traceback.format_exc()
                log.error("Could not launch task %s\n%s", handle.id, trace)
                self.slots.release(connector)
                worker.status.put(connector, index, State.FAILED, trace)
                continue
            with self._lock:
                self._live[(connector, index)] = handle
            worker.status.put(connector, index, State.UNASSIGNED)
            handle.start()
            self.launches += 1
            handles[index] = handle
        return handles

    # -- called by handles ---------------------------------------------------------------------
    def send_signal(self, handle: SparkTaskHandle, signal: Signal) -> None:
        stamped = Signal(self.run_id, handle.generation, signal.target, signal.stop)
        try:
            self._signals.send(handle.id.connector, handle.id.task, stamped)
        except Exception:
            log.exception("Could not signal task %s", handle.id)

    def cancel(self, handle: SparkTaskHandle) -> None:
        self.cancels += 1
        self.launcher.cancel(handle.tag)

    def ended(self, handle: SparkTaskHandle) -> None:
        """The launch's job is over: forget it and free its slot."""
        with self._lock:
            if self._live.get((handle.id.connector, handle.id.task)) is handle:
                del self._live[(handle.id.connector, handle.id.task)]
        self.slots.release(handle.id.connector)

    def task_failed(self, handle: SparkTaskHandle, trace: str) -> None:
        worker = self._worker
        if worker is not None:
            worker.status.put(handle.id.connector, handle.id.task, State.FAILED, trace)

    # -- status relay --------------------------------------------------------------------------
    def _accept_status(self, status: Status) -> None:
        worker = self._worker
        if worker is None or status.task is None:
            return
        with self._lock:
            handle = self._live.get((status.connector, status.task))
            if handle is None or handle.generation != status.generation:
                return
            worker.status.record(status)

    def _on_call(self, record: TaskCallRecord) -> None:
        """A Spark task's open call (or its return): into the live launch's call mirror."""
        with self._lock:
            handle = self._live.get((record.name, record.task))
        if handle is None or handle.generation != record.generation:
            return
        handle.call_mirror.where = f"the Spark task {handle.tag} on {record.worker_id}"
        report = None
        if record.call is not None:
            report = (record.call, record.entered, record.age, record.stack)
        handle.call_mirror.update(report)

    def _on_metrics(self, record: TaskMetricsRecord) -> None:
        """A running Spark task's metrics: into the live launch's :attr:`metrics`."""
        with self._lock:
            handle = self._live.get((record.name, record.task))
        if handle is not None and handle.generation == record.generation:
            handle.metrics.apply_snapshot(record.metrics)

    def _on_topic(self, connector: str, topic: str, task: int) -> None:
        worker = self._worker
        if worker is not None:
            worker.hooks.on_topic(connector, topic, task)

    # -- observation ---------------------------------------------------------------------------
    def live_tasks(self, connector: str | None = None) -> list[TaskId]:
        with self._lock:
            return sorted(h.id for h in self._live.values() if connector in (None, h.id.connector))
