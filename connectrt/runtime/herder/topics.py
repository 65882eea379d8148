"""The topics each connector used (KIP-558 topic tracking), as operators read and clear them.

Tasks report each topic the first time they use it
(:class:`~connectrt.runtime.worker.topic_tracker.StatusTopicTracker`, which the worker is built
with); the status store keeps the set per connector (in Kafka, on the status topic), and
operators read or clear it here. Both are governed by the worker settings
``topic.tracking.enable`` and ``topic.tracking.allow.reset``.
"""

from __future__ import annotations

from collections.abc import Callable

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.errors import ForbiddenError
from connectrt.runtime.worker.topic_tracker import StatusTopicTracker
from connectrt.storage.status_store import StatusStore

__all__ = ["ConnectorTopics"]


class ConnectorTopics:
    """Records, lists and resets the active topics of connectors.

    ``status_store`` keeps them; ``require(name)`` raises
    :class:`~connectrt.errors.NotFoundError` for an unknown connector (the herder's).

    Lifecycle: built once per herder; the status store is started and stopped by the herder.
    Threading: every method may be called from any thread (REST handlers); the status store
    serializes its own writes.
    """

    def __init__(
        self,
        status_store: StatusStore,
        require: Callable[[str], None],
        tracking: bool = True,
        allow_reset: bool = True,
    ) -> None:
        self._status_store = status_store
        self._tracker = StatusTopicTracker(status_store, tracking)
        self._require = require
        self._tracking = tracking
        self._allow_reset = allow_reset

    @classmethod
    def for_worker(
        cls, worker_config: WorkerConfig, status_store: StatusStore, require: Callable[[str], None]
    ) -> ConnectorTopics:
        """Tracking as the worker's ``topic.tracking.*`` settings say (both default on)."""
        return cls(
            status_store,
            require,
            tracking=bool(worker_config.get("topic.tracking.enable", True)),
            allow_reset=bool(worker_config.get("topic.tracking.allow.reset", True)),
        )

    def record(self, name: str, topic: str, task: int) -> None:
        """Task ``task`` of connector ``name`` used ``topic``, as the worker's own
        :class:`StatusTopicTracker` records it; a failed write is logged, never raised."""
        self._tracker.record(name, topic, task)

    def active(self, name: str) -> list[str]:
        """The topics connector ``name`` used since it was created or last reset."""
        if not self._tracking:
            raise ForbiddenError("Topic tracking is disabled.")
        self._require(name)
        return list(self._status_store.topics(name))

    def reset(self, name: str) -> None:
        """Forget the topics connector ``name`` used."""
        if not self._tracking:
            raise ForbiddenError("Topic tracking is disabled.")
        if not self._allow_reset:
            raise ForbiddenError("Topic tracking reset is disabled.")
        self._require(name)
        self._status_store.remove_topics(name)
