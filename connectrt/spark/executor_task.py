"""What runs inside a Spark task on an executor: one connector task, until it is told to stop.

:func:`run_task_partition` is the function given to ``mapPartitions``; its partition holds one
:class:`SparkTaskPayload`. It rebuilds the task exactly as a local worker would
(:func:`~connectrt.runtime.executors.task_payload.build_runner`: converters, transforms, error
handling, producer/consumer), with

* source offsets read from and committed to the offsets topic (a Kafka offset store of its
  own, replayed at start, so an attempt Spark re-runs resumes from the committed offsets);
* or, for a source running exactly-once (KIP-618, ``exactly.once.source.support=enabled``),
  records and offsets in one transaction per boundary, through the transactional producer and
  ``read_committed`` offsets reader its runner builds
  (:mod:`~connectrt.runtime.source.transactions`). Its ``transactional.id``
  ``<group.id>-<connector>-<task>`` is the same on every attempt, so an attempt Spark re-runs
  fences the older one with ``init_transactions()`` (a crashed attempt's open transaction, or
  a zombie's on a lost executor, is aborted) and then reads the committed offsets. No
  at-least-once offset store is opened for it: the one the runner gets refuses writes
  (:class:`TransactionalOnlyOffsets`). A fenced or failed transaction fails the attempt
  (stage ``TASK_COMMIT``, reported FAILED with its trace), so Spark re-runs it;
* sink offsets in the connector's consumer group, as always;
* status written to the status topic (:class:`ExecutorStatusWriter`), worker id
  ``host:pid`` of the executor's Python worker;
* pause/resume/stop read from the signal topic (:class:`SignalWatcher`);
* the call the task is in reported to the driver's stall watchdog through the status topic
  (:class:`~connectrt.runtime.executors.call_reports.CallReporter` into
  :meth:`ExecutorStatusWriter.put_call`), once a call has lasted a second; and its metrics,
  every few seconds and at the end (:meth:`ExecutorStatusWriter.put_metrics`).

The runner runs on the Spark task's own thread. A clean stop returns the task's metrics; a
failed task raises :class:`TaskAttemptFailed` (its trace was reported FAILED first; its message
is that trace with the driver's secrets hidden, as Spark logs it), so Spark re-runs it while
``spark.task.maxFailures`` allows. Only plain data crosses to the executor:
the worker properties (the config provider references of their client security keys resolved
by the driver: an executor has neither its providers nor its files), the resolved connector and
task configs (secrets included, as in the config topic of a Kafka Connect cluster: protect
Spark's RPC accordingly), ids. The executor's clients take their security keys from those
worker properties by the worker's rules (:mod:`connectrt.runtime.clients.security`): its task
clients as a worker's, its status and signal clients as the worker's own.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.call_reports import CallReport, CallReporter
from connectrt.runtime.executors.task_payload import TaskPayload, build_runner
from connectrt.runtime.offsets.stores import create_offset_store
from connectrt.runtime.redaction import process_redactor, redact
from connectrt.runtime.secrets.masking import install_log_redaction
from connectrt.runtime.status import StatusBoard
from connectrt.spark import task_attempt
from connectrt.spark.signals import Signal, SignalWatcher
from connectrt.spark.status_relay import ExecutorStatusWriter
from connectrt.storage.offsets import MemoryOffsetStore, OffsetStore

__all__ = [
    "SparkTaskPayload",
    "TaskAttemptFailed",
    "TransactionalOnlyOffsets",
    "run_task_partition",
    "task_offset_store",
]

log = logging.getLogger(__name__)


class TaskAttemptFailed(Exception):
    """Raised in the Spark task when the connector task failed (Spark then re-runs it); its
    message is the failure's whole trace, redacted (see :func:`run_task`)."""


@dataclass(frozen=True)
class SparkTaskPayload(TaskPayload):
    """A task launch on Spark: the shared payload plus the driver's run id and signal topic
    (the launch's signals carry both), and ``redact``, the secret values the driver keeps out
    of its logs that occur in this task's configs (the executor hides them in its status
    records, traces, DLQ headers and log lines too)."""

    run: str = ""
    signal_topic: str = ""
    redact: tuple[str, ...] = field(default=(), repr=False)


class TransactionalOnlyOffsets(MemoryOffsetStore):
    """The offset store an exactly-once source task's runner is given on an executor: empty,
    and refusing writes. The task reads its offsets through its runner's own ``read_committed``
    store and writes them only inside its transactions; a write here would be an at-least-once
    commit outside them, so it fails loudly instead."""

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        raise ConnectError(
            "an exactly-once source task on Spark commits its offsets in its transactions "
            "only, never through the at-least-once offset store"
        )


def task_offset_store(wc: WorkerConfig, payload: TaskPayload) -> OffsetStore:
    """The offset store a task's runner gets on an executor: the offsets topic (replayed at
    start) for an at-least-once source, :class:`TransactionalOnlyOffsets` for an exactly-once
    one, an unused memory store for a sink."""
    if payload.kind != "source":
        return MemoryOffsetStore()
    try:
        eos = exactly_once_settings(wc, payload.connector_config, payload.connector, payload.task)
    except ConfigError:
        eos = None  # building the runner raises it again, as the task's failure
    if eos is not None:
        return TransactionalOnlyOffsets()
    return create_offset_store(wc)


def executor_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_task_partition(payloads: Iterable[SparkTaskPayload]) -> Iterator[dict[str, Any]]:
    """``mapPartitions`` function: run each payload's task (one per partition) to its end."""
    for payload in payloads:
        yield run_task(payload)


def run_task(payload: SparkTaskPayload) -> dict[str, Any]:
    """Run ``payload``'s task on this thread to its end: its metrics, or
    :class:`TaskAttemptFailed`.

    The executor writes status records (traces) and log lines itself: it hides the driver's
    secrets (``payload.redact``) too. What escapes from here crosses to Spark, which logs it
    (the executor's "Exception in task", the driver's job failure, py4j's DEBUG lines) and
    sends it to the driver: only a :class:`TaskAttemptFailed` escapes, whose message is the
    whole failure (the chain of causes, formatted) redacted, with no exception chained.
    """
    process_redactor().register_all(payload.redact)
    install_log_redaction()
    try:
        return _run_task(payload)
    except Exception as e:
        trace = "".join(traceback.format_exception(e)).rstrip()
        raise TaskAttemptFailed(redact(trace)) from None


def _run_task(payload: SparkTaskPayload) -> dict[str, Any]:
    wc = WorkerConfig.from_props(payload.worker_props)
    task_id = payload.task_id
    attempt = task_attempt()
    statuses = ExecutorStatusWriter(wc, payload.generation)
    statuses.start()
    offsets = task_offset_store(wc, payload)
    board = StatusBoard(executor_worker_id())
    board.add_listener(statuses.put)
    watcher: SignalWatcher | None = None
    reporter: CallReporter | None = None
    try:
        offsets.start()
        runner = build_runner(payload, offsets, board, statuses.put_topic)

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

        def report_progress(snapshot: dict[str, Any], report: CallReport | None) -> None:
            statuses.put_call(payload.connector, payload.task, board.worker_id, report)
            statuses.put_metrics(payload.connector, payload.task, snapshot)

        reporter = CallReporter(runner, threading.get_ident(), report_progress)
        reporter.start()
        runner.run()  # on this thread; returns after the final commit (or the failure)
        if runner.failed is not None:
            raise TaskAttemptFailed(
                f"Task {task_id} failed on attempt {attempt}"
            ) from runner.failed
        return {"task": payload.task, "attempt": attempt, "metrics": runner.metrics.snapshot()}
    finally:
        if reporter is not None:
            reporter.stop()
            # The last figures, failure or not (the driver keeps them once the task ended).
            statuses.put_metrics(
                payload.connector, payload.task, runner.metrics.snapshot(), final=True
            )
        if watcher is not None:
            watcher.stop()
        try:
            offsets.stop()
        finally:
            statuses.stop()
