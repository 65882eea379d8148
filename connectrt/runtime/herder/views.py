"""The read side of the herder: connectors, their configs, info and states, as REST shows them.

:class:`ConnectorViews` is the base class of :class:`~connectrt.runtime.herder.herder.Herder`, which
holds the lifecycle (every change, under its lock); these reads take no lock. Configs are shown
as stored (config-provider references, not resolved values) with their secrets masked; states
come from the worker's status board, task versions and automatic restarts included.

Threading: every method may be called from any thread (REST handlers run in a thread pool).
"""

from __future__ import annotations

from collections.abc import Mapping

from connectrt.api.config import ConfigDef
from connectrt.api.connector import SinkConnector, SourceConnector
from connectrt.errors import ConfigError, NotFoundError
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.config.share_group import uses_share_group
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.status import State, Status
from connectrt.runtime.worker.worker import Worker

__all__ = ["ConnectorViews", "connector_kind"]


def connector_kind(cls: type) -> str:
    """``source``, ``sink`` or ``unknown`` for a connector class."""
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "unknown"


class ConnectorViews:
    """Answers about connectors; the subclass sets ``worker``, ``registry`` and ``secrets``."""

    worker: Worker
    registry: PluginRegistry
    secrets: ConfigSecrets

    # -- info and status -----------------------------------------------------------------------
    def connectors(self) -> list[str]:
        return self.worker.connectors()

    def require(self, name: str) -> None:
        """Raise :class:`NotFoundError` unless the worker has connector ``name``."""
        if name not in self.worker.connectors():
            raise NotFoundError(f"Connector {name} not found")

    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown`` (neither, or the class does not load): of the
        class the worker looked up for the connector's config, else looked up here."""
        cls = self.worker.connector_class(name)
        if cls is None:
            try:
                cls = self.registry.connector_class(
                    self.worker.connector_config(name)["connector.class"]
                )
            except (ConfigError, KeyError):
                return "unknown"
        return connector_kind(cls)

    def definition(self, config: Mapping[str, str]) -> ConfigDef | None:
        """The merged framework + connector ConfigDef for a config (cached per class)."""
        return self.secrets.definition(config)

    def masked(self, config: Mapping[str, str]) -> dict[str, str]:
        """``config`` with its secrets shown as ``[hidden]``."""
        return self.secrets.masked(config)

    def connector_config(self, name: str) -> dict[str, str]:
        self.require(name)
        return self.masked(self.worker.connector_config(name))

    def connector_info(self, name: str) -> ConnectorInfo:
        self.require(name)
        config = self.worker.connector_config(name)
        return ConnectorInfo(
            name,
            self.masked(config),
            list(range(len(self.worker.task_configs(name)))),
            self.connector_type(name),
        )

    def task_configs(self, name: str) -> list[tuple[int, dict[str, str]]]:
        """Task configs as stored: provider references put back, secrets masked."""
        self.require(name)
        raw = self.worker.connector_config(name)
        configs = self.secrets.unresolve(raw, self.worker.task_configs(name))
        definition = self.definition(raw)
        return [(i, self.secrets.mask_task_config(tc, definition)) for i, tc in enumerate(configs)]

    def _state_info(
        self,
        status: Status | None,
        restarts: int = 0,
        version: str | None = None,
        pid: int | None = None,
    ) -> StateInfo:
        if status is None:
            return StateInfo(State.UNASSIGNED.value, self.worker.status.worker_id)
        stall = None if status.task is None else self.worker.stall(status.connector, status.task)
        trace = stall.trace() if stall is not None else status.trace
        trace = self.secrets.redact(trace) if trace else trace
        stalled_call = stall.call if stall is not None else None
        return StateInfo(
            status.state.value, status.worker_id, trace, restarts, version, stalled_call, pid
        )

    def connector_status(self, name: str) -> ConnectorStateInfo:
        """The connector's and its tasks' states, with the versions running (KIP-891)."""
        self.require(name)
        board = self.worker.status
        connector = board.connector(name)
        if connector is None:
            raise NotFoundError(f"No status found for connector {name}")
        count = len(self.worker.task_configs(name))
        restarts = self.worker.restart_counts(name)
        version, task_version = self.worker.versions(name)
        pids = self.worker.task_pids(name)  # tasks in processes of their own
        tasks = [
            (
                t.task or 0,
                self._state_info(
                    t, restarts.get(t.task or 0, 0), task_version, pids.get(t.task or 0)
                ),
            )
            for t in board.tasks(name)
            if (t.task or 0) < count
        ]
        kind = self.connector_type(name)
        share_group = None
        if kind == "sink" and uses_share_group(self.worker.connector_config(name)):
            share_group = f"connect-{name}"
        return ConnectorStateInfo(
            name, self._state_info(connector, 0, version), tasks, kind, share_group
        )

    def task_status(self, name: str, task: int) -> StateInfo:
        self.require(name)
        status = self.worker.status.task(name, task)
        if status is None or task >= len(self.worker.task_configs(name)):
            raise NotFoundError(f"No status found for task {name}-{task}")
        task_version = self.worker.versions(name)[1]
        return self._state_info(
            status,
            self.worker.restart_counts(name).get(task, 0),
            task_version,
            self.worker.task_pids(name).get(task),
        )
