"""The task process's body: rebuild the task from its payload, run it, report through the link.

:func:`run_child_task` runs in the child's main thread once the payload has arrived and the
memory limit is in place. The task is rebuilt by the same
:func:`~connectrt.runtime.executors.task_payload.build_runner` every executor uses, with

* a status board whose listener forwards each state (and trace) to the worker, which shows it
  and persists it in its status store (memory or the status topic) as for a local task;
* source offsets read and written through the worker's own offset store
  (:class:`ParentOffsetStore`: each ``set`` returns once the worker's store has it durable), so
  the offsets topic, file or memory store is the same for every executor;
* sink offsets in the connector's consumer group, as always;
* the task's metrics sent to the worker every second and at the end, with the call the task
  is in and, once that call has lasted a second, the task thread's stack
  (:class:`~connectrt.runtime.executors.call_reports.CallReporter`): the worker's stall watchdog
  (``task.stall.timeout.ms``) reads them.

The runner runs on this thread; the link's reader thread applies pause, resume and stop. The
last message is ``("done", failed)``.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

from connectrt.errors import ConnectError
from connectrt.runtime.executors.call_reports import CallReporter
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.runtime.executors.process.child_link import ChildLink, RequestFailed
from connectrt.runtime.executors.process.memory_limit import (
    caused_by_memory_error,
    memory_limit_message,
)
from connectrt.runtime.executors.process.payload import ProcessTaskPayload
from connectrt.runtime.executors.task_payload import build_runner
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.secrets.masking import install_log_redaction
from connectrt.runtime.status import State, Status, StatusBoard, TargetState
from connectrt.runtime.tasks.runner import TaskRunner

__all__ = ["ParentOffsetStore", "run_child_task"]

log = logging.getLogger(__name__)

_REQUEST_TIMEOUT_S = 120.0


class ParentOffsetStore:
    """An :class:`~connectrt.storage.offsets.OffsetStore` that is the worker's store, reached
    over the link (thread-safe; each call waits for the worker's answer)."""

    def __init__(self, link: ChildLink) -> None:
        self._link = link

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def _call(self, kind: str, *args: Any) -> Any:
        try:
            return self._link.request(kind, *args, timeout=_REQUEST_TIMEOUT_S)
        except RequestFailed as e:
            raise ConnectError(f"Offset store of the worker: {e}") from None

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        result: dict[bytes, bytes | None] = self._call("offsets.get", list(keys))
        return result

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        self._call("offsets.set", dict(entries))

    def all(self) -> dict[bytes, bytes]:
        result: dict[bytes, bytes] = self._call("offsets.all")
        return result


def _configure_logging(payload: ProcessTaskPayload) -> None:
    logging.basicConfig(
        level=payload.log_level,
        format=f"[%(asctime)s] %(levelname)s [task {payload.task_id} pid %(process)d] "
        "%(message)s (%(name)s)",
    )
    # The worker's secrets that occur in this task's configs: hidden in this process's log
    # records, traces and DLQ error headers (the process's one redactor).
    process_redactor().register_all(payload.redact)
    install_log_redaction()


def run_child_task(payload: ProcessTaskPayload, link: ChildLink) -> int:
    """Run the payload's task to its end; returns the process's exit status (0)."""
    _configure_logging(payload)
    tune_gc()  # the worker's setting, as for a task thread of the worker
    link.make_target = TargetState
    runners: list[TaskRunner] = []
    task = str(payload.task_id)

    def annotate(trace: str | None, error: BaseException | None) -> str | None:
        memory = caused_by_memory_error(error) or (trace is not None and "MemoryError" in trace)
        if payload.memory_limit_mb > 0 and memory:
            note = memory_limit_message(task, payload.memory_limit_mb, os.getpid())
            return f"{note}\n\n{trace or ''}"
        return trace

    def forward(status: Status) -> None:
        trace = status.trace
        if status.state is State.FAILED:
            trace = annotate(trace, runners[0].failed if runners else None)
        link.send(("status", status.state.value, trace))

    board = StatusBoard(payload.worker_id)
    board.add_listener(forward)
    try:
        runner = build_runner(
            payload,
            ParentOffsetStore(link),
            board,
            lambda connector, topic, index: link.send(("topic", topic)),
        )
    except BaseException as e:
        trace = traceback.format_exc()
        log.error("Failed to start task %s\n%s", task, trace)
        link.send(("status", State.FAILED.value, annotate(trace, e)))
        link.send(("done", True))
        return 0
    runners.append(runner)
    link.attach(runner)
    reporter = CallReporter(
        runner,
        threading.get_ident(),
        lambda snapshot, report: link.send(("metrics", snapshot, report)),
    )
    reporter.start()
    log.info("Task %s running in process %d", task, os.getpid())
    try:
        runner.run()  # on this thread; returns after the final commit (or the failure)
    except BaseException as e:  # the failure report itself failed (e.g. no memory left)
        runner.failed = runner.failed or e
        link.send(("status", State.FAILED.value, annotate(repr(e), e)))
    reporter.stop()
    link.send(("done", runner.failed is not None))
    return 0
