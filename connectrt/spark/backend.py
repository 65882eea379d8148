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
slots free beyond every running task; otherwise the connector's tasks wait: their handles exist
but are not launched, their status is UNASSIGNED with the reason as trace, and they launch when
slots appear (:mod:`.slot_watch` follows a cluster's executors when
``task.executor.spark.slots`` is 0) or other tasks end. A waiting task that is stopped just
ends; a shortage never fails a connector.

Exactly-once sources (KIP-618) need nothing of the backend: the worker fences the previous
generation before calling ``start_tasks``, and each Spark task builds its transactional
producer on the executor (:mod:`.executor_task`).

Threading: ``start_tasks`` is called under the worker's lock; handles are controlled from the
worker's threads; each launch has its own driver thread; the status relay has one thread, the
slot watch another. Waiting launches are guarded by their own lock (``_waiting_lock``), taken
before the backend's ``_lock`` when both are held.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.remote_handle import RemoteTaskHandle
from connectrt.runtime.executors.task_executor import OnFailure, TaskConfigs, TaskHandle, WorkerView
from connectrt.runtime.executors.task_payload import ConnectorLaunch
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.tasks.runner import TaskId
from connectrt.spark.config import SparkBackendConfig, spark_conf
from connectrt.spark.executor_task import SparkTaskPayload
from connectrt.spark.launchers import TaskLauncher
from connectrt.spark.signals import Signal, SignalWriter
from connectrt.spark.slot_watch import SlotWatch, expected_slots
from connectrt.spark.slots import NotEnoughSlots, SlotLedger
from connectrt.spark.status_relay import StatusRelay
from connectrt.storage.status_codec import TaskCallRecord, TaskMetricsRecord

__all__ = ["SparkTaskExecutor", "SparkTaskHandle"]

log = logging.getLogger(__name__)


def job_group(connector: str) -> str:
    return f"connectrt:{connector}"


class SparkTaskHandle(RemoteTaskHandle):
    """One task launch on Spark, as the worker controls it (see :class:`TaskHandle`)."""

    def __init__(
        self,
        backend: SparkTaskExecutor,
        payload: SparkTaskPayload,
        on_failure: Callable[[Any], None],
    ) -> None:
        self.tag = f"connectrt:{payload.connector}:{payload.task}:g{payload.generation}"
        # The call the Spark task is in, as it reports it (task.stall.timeout.ms).
        super().__init__(payload, on_failure, f"the Spark task {self.tag}")
        self.backend = backend
        self.payload = payload
        self.generation = payload.generation
        self.result: dict[str, Any] | None = None
        self.cancelled = False
        self._target = TargetState(payload.target)
        self._thread: threading.Thread | None = None
        # False while the task waits for a slot (no Spark job yet); set under _waiting_lock.
        self.launched = False

    # -- TaskHandle ----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop_requested = True
        if self.backend.drop_waiting(self):
            return
        self.backend.send_signal(self, Signal("", 0, self._target, stop=True))

    def transition_to(self, target: TargetState) -> None:
        self._target = target
        if self.launched:
            self.backend.send_signal(self, Signal("", 0, target))

    @property
    def target(self) -> TargetState:
        return self._target

    def end_unlaunched(self) -> None:
        """The task will never launch (stopped while waiting for a slot): it has ended."""
        self._done.set()

    def _end_now(self) -> float:
        log.error(
            "Task %s did not stop within task.shutdown.graceful.timeout.ms; cancelling its "
            "Spark job (no final commit: the next run resumes from the last committed offsets)",
            self.id,
        )
        self.cancelled = True
        self.backend.cancel(self)
        return self.backend.config.cancel_wait_s

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
        free = config.free_slots_for(launcher.master)
        live = None if config.slots else launcher.cluster_slots()
        self._watch: SlotWatch | None = None
        if config.slots:
            self.slots = SlotLedger(config.slots, free)
        elif live is not None:
            self.slots = SlotLedger(live[0], free, live=True)
            self.slots.executors = live[1]
            self._watch = SlotWatch(
                self.slots, self._probe_slots, self.launch_waiting, config.slots_poll_s
            )
        else:
            self.slots = SlotLedger(launcher.slots(), free)
        # Connectors whose tasks wait for slots, in arrival order: (connector, handles).
        self._waiting: list[tuple[str, list[SparkTaskHandle]]] = []
        self._waiting_lock = threading.RLock()
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
        if self._watch is not None:
            self._watch.await_executors(
                self.config.executors_wait_s,
                expected_slots(spark_conf(self.worker_config.originals)),
            )
            self._watch.start()
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
        if self._watch is not None:
            self._watch.stop()
        self._relay.stop()
        self._signals.stop()

    def _probe_slots(self) -> tuple[int, int]:
        live = self.launcher.cluster_slots()
        return live if live is not None else (self.slots.total, self.slots.executors or 0)

    # -- TaskExecutor --------------------------------------------------------------------------
    def start_tasks(
        self, worker: WorkerView, connector: str, tasks: TaskConfigs, on_failure: OnFailure
    ) -> dict[int, TaskHandle]:
        self._worker = worker
        launch = ConnectorLaunch.read(worker, connector)
        pending: list[SparkTaskHandle] = []
        for index, task_config in tasks:
            payload = launch.payload(
                SparkTaskPayload,
                index,
                task_config,
                generation=next(self._generations),
                worker_props=self.worker_config.originals,
                run=self.run_id,
                signal_topic=self.config.signal_topic,
                # The secrets of the task's configs and of the worker's (its client security
                # keys' resolved values, the passwords in its JAAS strings).
                redact=tuple(
                    process_redactor().secrets_in(
                        str(v)
                        for config in (self.worker_config.originals, launch.config, task_config)
                        for v in config.values()
                    )
                ),
            )
            pending.append(SparkTaskHandle(self, payload, on_failure))
        with self._waiting_lock:
            try:
                self.slots.reserve(connector, len(pending))
            except NotEnoughSlots as e:
                self._wait_for_slots(worker, connector, pending, str(e))
                return {h.id.task: h for h in pending}
            launched = [h for h in pending if self._launch(worker, h)]
        return {h.id.task: h for h in launched}

    def _wait_for_slots(
        self, worker: WorkerView, connector: str, handles: list[SparkTaskHandle], reason: str
    ) -> None:
        """Park ``handles`` until slots appear: UNASSIGNED with ``reason`` as their trace."""
        log.warning("%s", reason)
        for handle in handles:
            worker.status.put(connector, handle.id.task, State.UNASSIGNED, reason)
        self._waiting.append((connector, handles))

    def _launch(self, worker: WorkerView, handle: SparkTaskHandle) -> bool:
        """Launch a task whose slot is reserved (under ``_waiting_lock``); False if it could
        not be (FAILED, its slot released)."""
        connector, index = handle.id.connector, handle.id.task
        handle.payload = dataclasses.replace(handle.payload, target=handle.target.value)
        try:
            self._signals.send(
                connector, index, Signal(self.run_id, handle.generation, handle.target)
            )
        except Exception:
            trace = traceback.format_exc()
            log.error("Could not launch task %s\n%s", handle.id, trace)
            self.slots.release(connector)
            worker.status.put(connector, index, State.FAILED, trace)
            handle.end_unlaunched()
            return False
        with self._lock:
            self._live[(connector, index)] = handle
        handle.launched = True
        worker.status.put(connector, index, State.UNASSIGNED)
        handle.start()
        self.launches += 1
        return True

    def launch_waiting(self) -> None:
        """Launch the waiting connectors that fit now, in arrival order (the slot watch calls
        this when the slots change, :meth:`ended` when a task frees its slot)."""
        worker = self._worker
        if worker is None:
            return
        with self._waiting_lock:
            still: list[tuple[str, list[SparkTaskHandle]]] = []
            for connector, handles in self._waiting:
                if not handles:
                    continue
                try:
                    self.slots.reserve(connector, len(handles))
                except NotEnoughSlots as e:
                    for handle in handles:
                        worker.status.put(connector, handle.id.task, State.UNASSIGNED, str(e))
                    still.append((connector, handles))
                    continue
                log.info(
                    "Spark task slots for connector %s: launching its waiting tasks", connector
                )
                for handle in handles:
                    self._launch(worker, handle)
            self._waiting = still

    def drop_waiting(self, handle: SparkTaskHandle) -> bool:
        """Forget ``handle`` if it still waits for a slot (it ends); False if it launched."""
        with self._waiting_lock:
            if handle.launched:
                return False
            for _, handles in self._waiting:
                if handle in handles:
                    handles.remove(handle)
            self._waiting = [(c, hs) for c, hs in self._waiting if hs]
        handle.end_unlaunched()
        return True

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
        if self._waiting:
            self.launch_waiting()

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
    def waiting_connectors(self) -> list[str]:
        """The connectors whose tasks wait for Spark task slots, in arrival order."""
        with self._waiting_lock:
            return [connector for connector, _ in self._waiting]

    def live_tasks(self, connector: str | None = None) -> list[TaskId]:
        with self._lock:
            return sorted(h.id for h in self._live.values() if connector in (None, h.id.connector))
