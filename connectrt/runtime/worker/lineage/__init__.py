"""OpenLineage events of the worker's connectors (``lineage.*`` worker settings).

:func:`attach_lineage` builds a worker's :class:`~.emitter.LineageEmitter` (None with
``lineage.transport=none``, the default: then nothing is attached and nothing runs), listening
to its status board and told of the topics its tasks use. The worker starts it with itself and
stops it after its connectors (so their COMPLETE events are sent).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from connectrt import __version__
from connectrt.errors import NotFoundError
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.worker_hooks import TopicTracker, WorkerHooks
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.worker.lineage.emitter import ConnectorView, LineageEmitter
from connectrt.runtime.worker.lineage.transport import transport_from_config

__all__ = ["LineageEmitter", "LineageSubject", "attach_lineage", "hooks_with_lineage"]


class _TopicTee:
    """Tells the emitter, then the worker's own tracker (if any), of a topic a task used."""

    def __init__(self, emitter: LineageEmitter, inner: TopicTracker | None) -> None:
        self._emitter = emitter
        self._inner = inner

    def record(self, name: str, topic: str, task: int) -> None:
        self._emitter.topic_used(name, topic, task)
        if self._inner is not None:
            self._inner.record(name, topic, task)


def hooks_with_lineage(hooks: WorkerHooks, emitter: LineageEmitter) -> WorkerHooks:
    """``hooks`` whose topic tracking also reaches ``emitter``."""
    return dataclasses.replace(hooks, topics=_TopicTee(emitter, hooks.topics))


class LineageSubject(Protocol):
    """What :func:`attach_lineage` reads of the worker."""

    config: WorkerConfig
    status: StatusBoard

    def resolved_config(self, name: str) -> dict[str, str]: ...
    def connector_type(self, name: str) -> str: ...
    def connector_class(self, name: str) -> Any: ...
    def task_metrics(self) -> list[TaskMetrics]: ...


def attach_lineage(worker: LineageSubject) -> LineageEmitter | None:
    """The emitter the worker's ``lineage.*`` settings ask for, listening to its status board;
    None when lineage is off."""
    transport = transport_from_config(worker.config)
    if transport is None:
        return None

    def describe(name: str) -> ConnectorView | None:
        try:
            config = worker.resolved_config(name)
            kind = worker.connector_type(name)
            cls = worker.connector_class(name)
        except NotFoundError:
            return None
        class_name = cls.__name__ if cls is not None else config.get("connector.class", "")
        return ConnectorView(config, kind, class_name)

    def task_metrics(name: str) -> list[TaskMetrics]:
        return [m for m in worker.task_metrics() if m.connector == name]

    emitter = LineageEmitter(
        transport,
        str(worker.config["lineage.namespace"]),
        int(worker.config["lineage.running.interval.ms"]) / 1000.0,
        worker.config.bootstrap_servers,
        describe,
        task_metrics,
        __version__,
    )
    worker.status.add_listener(emitter.on_status)
    return emitter
