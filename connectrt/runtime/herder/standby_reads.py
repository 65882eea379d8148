"""A standby's answers about connectors, read from the cluster's config and status topics.

In a standby cluster (:mod:`connectrt.runtime.herder.leadership`) a standby runs no connector,
so it cannot answer from a worker as the leader does; it answers the reads Kafka Connect
followers answer from their own copies of the topics: the connector list, a connector's info,
config and status. Configs are shown as stored with their secrets masked (the same
:class:`~connectrt.runtime.config.secrets.ConfigSecrets` masking as the leader's); states are
those the leader last wrote to the status topic (with the worker id that wrote them).

These answers lag the leader by up to the refresh interval (one second) and, during a
hand-over, show the states the previous leader wrote last. Everything else under
``/connectors`` is forwarded to the leader (:mod:`connectrt.rest.forwarding`).

Lifecycle: ``start()`` reads both topics (its own store instances, never the herder's), then a
daemon thread reads what was written since every ``interval_s``; ``stop()`` (idempotent) before
the worker starts leading. Threading: the read methods may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from connectrt.errors import ConfigError, NotFoundError
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo
from connectrt.runtime.herder.views import connector_kind
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.storage.config_store import ConfigStore
from connectrt.storage.states import Status

__all__ = ["FollowedStatuses", "StandbyReads"]

log = logging.getLogger(__name__)


class FollowedStatuses(Protocol):
    """The status store a standby reads: every status record applied, also after ``start``."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def refresh(self, timeout: float | None = None) -> None: ...

    def connector(self, name: str) -> Status | None: ...

    def tasks(self, name: str) -> list[Status]: ...


class StandbyReads:
    """See the module docstring. ``status_store`` must apply every status it reads (a
    :class:`~connectrt.storage.kafka_status.KafkaStatusStore` with ``follow = True``)."""

    def __init__(
        self,
        config_store: ConfigStore,
        status_store: FollowedStatuses,
        secrets: ConfigSecrets,
        registry: PluginRegistry,
        interval_s: float = 1.0,
    ) -> None:
        self._configs = config_store
        self._statuses = status_store
        self._secrets = secrets
        self._registry = registry
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = False

    def start(self) -> None:
        self._configs.start()
        self._statuses.start()
        self.started = True
        self._thread = threading.Thread(target=self._run, name="standby-reads", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=30)
        if self.started:
            self.started = False
            for store in (self._statuses, self._configs):
                try:
                    store.stop()
                except Exception as exc:
                    log.warning("Stopping a standby's %s: %s", type(store).__name__, exc)

    # -- reads --------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        return sorted(self._configs.snapshot().connectors)

    def connector_config(self, name: str) -> dict[str, str]:
        return self._secrets.masked(self._config(name))

    def connector_info(self, name: str) -> ConnectorInfo:
        config = self._config(name)
        tasks = self._configs.snapshot().task_configs.get(name, ())
        return ConnectorInfo(
            name, self._secrets.masked(config), list(range(len(tasks))), self._type(config)
        )

    def connector_status(self, name: str) -> ConnectorStateInfo:
        config = self._config(name)
        connector = self._statuses.connector(name)
        if connector is None:
            raise NotFoundError(f"No status found for connector {name}")
        count = len(self._configs.snapshot().task_configs.get(name, ()))
        tasks = [
            (t.task or 0, self._state(t))
            for t in self._statuses.tasks(name)
            if (t.task or 0) < count
        ]
        return ConnectorStateInfo(name, self._state(connector), sorted(tasks), self._type(config))

    # -- internals ----------------------------------------------------------------------------

    def _config(self, name: str) -> dict[str, str]:
        config = self._configs.snapshot().connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return dict(config)

    def _type(self, config: dict[str, str]) -> str:
        try:
            return connector_kind(self._registry.connector_class(config["connector.class"]))
        except (ConfigError, KeyError):
            return "unknown"

    def _state(self, status: Status) -> StateInfo:
        trace = self._secrets.redact(status.trace) if status.trace else status.trace
        return StateInfo(status.state.value, status.worker_id, trace)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            for store in (self._configs, self._statuses):
                try:
                    store.refresh()
                except Exception as exc:
                    log.debug("A standby's read of %s failed: %s", type(store).__name__, exc)
