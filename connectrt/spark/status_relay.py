"""Task status between executors and the driver, through the status topic.

Executors write their tasks' states (RUNNING, PAUSED, FAILED with the trace, UNASSIGNED at a
clean exit) and the topics they produce to straight into ``status.storage.topic``, in Kafka
Connect's format, with ``worker_id`` = the executor's ``host:pid`` and ``generation`` = the
launch generation of the task (:class:`ExecutorStatusWriter`). The driver tails the topic
(:class:`StatusRelay`) and shows those statuses on its status board (which the REST API
serves) without writing them again; records of launches that are no longer live, of other
workers and from before the driver started are ignored.

For stuck-task detection (``task.stall.timeout.ms``) the executor also writes the call its task
has been in for a second or more (:meth:`ExecutorStatusWriter.put_call`, fed by the task's
:class:`~connectrt.runtime.executors.call_reports.CallReporter`: a ``call-task-<name>-<n>`` record
each second while such a call lasts, one with no call when it returned, a tombstone when the task
ends); the relay hands them to the driver's handle of the launch, whose
:class:`~connectrt.runtime.executors.call_reports.CallMirror` the stall watchdog reads. The same
reporter feeds :meth:`ExecutorStatusWriter.put_metrics`: the task's metrics snapshot, a
``metrics-task-<name>-<n>`` record every :data:`METRICS_INTERVAL_S` seconds and one when it
ends, which the relay hands to the handle's metrics, so the driver's ``/metrics`` and console
follow a running Spark task (counters, latency histograms, consumer lag).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from connectrt.errors import ConnectError
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.call_reports import CallReport
from connectrt.runtime.status import Status
from connectrt.spark.topic_logs import LogTail, spark_topic_log
from connectrt.storage.kafka_log import RecordCallback, TopicLog
from connectrt.storage.status_codec import (
    TaskCallRecord,
    TaskMetricsRecord,
    TaskStatusRecord,
    TopicStatus,
    TopicStatusRecord,
    decode_status_record,
    status_record,
    task_call_record,
    task_metrics_record,
    topic_status_record,
)

__all__ = ["ExecutorStatusWriter", "StatusRelay"]

log = logging.getLogger(__name__)

METRICS_INTERVAL_S = 5.0
"""How often a Spark task's metrics snapshot is written to the status topic while it runs."""


def _status_log(wc: WorkerConfig, role: str, on_record: RecordCallback) -> TopicLog:
    return spark_topic_log(
        wc,
        wc["status.storage.topic"],
        role,
        on_record,
        partitions=wc["status.storage.partitions"],
        replication_factor=wc["status.storage.replication.factor"],
    )


class ExecutorStatusWriter:
    """A status-board listener on an executor: writes each status (stamped with the launch
    ``generation``) and topic record to the status topic without waiting; ``flush`` waits.
    ``start`` before the task starts, ``stop`` (flushes) after it ended."""

    def __init__(self, wc: WorkerConfig, generation: int) -> None:
        self._generation = generation
        self._log = _status_log(wc, "spark-status", lambda *record: None)
        self._call_key: bytes | None = None  # set once a call record was written
        self._call_open = False
        self._metrics_key: bytes | None = None  # set once a metrics record was written
        self._metrics_sent = float("-inf")  # monotonic time of the last metrics record

    def start(self) -> None:
        self._log.start()

    def put(self, status: Status) -> None:
        self._log.send(*status_record(dataclasses.replace(status, generation=self._generation)))

    def put_topic(self, connector: str, topic: str, task: int) -> None:
        ts = TopicStatus(topic, connector, task, int(time.time() * 1000))
        self._log.send(*topic_status_record(ts))

    def put_call(
        self,
        connector: str,
        task: int,
        worker_id: str,
        report: CallReport | None,
    ) -> None:
        """Write the task's open call if it has lasted long enough to carry a stack, or that
        the call written before returned; nothing otherwise (the usual case: short calls)."""
        if report is not None and report[3] is not None:
            call, entered, age, stack = report
            self._call_open = True
        elif self._call_open:
            call, entered, age, stack = None, 0.0, 0.0, None
            self._call_open = False
        else:
            return
        record = TaskCallRecord(
            connector, task, self._generation, worker_id, call, entered, age, stack
        )
        key, value = task_call_record(record)
        self._call_key = key
        self._log.send(key, value)

    def put_metrics(
        self, connector: str, task: int, snapshot: dict[str, Any], final: bool = False
    ) -> None:
        """Write the task's metrics snapshot if :data:`METRICS_INTERVAL_S` has passed since
        the last one, or it is the ``final`` one (the task ended)."""
        now = time.monotonic()
        if not final and now - self._metrics_sent < METRICS_INTERVAL_S:
            return
        self._metrics_sent = now
        key, value = task_metrics_record(
            TaskMetricsRecord(connector, task, self._generation, snapshot)
        )
        self._metrics_key = key
        self._log.send(key, value)

    def flush(self, timeout: float | None = None) -> None:
        self._log.flush(timeout)

    def stop(self) -> None:
        # The task ended: compaction may drop its call and metrics records.
        for key in (self._call_key, self._metrics_key):
            if key is not None:
                self._log.send(key, None)
        try:
            self._log.flush(10.0)
        except ConnectError as exc:
            log.warning("Task status records may be lost: %s", exc)
        self._log.stop(1.0)


class StatusRelay:
    """The driver's tail of the status topic (one thread).

    ``accept(status)`` decides (under the caller's lock) whether an executor's task status
    belongs to a live launch and records it; ``on_topic(connector, topic, task)`` receives the
    topics executors report, ``on_call(record)`` the calls their tasks are in,
    ``on_metrics(record)`` their metrics. Records present
    when :meth:`start` is called are skipped.
    """

    def __init__(
        self,
        wc: WorkerConfig,
        accept: Callable[[Status], None],
        on_topic: Callable[[str, str, int], None],
        on_call: Callable[[TaskCallRecord], None] = lambda record: None,
        on_metrics: Callable[[TaskMetricsRecord], None] = lambda record: None,
    ) -> None:
        self._accept = accept
        self._on_topic = on_topic
        self._on_call = on_call
        self._on_metrics = on_metrics
        # Records replayed at start (tail not yet live) are from before this driver: skipped.
        self._tail = LogTail(
            _status_log(wc, "spark-status-relay", self._on_record),
            "spark-status-relay",
            "task statuses",
        )

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        if not self._tail.live or key is None:
            return
        record = decode_status_record(key, value)
        if isinstance(record, TaskStatusRecord) and record.status is not None:
            self._accept(record.status)
        elif isinstance(record, TopicStatusRecord) and record.status is not None:
            ts = record.status
            self._on_topic(ts.connector, ts.topic, ts.task)
        elif isinstance(record, TaskCallRecord):
            self._on_call(record)
        elif isinstance(record, TaskMetricsRecord):
            self._on_metrics(record)

    def start(self) -> None:
        self._tail.start()

    def stop(self) -> None:
        self._tail.stop()
