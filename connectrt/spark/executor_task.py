"""What runs inside a Spark task on an executor: one connector task, until it is told to stop.

:func:`run_task_partition` is the function given to ``mapPartitions``; its partition holds one
:class:`TaskPayload`. It rebuilds the task exactly as a local worker would
(:meth:`Worker.create_runner`: converters, transforms, error handling, producer/consumer), with

* source offsets read from and committed to the offsets topic (a Kafka offset store of its
  own, replayed at start, so an attempt Spark re-runs resumes from the committed offsets);
* sink offsets in the connector's consumer group, as always;
* status written to the status topic (:class:`ExecutorStatusWriter`), worker id
  ``host:pid`` of the executor's Python worker;
* pause/resume/stop read from the signal topic (:class:`SignalWatcher`).

The runner runs on the Spark task's own thread. A clean stop returns the task's metrics; a
failed task raises :class:`TaskAttemptFailed` (its trace was reported FAILED first), so Spark
re-runs it while ``spark.task.maxFailures`` allows. Only plain data crosses to the executor:
the worker properties, the resolved connector and task configs (secrets included, as in the
config topic of a Kafka Connect cluster: protect Spark's RPC accordingly), ids.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.offset_stores import create_offset_store
from connectrt.runtime.plugins import registry
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.runtime.task_runner import TaskId
from connectrt.runtime.worker import Worker
from connectrt.runtime.worker_config import WorkerConfig
from connectrt.runtime.worker_hooks import WorkerHooks
from connectrt.spark import task_attempt
from connectrt.spark.signals import Signal, SignalWatcher
from connectrt.spark.status_relay import ExecutorStatusWriter
from connectrt.storage.offsets import MemoryOffsetStore, OffsetStore

__all__ = ["TaskAttemptFailed", "TaskPayload", "run_task_partition"]

log = logging.getLogger(__name__)


class TaskAttemptFailed(Exception):
    """Raised in the Spark task when the connector task failed (Spark then re-runs it)."""


@dataclass(frozen=True)
class TaskPayload:
    """Everything an executor needs to run one task launch (picklable, no secrets in repr)."""

    connector: str
    task: int
    kind: str  # "source" or "sink"
    target: str
    run: str
    generation: int
    signal_topic: str
    worker_props: dict[str, str] = field(repr=False)
    connector_config: dict[str, str] = field(repr=False)
    task_config: dict[str, str] = field(repr=False)


def executor_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_task_partition(payloads: Iterable[TaskPayload]) -> Iterator[dict[str, Any]]:
    """``mapPartitions`` function: run each payload's task (one per partition) to its end."""
    for payload in payloads:
        yield run_task(payload)


def run_task(payload: TaskPayload) -> dict[str, Any]:
    wc = WorkerConfig.from_props(payload.worker_props)
    task_id = TaskId(payload.connector, payload.task)
    attempt = task_attempt()
    statuses = ExecutorStatusWriter(wc, payload.generation)
    statuses.start()
    offsets: OffsetStore = (
        create_offset_store(wc) if payload.kind == "source" else MemoryOffsetStore()
    )
    board = StatusBoard(executor_worker_id())
    board.add_listener(statuses.put)
    watcher: SignalWatcher | None = None
    try:
        offsets.start()
        worker = Worker(
            wc,
            offsets,
            registry,
            board,
            WorkerHooks(on_topic=lambda name, topic, task: statuses.put_topic(name, topic, task)),
        )
        task_cls = registry.load_class(payload.task_config["task.class"], "Task")
        runner = worker.create_runner(
            task_id,
            task_cls,
            dict(payload.task_config),
            payload.connector_config,
            TargetState(payload.target),
        )

        def on_signal(signal: Signal) -> None:
            if signal.stop:
                runner.stop()
            else:
                runner.transition_to(signal.target)

        watcher = SignalWatcher(
            wc,
            payload.signal_topic,
            payload.connector,
            payload.task,
            payload.run,
            payload.generation,
            on_signal,
        )
        latest = watcher.start()
        if latest is not None:
            if latest.stop:
                log.info("Task %s was stopped before attempt %d began", task_id, attempt)
                return {"task": payload.task, "attempt": attempt, "metrics": {}}
            runner.transition_to(latest.target)
        log.info("Task %s attempt %d starting on %s", task_id, attempt, board.worker_id)
        runner.run()  # on this thread; returns after the final commit (or the failure)
        if runner.failed is not None:
            raise TaskAttemptFailed(
                f"Task {task_id} failed on attempt {attempt}: {runner.failed!r}"
            ) from runner.failed
        return {"task": payload.task, "attempt": attempt, "metrics": runner.metrics.snapshot()}
    finally:
        if watcher is not None:
            watcher.stop()
        try:
            offsets.stop()
        finally:
            statuses.stop()
