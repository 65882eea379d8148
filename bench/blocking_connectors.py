"""A connector whose ``start()`` blocks, for ``bench_rest_blocked`` (referenced by Python path
in ``connector.class``: ``bench.blocking_connectors.BlockedStartConnector``).

Its ``start()`` records its ``bench.id`` in :data:`ENTERED`, then waits until :func:`release`
is called for that id (or ``block.seconds``, 600 by default, pass). The bench runs the worker
in-process, so the driving script sees :data:`ENTERED` and calls :func:`release` directly.
Thread-safe: the worker calls ``start()`` on a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from bench.connectors import BenchConnector
from connectrt.api import SourceConnector, SourceRecord, SourceTask, Task

_LOCK = threading.Lock()
_RELEASES: dict[str, threading.Event] = {}
ENTERED: set[str] = set()
"""The ``bench.id`` of every connector whose ``start()`` is blocked (or was)."""


def _event(bench_id: str) -> threading.Event:
    with _LOCK:
        return _RELEASES.setdefault(bench_id, threading.Event())


def entered(bench_id: str) -> bool:
    with _LOCK:
        return bench_id in ENTERED


def release(bench_id: str) -> None:
    """Let the blocked ``start()`` of the connector with ``bench.id`` ``bench_id`` return."""
    _event(bench_id).set()


class BlockedStartConnector(BenchConnector, SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        bench_id = config.get("bench.id", "")
        with _LOCK:
            ENTERED.add(bench_id)
        _event(bench_id).wait(float(config.get("block.seconds", "600")))

    def task_class(self) -> type[Task]:
        return IdleSourceTask


class IdleSourceTask(SourceTask):
    """Polls nothing (None every 0.1 s)."""

    def __init__(self) -> None:
        self._stopped = threading.Event()

    def version(self) -> str:
        return "bench"

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        self._stopped.wait(0.1)
        return None

    def stop(self) -> None:
        self._stopped.set()
