"""The thread that runs one task, and what source and sink runners share.

Lifecycle: the worker builds a runner, calls :meth:`TaskRunner.start` (a new thread runs
``task.start()`` then the runner's loop), may call :meth:`transition_to` to pause/resume, and
calls :meth:`stop` (from any thread; it never waits on the task's code) then :meth:`join`
with the graceful timeout, and :meth:`abandon` when the task is still running after it. A task
that raises ends its loop and is reported FAILED with the traceback as its trace; other tasks
are unaffected.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectrt.api.converter import Converter, HeaderConverter
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.plugins.metrics import TaskPluginMetrics
from connectrt.runtime.status import State, StatusBoard, TargetState
from connectrt.runtime.tasks.liveness import CallClock, thread_stack
from connectrt.runtime.tasks.rate_limit import TaskRateLimiter

log = logging.getLogger(__name__)

__all__ = ["TaskConverters", "TaskId", "TaskRunner", "TaskStage", "class_path", "failure_trace"]


@dataclass(frozen=True, order=True)
class TaskId:
    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


def class_path(obj: object) -> str:
    """``module.QualName`` of a class, or of an instance's class (used in traces and DLQ
    headers as Kafka uses class names)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class TaskStage:
    """Where a failure happened (Kafka Connect's stage names)."""

    TASK_START = "TASK_START"
    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TASK_COMMIT = "TASK_COMMIT"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


@dataclass(frozen=True)
class TaskConverters:
    key: Converter
    value: Converter
    header: HeaderConverter


class TaskFailure(Exception):
    """Raised inside a runner to end the task with a stage-annotated message."""

    def __init__(self, task_id: TaskId, stage: str, message: str, record: Any = None) -> None:
        where = ""
        if record is not None:
            coords = [
                f"{k}={getattr(record, a)}"
                for k, a in (
                    ("topic", "topic"),
                    ("partition", "kafka_partition"),
                    ("offset", "kafka_offset"),
                )
                if getattr(record, a, None) is not None
            ]
            where = " (record " + ", ".join(coords) + ")" if coords else ""
        super().__init__(f"Task {task_id} failed in stage {stage}{where}: {message}")
        self.stage = stage


class TaskRunner(threading.Thread):
    """Base class: thread, target state, stop flag, status and metrics of one task."""

    def __init__(
        self,
        task_id: TaskId,
        task_config: dict[str, str],
        status: StatusBoard,
        target_state: TargetState = TargetState.STARTED,
        on_topic: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name=f"task-{task_id}", daemon=True)
        self.on_topic = on_topic or (lambda topic: None)
        self.on_failure: Callable[[TaskRunner], None] | None = None
        self.id = task_id
        self.task_config = task_config
        self.status = status
        self.metrics = TaskMetrics(task_id.connector, task_id.task)
        # The task's and its plugins' KIP-877 metrics; set by the runner factory, closed here.
        self.plugin_metrics: TaskPluginMetrics | None = None
        self._stopping = threading.Event()
        self._target = target_state
        self._state_changed = threading.Event()
        self._abandoned = False
        self._stopper: threading.Thread | None = None  # runs on_stop_requested, see stop()
        self.failed: BaseException | None = None
        # Brackets each call into the task (start/poll/put/flush/commit/stop), per batch; read
        # by the worker's stall watchdog (task.stall.timeout.ms).
        self.call_clock = CallClock()
        # task.rate.limit.*: admits each batch before delivery (None: no limit); see
        # set_rate_limit.
        self.rate_limiter: TaskRateLimiter | None = None
        # OpenTelemetry tracing (tracing.enabled): the runner kind's tracer, set before start()
        # (connectrt.runtime.sink.tracing / source.tracing); None when off, checked per batch.
        self.tracer: Any = None

    def set_rate_limit(self, records_per_s: float, bytes_per_s: float) -> None:
        """Limit the task's records and bytes a second (0: no limit); before ``start()``."""
        if records_per_s > 0 or bytes_per_s > 0:
            self.rate_limiter = TaskRateLimiter(
                records_per_s, bytes_per_s, self._stopping.wait, self._stopping.is_set
            )
        else:
            self.rate_limiter = None

    def current_stack(self) -> str:
        """The runner thread's current stack (for a stalled task's trace); any thread."""
        return thread_stack(self.ident)

    # -- control (called from other threads) ------------------------------------------------
    def stop(self) -> None:
        """Ask the task to stop; returns at once, whatever the task's plugin code does.
        ``join()`` waits for the final commit. :meth:`on_stop_requested` (a source task's
        ``stop()``) runs once, on a daemon thread of its own (``task-<id>-stop``): a ``stop()``
        that blocks holds that thread only, never the caller (management)."""
        first = not self._stopping.is_set()
        self._stopping.set()
        self._state_changed.set()
        if first:
            stopper = threading.Thread(
                target=self._request_stop, name=f"task-{self.id}-stop", daemon=True
            )
            self._stopper = stopper
            stopper.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the task's thread and for its ``stop()`` call to end (at most ``timeout``
        in all): a task is stopped once both are."""
        deadline = None if timeout is None else time.monotonic() + timeout
        super().join(timeout)
        stopper = self._stopper
        if stopper is not None:
            stopper.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def is_alive(self) -> bool:
        """Whether the task's thread, or its ``stop()`` call, still runs."""
        stopper = self._stopper
        return super().is_alive() or (stopper is not None and stopper.is_alive())

    def _request_stop(self) -> None:
        try:
            self.on_stop_requested()
        except Exception:
            log.exception("Task %s: error while asking it to stop", self.id)

    def abandon(self) -> None:
        """The worker gave up waiting for this task (graceful-shutdown timeout, stall restart)
        and may already run a new one with the same id: whatever this thread does later, it
        reports no state."""
        self._abandoned = True

    def on_stop_requested(self) -> None:
        """Hook for subclasses (e.g. to call ``SourceTask.stop()`` to wake a blocked poll)."""

    def transition_to(self, target: TargetState) -> None:
        self._target = target
        self._state_changed.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def target_state(self) -> TargetState:
        return self._target

    # -- thread body -------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        finally:
            if self.tracer is not None:
                try:
                    self.tracer.close()
                except Exception:
                    log.exception("Task %s: error flushing its trace spans", self.id)
            self.close_converters()
            if self.plugin_metrics is not None:
                self.plugin_metrics.close()

    def close_converters(self) -> None:
        """Release converter resources (e.g. a schema registry client) once the task ends."""
        converters = getattr(self, "converters", None)
        if converters is None:
            return
        for converter in (converters.key, converters.value, converters.header):
            close = getattr(converter, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    log.exception("Task %s: error closing %s", self.id, type(converter).__name__)

    def _run(self) -> None:
        try:
            self.execute()
        except BaseException as e:
            self.failed = e
            trace = failure_trace(e)
            log.error("Task %s threw an uncaught and unrecoverable exception\n%s", self.id, trace)
            if not self._abandoned:
                self.status.put(self.id.connector, self.id.task, State.FAILED, trace)
            self.metrics.errors += 1
            try:
                self.close_after_failure()
            except Exception:
                log.exception("Error while closing failed task %s", self.id)
            if self.on_failure is not None and not self._abandoned:
                self.on_failure(self)
            return
        if not self.failed and not self._abandoned:
            self.status.put(self.id.connector, self.id.task, State.UNASSIGNED)

    def execute(self) -> None:
        raise NotImplementedError

    def close_after_failure(self) -> None:
        """Release clients after a failure (the task's ``stop()`` is called too)."""

    def report_running_or_paused(self) -> None:
        state = State.PAUSED if self._target is TargetState.PAUSED else State.RUNNING
        self.status.put(self.id.connector, self.id.task, state)

    def wait_while_paused(self) -> bool:
        """Block while the target state is PAUSED; True if the task should continue."""
        if self._target is not TargetState.PAUSED:
            return not self.stopping
        self.status.put(self.id.connector, self.id.task, State.PAUSED)
        while self._target is TargetState.PAUSED and not self.stopping:
            self._state_changed.wait(0.5)
            self._state_changed.clear()
            self.while_paused()
        if not self.stopping:
            self.status.put(self.id.connector, self.id.task, State.RUNNING)
        return not self.stopping

    def while_paused(self) -> None:
        """Called about twice a second while paused (keep clients alive, commit offsets)."""


def failure_trace(error: BaseException) -> str:
    """A failed task's trace: the exception that failed the task on the first line, as in
    Kafka Connect's traces, then Python's traceback (which prints the causes first and this
    exception last). So a ``raise ... from cause`` reads top-down: what failed, then why."""
    cls = type(error)
    name = (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )
    return f"{name}: {error}\n" + "".join(traceback.format_exception(error))
