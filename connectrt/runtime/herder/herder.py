# Why one module over 450 lines: create, update, delete and the state changes share one
# store-first-then-worker ordering and its repair at start; the views are in views.py.
"""The herder: the one object the REST API (and the CLI, and the control topic) talks to.

It owns the worker and the config/status stores (it starts and stops them) and carries out the
connector lifecycle:
create (with initial offsets, KIP-995), update and delete, target states (pause, resume,
stop) and restarts; the connectors' info, configs and states are its base class's
(:class:`~connectrt.runtime.herder.views.ConnectorViews`). A change is written to the
config store first, then applied to the running worker, in Kafka Connect's order, so a crash
in between is repaired at the next start (the stores are read back and every connector is
started in its stored target state).

Why one module of over 500 lines: create, update, delete and the state changes share one
locking discipline (a connector's lock from the checks until the worker applied the change,
the herder lock only for config-store writes), easiest to check when read together; what the
worker needs of the process it gets at construction, not from here.

The rest of what operators ask is answered by collaborators it builds and exposes:
``offsets`` (:class:`~connectrt.runtime.herder.offsets.ConnectorOffsets`), ``topics``
(:class:`~connectrt.runtime.herder.topics.ConnectorTopics`), ``plugins``
(:class:`~connectrt.runtime.herder.plugin_listing.ConnectorPlugins`), ``loggers``
(:class:`~connectrt.runtime.herder.loggers.LoggerLevels`) and ``overview``
(:class:`~connectrt.runtime.herder.overview.WorkerOverview`: server info, health, metrics);
``health`` (:class:`~connectrt.runtime.worker.health.WorkerHealth`) checks it for /health;
``dlq`` (:class:`~connectrt.runtime.dlq_replay.replays.DlqReplays`) runs dead letter queue replays.

Lifecycle: built by :func:`connectrt.process.assembly.create_herder`, after the worker and the
collaborators they share (the stores and the :class:`~connectrt.runtime.config.secrets.
ConfigSecrets`, which the worker holds as its hooks); then :meth:`Herder.start` once and
:meth:`Herder.stop` once. The worker never calls the herder: the task configs and fencing
counts it generates go to the config store, the topics its tasks use to the status store.

One create or update resolves the config once (inside the validation, whose secrets are then
kept) and looks the connector class up once (the validation's), and hands both to the worker
as a :class:`~connectrt.runtime.worker.connector.ResolvedConnector`.

Threading: every public method may be called from any thread (REST handlers run in a thread
pool). Changes to one connector, the offset changes included, are serialized by that
connector's own reentrant lock (:class:`ConnectorLocks`), held from the checks to the worker
applying the change, plugin calls included; each plugin call is bounded by a timeout (see
:mod:`connectrt.runtime.plugins.calls`), so a request waits a bounded time and a connector whose
plugin code blocks holds up nothing but its own changes. The herder-wide lock is held only for
the writes to the config store, each a named operation (:attr:`Herder.stages`, shown by an
unhealthy /health), never across plugin code. Reads of info and status take no lock.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from connectrt.api.connector import Connector
from connectrt.errors import AlreadyExistsError, NotFoundError
from connectrt.runtime.config.cluster_limits import BrokerCount
from connectrt.runtime.config.connector import (
    NO_CONNECTOR_TYPE,
    refuse_class_references,
    validate_connector_config,
)
from connectrt.runtime.config.secrets import ConfigSecrets, Resolution
from connectrt.runtime.config.validation_report import errors_as_written
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.dlq_replay.replays import DlqReplays
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo
from connectrt.runtime.herder.loggers import LoggerLevels
from connectrt.runtime.herder.offsets import ConnectorOffsets
from connectrt.runtime.herder.overview import WorkerOverview
from connectrt.runtime.herder.plugin_listing import ConnectorPlugins
from connectrt.runtime.herder.topics import ConnectorTopics
from connectrt.runtime.herder.views import ConnectorViews
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.plugins.calls import PluginCallTimeout, call_plugin
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.plugins.version_config import CONNECTOR_VERSION, worker_converters
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.worker.connector import ResolvedConnector
from connectrt.runtime.worker.health import HerderStages, WorkerHealth
from connectrt.runtime.worker.worker import Worker
from connectrt.storage.config_store import ConfigStore
from connectrt.storage.status_store import StatusStore
from connectrt.storage.worker_lock import WorkerGuard

log = logging.getLogger(__name__)

__all__ = ["ConnectorLocks", "Herder"]

_INITIAL_STATES = {
    "RUNNING": TargetState.STARTED,
    "PAUSED": TargetState.PAUSED,
    "STOPPED": TargetState.STOPPED,
}


class ConnectorLocks:
    """One reentrant lock per connector name, created on first use and dropped when no thread
    holds or waits for it (names that are never created leave nothing behind)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.RLock, list[int]]] = {}

    @contextmanager
    def hold(self, name: str) -> Iterator[None]:
        """Hold the lock of connector ``name`` (reentrant: the same thread may nest)."""
        with self._guard:
            lock, users = self._locks.setdefault(name, (threading.RLock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if users[0] == 0:
                    del self._locks[name]

    def __len__(self) -> int:
        """How many names have a lock now (for tests)."""
        with self._guard:
            return len(self._locks)


class Herder(ConnectorViews):
    """See the module docstring. ``secrets`` resolves configs (the worker's resolver too) and
    masks the secrets of the configs it shows; ``guard`` is the single-worker lock of
    ``worker`` mode, or a standby cluster's leader fence (None in standalone mode)."""

    def __init__(
        self,
        worker_config: WorkerConfig,
        worker: Worker,
        config_store: ConfigStore,
        status_store: StatusStore,
        offset_admin: OffsetAdmin,
        registry: PluginRegistry,
        secrets: ConfigSecrets,
        guard: WorkerGuard | None = None,
    ) -> None:
        self.config = worker_config
        self.worker = worker
        self.config_store = config_store
        self.status_store = status_store
        self.offset_admin = offset_admin
        self.registry = registry
        self.secrets = secrets
        self.masker = secrets.masker
        self.guard = guard
        # The cluster's size, for the replication factor checks of validations (cached a while).
        self.brokers = BrokerCount(offset_admin.broker_count)
        self._lock = threading.RLock()  # the config store writes; never across plugin code
        self.connector_locks = ConnectorLocks()
        self._ready = threading.Event()
        self.loggers = LoggerLevels()
        self.plugins = ConnectorPlugins(
            registry,
            worker.policy,
            self.secrets.resolve,
            self.secrets.redact,
            worker_converters(worker_config),
            executor=worker_config["task.executor"],
            exactly_once_source=worker_config["exactly.once.source.support"],
            transient=self.secrets.transient,
            brokers=self.brokers,
        )
        self.offsets = ConnectorOffsets(
            worker, registry, offset_admin, self, self.connector_locks.hold
        )
        self.topics = ConnectorTopics.for_worker(worker_config, status_store, self.require)
        self.stages = HerderStages()
        self.health = WorkerHealth.for_worker(
            self._ready, self._lock, self.stages, worker, offset_admin.probe, guard
        )
        self.overview = WorkerOverview(worker, offset_admin, self.connector_type, self.health)
        self.dlq = DlqReplays(
            worker_config,
            registry,
            worker.policy,
            offset_admin,
            self.require,
            self.connector_type,
            worker.resolved_config,
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def start(
        self,
        initial: Sequence[tuple[str, Mapping[str, str], str | None]] = (),
        ready: bool = True,
    ) -> None:
        """Read the stores, start the worker and every stored connector in its target state,
        then the ``initial`` connectors (standalone command-line files). With ``ready=False``
        the caller reports readiness itself (:meth:`mark_ready`) once its own parts run."""
        with self.stages.stage("reading the config and status topics"):
            self.config_store.start()
            self.status_store.start()
        if self.guard is not None:
            with self.stages.stage("checking that no other worker of the group is running"):
                self.guard.acquire()
        self.worker.status.add_listener(self._on_status)
        self.worker.start()
        snapshot = self.config_store.snapshot()
        for name, config in snapshot.connectors.items():
            with self.stages.stage(f"starting stored connector {name}"):
                self._start_stored(name, dict(config), snapshot.target_state(name))
        for name, config, initial_state in initial:
            if name in self.worker.connectors():
                self.put_connector_config(name, config)
            else:
                self.create_connector(name, config, initial_state)
        self.overview.history.start()
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
        self.overview.history.stop()
        self.dlq.close()
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

    @contextmanager
    def _operation(self, description: str) -> Iterator[None]:
        """Hold the herder-wide lock while doing ``description`` (shown by unhealthy /health):
        config store writes only, never plugin code."""
        with self._lock, self.stages.stage(description):
            yield

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

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """Raw config -> values handed to connectors and tasks (config providers applied)."""
        return self.secrets.resolve(config)

    # -- create / update / delete ------------------------------------------------------------
    def _validated(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[dict[str, str], ResolvedConnector]:
        """``config`` checked for connector ``name`` (BadRequestError listing every problem),
        and the config resolved and the class looked up by the validation, for the worker.
        The config is resolved once: inside the validation, whose secrets are kept for good
        once the config is accepted."""
        config = {k: v for k, v in config.items()}
        if "name" in config and config["name"] != name:
            raise BadRequestError(
                f"Connector name configuration ({config['name']}) doesn't match connector name "
                f"in the URL ({name})"
            )
        config["name"] = name
        if not config.get("connector.class"):
            raise BadRequestError(NO_CONNECTOR_TYPE)
        refuse_class_references(config)  # before resolving: never echo a resolved class name
        # The secrets validation learns are hidden for its duration only, unless the config is
        # accepted: they are then kept for good (the worker starts it with this resolution).
        brokers = self.brokers()  # None when the cluster does not answer: not checked then
        with self.secrets.transient():
            resolution = self.secrets.resolution(config)
            resolved = resolution.config
            # Every error quotes the config as written, never a resolved value or a secret; the
            # plugin code validation runs is bounded (connector.call.timeout.ms).
            with errors_as_written(config, resolved, self.secrets.redact) as rewrite:
                try:
                    result = call_plugin(
                        lambda: validate_connector_config(
                            resolved,
                            self.registry,
                            self.worker.policy,
                            worker_converters(self.config),
                            executor=self.config["task.executor"],
                            exactly_once_source=self.config["exactly.once.source.support"],
                            written=config,
                            brokers=brokers,
                        ),
                        self.config["connector.call.timeout.ms"] / 1000.0,
                        f"the validation of the config of connector {name}",
                    )
                except PluginCallTimeout as e:
                    raise PluginCallTimeout(
                        f"Request timed out: {e}. Nothing was changed (connector.call.timeout.ms)"
                    ) from None
            messages = [rewrite(m) for m in result.error_messages()]
            if messages:
                raise BadRequestError(
                    "Connector configuration is invalid and contains the following "
                    f"{len(messages)} error(s):\n" + "\n".join(messages) + "\nYou can also find "
                    "the above list of errors at the endpoint "
                    "`/connector-plugins/{connectorType}/config/validate`"
                )
        return config, self._accepted(config, resolution, result.connector_type)

    def _accepted(
        self,
        config: Mapping[str, str],
        resolution: Resolution,
        connector_class: type[Connector] | None,
    ) -> ResolvedConnector:
        """A validated config's resolution, its secrets kept for good, for the worker."""
        self.secrets.keep(resolution)
        if connector_class is None:  # not expected: the validation reports a version error
            connector_class = self.registry.connector_class(
                config["connector.class"], resolution.config.get(CONNECTOR_VERSION)
            )
        return ResolvedConnector(resolution.config, connector_class)

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: str | None = None,
        initial_offsets: Any = None,
    ) -> ConnectorInfo:
        """Create and start a connector. ``initial_offsets`` (KIP-995, the KIP-875 ``offsets``
        list) replace whatever offsets the name has before any task starts: the connector is
        stored STOPPED, its offsets are written, then ``initial_state`` applies; if writing
        them fails the connector is removed again. The info then has ``offsets_status``."""
        name = name.strip()
        if not name:
            raise BadRequestError("Connector name cannot be empty")
        target = TargetState.STARTED
        if initial_state is not None:
            target_or_none = _INITIAL_STATES.get(initial_state.upper())
            if target_or_none is None:
                raise BadRequestError(f"Invalid initial state: {initial_state}")
            target = target_or_none
        with self.connector_locks.hold(name):
            if name in self.worker.connectors():
                raise AlreadyExistsError(f"Connector {name} already exists")
            config, resolved = self._validated(name, self.secrets.merge_hidden(config, {}))
            if initial_offsets is None:
                with self._operation(f"creating connector {name}"):
                    self.config_store.put_connector_config(
                        name, config, target if initial_state is not None else None
                    )
                self.worker.start_connector(
                    name, config, target, validate=False, created=True, resolved=resolved
                )
                return self.connector_info(name)
            write_offsets = self.offsets.initial(name, resolved, initial_offsets)
            with self._operation(f"creating connector {name}"):
                self.config_store.put_connector_config(name, config, TargetState.STOPPED)
            self.worker.start_connector(
                name, config, TargetState.STOPPED, validate=False, resolved=resolved
            )
            try:
                offsets_status = write_offsets()
            except BaseException:
                self.delete_connector(name)
                raise
            if target is not TargetState.STOPPED:
                self._set_target_state(name, target, resolved)
            return dataclasses.replace(self.connector_info(name), offsets_status=offsets_status)

    def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, ConnectorInfo]:
        """Create or replace; returns ``(created, info)``. ``[hidden]`` keeps stored secrets."""
        with self.connector_locks.hold(name):
            exists = name in self.worker.connectors()
            if not exists:
                return True, self.create_connector(name, config)
            stored = self.worker.connector_config(name)
            merged = self.secrets.merge_hidden(config, stored)
            merged, resolved = self._validated(name, merged)
            with self._operation(f"writing the config of connector {name}"):
                self.config_store.put_connector_config(name, merged)
            self.worker.reconfigure_connector(name, merged, resolved)
            return False, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        with self.connector_locks.hold(name):
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
        """Remove the config, stop the connector, and forget its active topics. Answers within
        about twice ``task.shutdown.graceful.timeout.ms`` (its tasks, then its Connector
        object, are abandoned when they take longer to stop)."""
        with self.connector_locks.hold(name):
            self.require(name)
            with self._operation(f"deleting connector {name}"):
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
        self._set_target_state(name, target)

    def _set_target_state(
        self, name: str, target: TargetState, resolved: ResolvedConnector | None = None
    ) -> None:
        """:meth:`set_target_state`, with the config as a create just resolved it."""
        with self.connector_locks.hold(name):
            with self._operation(
                f"changing the target state of connector {name} to {target.value}"
            ):
                self.config_store.put_target_state(name, target)
            self.worker.set_target_state(name, target, resolved)

    def pause(self, name: str) -> None:
        with self.connector_locks.hold(name):
            self.require(name)
            self.set_target_state(name, TargetState.PAUSED)

    def resume(self, name: str) -> None:
        with self.connector_locks.hold(name):
            self.require(name)
            self.set_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """The STOPPED target state: tasks stop and their stored configs are dropped."""
        with self.connector_locks.hold(name):
            self.require(name)
            with self._operation(f"stopping connector {name}"):
                self.config_store.put_task_configs(name, [])
                self.config_store.put_target_state(name, TargetState.STOPPED)
            self.worker.set_target_state(name, TargetState.STOPPED)

    def restart_task(self, name: str, task: int) -> None:
        with self.connector_locks.hold(name):
            self.require(name)
            if task < 0 or task >= len(self.worker.task_configs(name)):
                raise NotFoundError(f"Unknown task: {name}-{task}")
            self.worker.restart_task(name, task)

    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStateInfo | None:
        """Kafka's restart: plain (connector only, returns None) or with flags, returning the
        plan, in which every instance that will restart shows RESTARTING."""
        with self.connector_locks.hold(name):
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
            worker_id = self.worker.status.worker_id

            def restarting(info: StateInfo) -> StateInfo:
                # As Kafka's plan: RESTARTING, keeping the version and the last failure's trace.
                return StateInfo(
                    State.RESTARTING.value, worker_id, trace=info.trace, version=info.version
                )

            plan = ConnectorStateInfo(
                name,
                restarting(status.connector) if restart_connector else status.connector,
                [(tid, restarting(info) if tid in tasks else info) for tid, info in status.tasks],
                status.type,
            )
            if restart_connector:
                self.worker.restart_connector_instance(name)
            for tid in tasks:
                if tid < len(self.worker.task_configs(name)):
                    self.worker.restart_task(name, tid)
            return plan
