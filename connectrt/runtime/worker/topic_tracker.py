"""Recording the topics each connector's tasks use (KIP-558): :class:`StatusTopicTracker`.

Tasks report each topic the first time they use it; the status store keeps the set per
connector (in Kafka, on the status topic). The herder's
:class:`~connectrt.runtime.herder.topics.ConnectorTopics` lists and resets them for operators.
"""

from __future__ import annotations

import logging
import time

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.storage.status_store import StatusStore

log = logging.getLogger(__name__)

__all__ = ["StatusTopicTracker"]


class StatusTopicTracker:
    """Writes each topic a task reports into ``status_store`` (nothing when ``tracking`` is
    off: the worker setting ``topic.tracking.enable``).

    Lifecycle: built with the process's stores, before the worker; the status store is started
    and stopped by the herder. Threading: :meth:`record` is called from task threads; the
    status store serializes its own writes.
    """

    def __init__(self, status_store: StatusStore, tracking: bool = True) -> None:
        self._status_store = status_store
        self._tracking = tracking

    @classmethod
    def for_worker(
        cls, worker_config: WorkerConfig, status_store: StatusStore
    ) -> StatusTopicTracker:
        """Tracking as the worker's ``topic.tracking.enable`` says (default on)."""
        return cls(status_store, tracking=bool(worker_config.get("topic.tracking.enable", True)))

    def record(self, name: str, topic: str, task: int) -> None:
        """Task ``task`` of connector ``name`` used ``topic``; a failed write is logged, never
        raised into the task."""
        if self._tracking:
            try:
                self._status_store.put_topic(name, topic, task, int(time.time() * 1000))
            except Exception:
                log.exception("Could not record topic %s of connector %s", topic, name)
