"""The in-memory status board the worker reports connector and task states to.

The state types live in :mod:`connectrt.storage.states`.

The worker writes a state change whenever a connector or task starts, pauses, fails or stops;
readers (the CLI, the REST API, tests) take consistent snapshots. A :class:`StatusListener`
(e.g. a Kafka status-topic writer) may be attached to persist the changes. Thread-safe.

Every trace is redacted as it comes in (:func:`connectrt.runtime.redaction.redact`, the one
redaction function), so no reader and no listener (the REST status, the console, the status
topic) ever sees a secret in it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

from connectrt.runtime.redaction import redact
from connectrt.storage.states import State, Status, StatusListener, TargetState

__all__ = ["State", "Status", "StatusBoard", "TargetState"]


class StatusBoard:
    """See the module docstring. ``redact`` hides secrets in traces (default: the process's
    redaction function)."""

    def __init__(self, worker_id: str, redact: Callable[[str], str] = redact) -> None:
        self.worker_id = worker_id
        self._redact = redact
        self._lock = threading.Lock()
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[tuple[str, int], Status] = {}
        self._listeners: list[StatusListener] = []
        self._changed = threading.Condition(self._lock)

    def add_listener(self, listener: StatusListener) -> None:
        self._listeners.append(listener)

    def put(self, connector: str, task: int | None, state: State, trace: str | None = None) -> None:
        status = Status(connector, task, state, self.worker_id, self._redact_trace(trace))
        with self._lock:
            self._store(status)
            self._changed.notify_all()
        for listener in self._listeners:
            listener(status)

    def record(self, status: Status) -> None:
        """Show a status reported elsewhere (e.g. by a task running in another process, which
        already persisted it): stored as given (its trace redacted), worker id included;
        listeners are not called."""
        if status.trace:
            status = dataclasses.replace(status, trace=self._redact_trace(status.trace))
        with self._lock:
            self._store(status)
            self._changed.notify_all()

    def _redact_trace(self, trace: str | None) -> str | None:
        return self._redact(trace) if trace else trace

    def _store(self, status: Status) -> None:
        connector, task, state = status.connector, status.task, status.state
        if task is None:
            if state is State.DESTROYED:
                self._connectors.pop(connector, None)
            else:
                self._connectors[connector] = status
        elif state is State.DESTROYED:
            self._tasks.pop((connector, task), None)
        else:
            self._tasks[(connector, task)] = status

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._connectors.get(name)

    def task(self, name: str, task: int) -> Status | None:
        with self._lock:
            return self._tasks.get((name, task))

    def tasks(self, name: str) -> list[Status]:
        with self._lock:
            return sorted(
                (s for (c, _), s in self._tasks.items() if c == name), key=lambda s: s.task or 0
            )

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` (evaluated under no lock) holds or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._changed:
                self._changed.wait(min(remaining, 0.1))
        return True
