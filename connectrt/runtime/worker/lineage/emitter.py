"""OpenLineage run events of a worker's connectors: one run per connector, from its states.

:class:`LineageEmitter` listens to the worker's status board (and to the task failures the
worker learns of from task processes) and maps each connector's states onto an OpenLineage run:

* START when the connector or one of its tasks is first RUNNING (a new run id); a connector
  that fails before it ever ran gets a START and its FAIL;
* RUNNING every ``lineage.running.interval.ms`` while the run lasts, with the record counts of
  its tasks (and the datasets as now known: a source's topics appear as its tasks use them);
* COMPLETE when the connector is stopped or deleted (or the worker stops);
* FAIL, with the trace as errorMessage facet, when the connector or one of its tasks fails. The
  run ends there; when the connector (or the task, restarted) runs again, a new run starts.

Datasets come from :func:`~connectrt.runtime.worker.lineage.datasets.connector_datasets`; the
counts from the tasks' :class:`~connectrt.runtime.metrics.TaskMetrics` (records read: polled
from the source or consumed from Kafka; written: acknowledged by Kafka or accepted by
``put()``). The emitter keeps the metrics objects of the run's tasks it last saw, so the counts
of the final event include what the tasks did until they stopped.

Threading: :meth:`LineageEmitter.on_status`, :meth:`LineageEmitter.topic_used` and
:meth:`LineageEmitter.task_failed` may be called from any thread (task threads, the REST
threads, under the worker's locks): they only put an item on a queue. One daemon thread
(:meth:`start` .. :meth:`stop`) builds and sends every event, so a slow or unreachable lineage
server never holds up a connector; an event that cannot be sent is logged and dropped.
:meth:`stop` sends what is queued (the COMPLETE events of the connectors the worker stopped)
within its timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.status import State, Status
from connectrt.runtime.worker.lineage.datasets import Dataset, DatasetSides, connector_datasets
from connectrt.runtime.worker.lineage.events import run_event
from connectrt.runtime.worker.lineage.transport import Transport

__all__ = ["ConnectorView", "LineageEmitter"]

log = logging.getLogger("connectrt.lineage")


@dataclass(frozen=True)
class ConnectorView:
    """What the emitter needs to know of a connector: its resolved config, type (``source`` /
    ``sink``) and class name."""

    config: dict[str, str]
    connector_type: str
    class_name: str


@dataclass
class _Run:
    run_id: str
    view: ConnectorView
    topics: set[str] = field(default_factory=set)
    metrics: dict[int, TaskMetrics] = field(default_factory=dict)


_STOP = object()


class LineageEmitter:
    """See the module docstring. ``describe(name)`` answers a connector's :class:`ConnectorView`
    (None: unknown now); ``task_metrics(name)`` its tasks' metrics; ``bootstrap_servers`` name
    the Kafka datasets' namespace."""

    def __init__(
        self,
        transport: Transport,
        job_namespace: str,
        interval_s: float,
        bootstrap_servers: str,
        describe: Callable[[str], ConnectorView | None],
        task_metrics: Callable[[str], list[TaskMetrics]],
        engine_version: str = "",
    ) -> None:
        self._transport = transport
        self._namespace = job_namespace
        self._interval = interval_s
        self._bootstrap = bootstrap_servers
        self._describe = describe
        self._task_metrics = task_metrics
        self._engine_version = engine_version
        self._queue: queue.Queue[Any] = queue.Queue()
        self._runs: dict[str, _Run] = {}  # the emitter thread's only
        self._topics: dict[str, set[str]] = {}
        self._failures: dict[tuple[str, int | None], Status] = {}
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.failed_sends = 0

    # -- any thread ----------------------------------------------------------------------------
    def on_status(self, status: Status) -> None:
        """A state change of a connector or task (a :data:`StatusListener`)."""
        self._queue.put(("status", status))

    def task_failed(self, status: Status) -> None:
        """A task failure the status board's listeners do not see (reported by a task
        process); the same failure seen both ways is sent once."""
        self._queue.put(("status", status))

    def topic_used(self, name: str, topic: str, task: int) -> None:
        """A task of connector ``name`` used ``topic`` (the TopicTracker protocol)."""
        self._queue.put(("topic", name, topic))

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lineage", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Send what is queued (within ``timeout_s``), then end the thread and the transport."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout_s)
        try:
            self._transport.close()
        except Exception:
            log.exception("Closing the lineage transport failed")

    # -- the emitter thread ----------------------------------------------------------------------
    def _run(self) -> None:
        next_tick = time.monotonic() + self._interval
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            try:
                if item is None:
                    next_tick = time.monotonic() + self._interval
                    for name in list(self._runs):
                        self._emit(name, "RUNNING")
                elif item[0] == "topic":
                    self._topics.setdefault(item[1], set()).add(item[2])
                else:
                    self._on_status(item[1])
            except Exception:  # lineage must never end: log and go on
                log.exception("Lineage event failed")

    def _on_status(self, status: Status) -> None:
        name, state = status.connector, status.state
        key = (name, status.task)
        if state is State.FAILED:
            if self._failures.get(key) is status:
                return  # seen both ways
            self._failures[key] = status
        if state is State.RUNNING:
            if name not in self._runs:
                self._begin(name)
            return
        if state is State.FAILED:
            if name not in self._runs and not self._begin(name):
                return
            self._emit(name, "FAIL", error=status.trace or f"{_what(status)} failed")
            self._runs.pop(name, None)
            return
        if status.task is None and state in (State.STOPPED, State.DESTROYED):
            if name in self._runs:
                self._emit(name, "COMPLETE")
                self._runs.pop(name, None)
            if state is State.DESTROYED:
                self._topics.pop(name, None)
                for k in [k for k in self._failures if k[0] == name]:
                    del self._failures[k]

    def _begin(self, name: str) -> bool:
        view = self._describe(name)
        if view is None:
            return False
        self._runs[name] = _Run(str(uuid.uuid4()), view)
        self._emit(name, "START", counts=False)
        return True

    def _emit(
        self, name: str, event_type: str, error: str | None = None, counts: bool = True
    ) -> None:
        run = self._runs[name]
        view = self._describe(name)
        if view is not None:
            run.view = view
        for m in self._task_metrics(name):
            run.metrics[m.task] = m
        run.topics |= self._topics.get(name, set())
        event = run_event(
            event_type,
            run.run_id,
            self._namespace,
            name,
            run.view.connector_type,
            self._datasets(run),
            _counts(run) if counts else None,
            error,
            self._engine_version,
        )
        try:
            self._transport.send(event)
            self.sent += 1
        except Exception as e:
            self.failed_sends += 1
            log.warning("Lineage %s event of connector %s not sent: %s", event_type, name, e)

    def _datasets(self, run: _Run) -> DatasetSides:
        """The run's datasets; a Kafka topic's with the fields its tasks noted."""
        view = run.view
        sides = connector_datasets(
            view.config, view.connector_type, view.class_name, self._bootstrap, run.topics
        )
        fields: dict[str, tuple[tuple[str, str], ...]] = {}
        for m in run.metrics.values():
            for topic, fs in list(m.topic_fields.items()):
                fields.setdefault(topic, tuple((str(n), str(t)) for n, t in fs))
        if not fields:
            return sides
        kafka = "kafka://"

        def with_fields(datasets: list[Dataset]) -> list[Dataset]:
            return [
                dataclasses.replace(d, fields=fields[d.name])
                if d.namespace.startswith(kafka) and d.name in fields
                else d
                for d in datasets
            ]

        return DatasetSides(with_fields(sides.inputs), with_fields(sides.outputs))


def _what(status: Status) -> str:
    return "Connector" if status.task is None else f"Task {status.task}"


def _counts(run: _Run) -> dict[str, int]:
    read = written = 0
    for m in run.metrics.values():
        read += m.records_polled
        written += m.records_put if run.view.connector_type == "sink" else m.records_produced
    return {"read": read, "written": written}
