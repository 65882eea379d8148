"""The herder: the one object the REST API (and the CLI, and the control topic) talks to.

It owns the worker and the config/status stores and carries out the connector lifecycle:
create, update and delete, target states (pause, resume, stop), restarts, and the connectors'
info, configs and states. A change is written to the config store first, then applied to the
running worker, in Kafka Connect's order, so a crash in between is repaired at the next start
(the stores are read back and every connector is started in its stored target state).

The rest of what operators ask is answered by collaborators it builds and exposes:
``offsets`` (:class:`~connectrt.runtime.connector_offsets.ConnectorOffsets`), ``topics``
(:class:`~connectrt.runtime.connector_topics.ConnectorTopics`), ``plugins``
(:class:`~connectrt.runtime.connector_plugins.ConnectorPlugins`), ``loggers``
(:class:`~connectrt.runtime.logger_levels.LoggerLevels`) and ``overview``
(:class:`~connectrt.runtime.worker_overview.WorkerOverview`: server info, health, metrics).

Lifecycle: built by :func:`connectrt.process.assembly.create_herder`, then :meth:`Herder.start`
once and :meth:`Herder.stop` once. Threading: every public method may be called from any
thread (REST handlers run in a thread pool); mutations, the offset changes included, are
serialized by one reentrant lock. Reads of info and status do not take it.

Kept as one module (just over 400 lines): what remains is the lifecycle itself, every change
made under one lock in one order (store, then worker).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from connectrt.api.config import ConfigDef
from connectrt.api.connector import SinkConnector, SourceConnector
from connectrt.errors import AlreadyExistsError, ConfigError, NotFoundError
from connectrt.runtime.config_secrets import ConfigSecrets
from connectrt.runtime.connector_config import validate_connector_config
from connectrt.runtime.connector_info import ConnectorInfo, ConnectorStateInfo, StateInfo
from connectrt.runtime.connector_offsets import ConnectorOffsets
from connectrt.runtime.connector_plugins import ConnectorPlugins
from connectrt.runtime.connector_topics import ConnectorTopics
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.logger_levels import LoggerLevels
from connectrt.runtime.offset_admin import OffsetAdmin
from connectrt.runtime.plugins import PluginRegistry
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.validation_report import written_text
from connectrt.runtime.worker import Worker
from connectrt.runtime.worker_config import WorkerConfig
from connectrt.runtime.worker_overview import WorkerOverview

log = logging.getLogger(__name__)

__all__ = ["Herder"]

_INITIAL_STATES = {
    "RUNNING": TargetState.STARTED,
    "PAUSED": TargetState.PAUSED,
    "STOPPED": TargetState.STOPPED,
}


class Herder:
    """See the module docstring. ``masker`` hides secrets in the configs it shows;
    ``providers`` (config providers), ``guard`` (the single-worker lock of ``worker`` mode)
    and ``redactor`` (keeps resolved secrets out of the logs) are optional."""

    def __init__(
        self,
        worker_config: WorkerConfig,
        worker: Worker,
        config_store: Any,
        status_store: Any,
        offset_admin: OffsetAdmin,
        registry: PluginRegistry,
        masker: Any,
        providers: Any = None,
        guard: Any = None,
        redactor: Any = None,
    ) -> None:
        self.config = worker_config
        self.worker = worker
        self.config_store = config_store
        self.status_store = status_store
        self.offset_admin = offset_admin
        self.registry = registry
        self.masker = masker
        self.guard = guard
        self.secrets = ConfigSecrets(registry, masker, providers, redactor)
        self._lock = threading.RLock()
        self._ready = threading.Event()
        self.loggers = LoggerLevels()
        self.plugins = ConnectorPlugins(
            registry,
            worker.policy,
            self.secrets.resolve,
            self.secrets.redact,
            worker.config["task.executor"],
        )
        self.offsets = ConnectorOffsets(worker, registry, offset_admin, self, self._lock)
        self.topics = ConnectorTopics.for_worker(worker_config, status_store, self.require)
        self.overview = WorkerOverview(worker, offset_admin, self.connector_type, self._ready)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(
        self,
        initial: Sequence[tuple[str, Mapping[str, str], str | None]] = (),
        ready: bool = True,
    ) -> None:
        """Read the stores, start the worker and every stored connector in its target state,
        then the ``initial`` connectors (standalone command-line files). With ``ready=False``
        the caller reports readiness itself (:meth:`mark_ready`) once its own parts run."""
        self.config_store.start()
        self.status_store.start()
        if self.guard is not None:
            self.guard.acquire()
        self.worker.status.add_listener(self._on_status)
        self.worker.start()
        snapshot = self.config_store.snapshot()
        for name, config in snapshot.connectors.items():
            self._start_stored(name, dict(config), snapshot.target_state(name))
        for name, config, initial_state in initial:
            if name in self.worker.connectors():
                self.put_connector_config(name, config)
            else:
                self.create_connector(name, config, initial_state)
        if ready:
            self._ready.set()
        log.info("Herder started with %d connectors", len(self.worker.connectors()))

    def mark_ready(self) -> None:
        """Report ready (``/health``) after ``start(ready=False)``."""
        self._ready.set()

    def _start_stored(self, name: str, config: dict[str, str], target: TargetState) -> None:
        try:
            self.worker.start_connector(name, config, target, validate=False)
        except Exception:
            trace = traceback.format_exc()
            log.error("Stored connector %s could not be started\n%s", name, trace)
            self.worker.status.put(name, None, State.FAILED, trace)

    def stop(self) -> None:
        """Stop the worker (its connectors and tasks), the worker lock and the stores."""
        self._ready.clear()
        try:
            self.worker.stop()
        finally:
            if self.guard is not None:
                self.guard.stop()
            for store in (self.status_store, self.config_store):
                try:
                    store.stop()
                except Exception:
                    log.exception("Error stopping %s", type(store).__name__)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def _on_status(self, status: Status) -> None:
        if status.trace:
            # Error texts can quote resolved values (a path, a URL): never persist them.
            status = dataclasses.replace(status, trace=self.secrets.redact(status.trace))
        try:
            self.status_store.put(status)
        except Exception:
            log.exception("Could not write status of %s", status.connector)

    # -- worker hooks --------------------------------------------------------------------------
    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """Raw config -> values handed to connectors and tasks (config providers applied)."""
        return self.secrets.resolve(config)

    def on_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Store new task configs with the provider references put back (never resolved)."""
        raw = self.worker.connector_config(name)
        self.config_store.put_task_configs(name, self.secrets.unresolve(raw, configs))

    # -- info and status -----------------------------------------------------------------------
    def connectors(self) -> list[str]:
        return self.worker.connectors()

    def require(self, name: str) -> None:
        """Raise :class:`NotFoundError` unless the worker has connector ``name``."""
        if name not in self.worker.connectors():
            raise NotFoundError(f"Connector {name} not found")

    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown`` (neither, or the class does not load)."""
        try:
            cls = self.registry.connector_class(
                self.worker.connector_config(name)["connector.class"]
            )
        except (ConfigError, KeyError):
            return "unknown"
        if issubclass(cls, SourceConnector):
            return "source"
        if issubclass(cls, SinkConnector):
            return "sink"
        return "unknown"

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
        self, status: Status | None, restarts: int = 0, pid: int | None = None
    ) -> StateInfo:
        if status is None:
            return StateInfo(State.UNASSIGNED.value, self.worker.status.worker_id)
        trace = self.secrets.redact(status.trace) if status.trace else status.trace
        return StateInfo(status.state.value, status.worker_id, trace, restarts, pid)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        self.require(name)
        board = self.worker.status
        connector = board.connector(name)
        if connector is None:
            raise NotFoundError(f"No status found for connector {name}")
        count = len(self.worker.task_configs(name))
        restarts = self.worker.restart_counts(name)
        pids = self.worker.task_pids(name)
        tasks = [
            (t.task or 0, self._state_info(t, restarts.get(t.task or 0, 0), pids.get(t.task or 0)))
            for t in board.tasks(name)
            if (t.task or 0) < count
        ]
        return ConnectorStateInfo(
            name, self._state_info(connector), tasks, self.connector_type(name)
        )

    def task_status(self, name: str, task: int) -> StateInfo:
        self.require(name)
        status = self.worker.status.task(name, task)
        if status is None or task >= len(self.worker.task_configs(name)):
            raise NotFoundError(f"No status found for task {name}-{task}")
        return self._state_info(
            status,
            self.worker.restart_counts(name).get(task, 0),
            self.worker.task_pids(name).get(task),
        )

    # -- create / update / delete ------------------------------------------------------------
    def _validated(self, name: str, config: Mapping[str, str]) -> dict[str, str]:
        config = {k: v for k, v in config.items()}
        if "name" in config and config["name"] != name:
            raise BadRequestError(
                f"Connector name configuration ({config['name']}) doesn't match connector name "
                f"in the URL ({name})"
            )
        config["name"] = name
        if not config.get("connector.class"):
            raise BadRequestError(
                f"Connector config {self.masked(config)} contains no connector type"
            )
        resolved = self.resolve(config)
        result = validate_connector_config(
            resolved, self.registry, self.worker.policy, self.worker.config["task.executor"]
        )
        messages = [
            written_text(config, resolved, self.secrets.redact)(m) for m in result.error_messages()
        ]
        if messages:
            raise BadRequestError(
                f"Connector configuration is invalid and contains the following {len(messages)} "
                "error(s):\n" + "\n".join(messages) + "\nYou can also find the above list of "
                "errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
            )
        return config

    def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: str | None = None
    ) -> ConnectorInfo:
        name = name.strip()
        if not name:
            raise BadRequestError("Connector name cannot be empty")
        target = TargetState.STARTED
        if initial_state is not None:
            target_or_none = _INITIAL_STATES.get(initial_state.upper())
            if target_or_none is None:
                raise BadRequestError(f"Invalid initial state: {initial_state}")
            target = target_or_none
        with self._lock:
            if name in self.worker.connectors():
                raise AlreadyExistsError(f"Connector {name} already exists")
            config = self._validated(name, self.secrets.merge_hidden(config, {}))
            self.config_store.put_connector_config(
                name, config, target if initial_state is not None else None
            )
            self.worker.start_connector(name, config, target, validate=False)
        return self.connector_info(name)

    def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, ConnectorInfo]:
        """Create or replace; returns ``(created, info)``. ``[hidden]`` keeps stored secrets."""
        with self._lock:
            exists = name in self.worker.connectors()
            if not exists:
                return True, self.create_connector(name, config)
            stored = self.worker.connector_config(name)
            merged = self.secrets.merge_hidden(config, stored)
            merged = self._validated(name, merged)
            self.config_store.put_connector_config(name, merged)
            self.worker.reconfigure_connector(name, merged)
        return False, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        with self._lock:
            self.require(name)
            stored = self.worker.connector_config(name)
            updated: dict[str, str | None] = dict(stored)
            for key, value in patch.items():
                if value is None:
                    updated.pop(key, None)
                else:
                    updated[key] = value
            return self.put_connector_config(
                name, {k: v for k, v in updated.items() if v is not None}
            )[1]

    def delete_connector(self, name: str) -> None:
        """Remove the config, stop the connector, and forget its active topics."""
        with self._lock:
            self.require(name)
            self.config_store.remove_connector(name)
            self.worker.delete_connector(name)
            try:
                self.status_store.remove_topics(name)
            except Exception:
                log.exception("Could not reset the topics of %s", name)

    # -- state changes ---------------------------------------------------------------------
    def set_target_state(self, name: str, target: TargetState) -> None:
        """Store ``target`` for connector ``name``, then apply it (the caller checked that the
        connector exists)."""
        with self._lock:
            self.config_store.put_target_state(name, target)
            self.worker.set_target_state(name, target)

    def pause(self, name: str) -> None:
        with self._lock:
            self.require(name)
            self.set_target_state(name, TargetState.PAUSED)

    def resume(self, name: str) -> None:
        with self._lock:
            self.require(name)
            self.set_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """The STOPPED target state: tasks stop and their stored configs are dropped."""
        with self._lock:
            self.require(name)
            self.config_store.put_task_configs(name, [])
            self.config_store.put_target_state(name, TargetState.STOPPED)
            self.worker.set_target_state(name, TargetState.STOPPED)

    def restart_task(self, name: str, task: int) -> None:
        with self._lock:
            self.require(name)
            if task < 0 or task >= len(self.worker.task_configs(name)):
                raise NotFoundError(f"Unknown task: {name}-{task}")
            self.worker.restart_task(name, task)

    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStateInfo | None:
        """Kafka's restart: plain (connector only, returns None) or with flags, returning the
        plan, in which every instance that will restart shows RESTARTING."""
        with self._lock:
            self.require(name)
            if not include_tasks and not only_failed:
                self.worker.restart_connector_instance(name)
                return None
            status = self.connector_status(name)
            restart_connector = not only_failed or status.connector.state == State.FAILED.value
            tasks = [
                tid
                for tid, info in status.tasks
                if include_tasks and (not only_failed or info.state == State.FAILED.value)
            ]
            restarting = StateInfo(State.RESTARTING.value, self.worker.status.worker_id)
            plan = ConnectorStateInfo(
                name,
                restarting if restart_connector else status.connector,
                [(tid, restarting if tid in tasks else info) for tid, info in status.tasks],
                status.type,
            )
            if restart_connector:
                self.worker.restart_connector_instance(name)
            for tid in tasks:
                if tid < len(self.worker.task_configs(name)):
                    self.worker.restart_task(name, tid)
            return plan
