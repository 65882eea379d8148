"""What a worker reports about itself: version and Kafka cluster id (``GET /``), health
(KIP-1017 ``/health``) and the snapshot behind ``/metrics``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from connectrt import __version__
from connectrt.runtime.metrics_history import MetricsHistory
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.status import State
from connectrt.runtime.worker.health import HealthReport, WorkerHealth
from connectrt.runtime.worker.worker import Worker

log = logging.getLogger(__name__)

__all__ = ["WorkerOverview"]


class WorkerOverview:
    """Read-only answers about the worker process.

    ``worker`` supplies the status board and the task metrics; ``offset_admin`` the cluster id
    (asked once it is first wanted, then kept); ``connector_type(name)`` says source or sink;
    ``health`` is the herder's health check (KIP-1017). ``history`` keeps the last minutes of
    task throughput and lag for the web console.

    Lifecycle: built with the herder, whose construction time is the uptime's start; the herder
    starts and stops ``history`` with itself. Threading: every method may be called from any
    thread and takes no lock; two first calls of :meth:`server_info` at once may both ask for
    the cluster id.
    """

    def __init__(
        self,
        worker: Worker,
        offset_admin: OffsetAdmin,
        connector_type: Callable[[str], str],
        health: WorkerHealth,
    ) -> None:
        self._worker = worker
        self._offset_admin = offset_admin
        self._connector_type = connector_type
        self._health = health
        self._cluster_id: str | None = None
        self.started_at = time.time()
        self.history = MetricsHistory(worker.task_metrics)

    def server_info(self) -> dict[str, Any]:
        """``version``, ``commit`` and ``kafka_cluster_id`` (None while Kafka is unreachable)."""
        if self._cluster_id is None:
            try:
                self._cluster_id = self._offset_admin.cluster_id()
            except Exception:
                log.warning("Could not read the Kafka cluster id", exc_info=True)
        return {"version": __version__, "commit": "unknown", "kafka_cluster_id": self._cluster_id}

    def health(self) -> HealthReport:
        """``healthy``, ``starting`` or ``unhealthy`` with Kafka's messages plus the reasons
        (see :mod:`connectrt.runtime.worker.health`); may take up to the health timeout."""
        return self._health.check()

    def metrics_snapshot(self) -> dict[str, Any]:
        """Connector and task states, per-task counters, the plugins' own metrics (KIP-877)
        and uptime (rendered by the REST layer in Prometheus' text format)."""
        board = self._worker.status
        connectors = {}
        for name in self._worker.connectors():
            status = board.connector(name)
            connectors[name] = {
                "state": status.state.value if status else State.UNASSIGNED.value,
                "type": self._connector_type(name),
                "tasks": {t.task: t.state.value for t in board.tasks(name)},
            }
        return {
            "connectors": connectors,
            "tasks": [m.snapshot() for m in self._worker.task_metrics()],
            "plugins": self._worker.plugin_metrics.snapshot(),
            "stalled": sorted(self._worker.stall_watchdog.stalled()),
            "uptime_seconds": time.time() - self.started_at,
        }
