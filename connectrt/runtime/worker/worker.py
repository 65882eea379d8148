# Why one module over 450 lines: every method works on one map of connectors under one set
# of locking rules (see the end of the docstring).
"""The Worker: runs connectors and their tasks in this process.

The worker owns the offset store, the status board and its connectors (a
:class:`WorkerConnector` each: Connector object, configs, target state, task handles), and
runs their lifecycle: start and stop, task configs, target states, restarts (by hand and
automatic) and task reconfiguration. Where tasks run is the :class:`TaskExecutor`'s business
(:mod:`~connectrt.runtime.executors.task_executor`): by default one :class:`TaskRunner` thread
per task in this process, one child process per task with ``task.executor=processes``; another
executor (e.g. Spark) may run them elsewhere and hand back :class:`TaskHandle` objects with the
same control surface. How a task's runner is built is the :class:`RunnerFactory`'s
(:mod:`~connectrt.runtime.executors.runner_factory`).
Threading: public methods may be called from any thread. Changes to one connector are
serialized by that connector's own lock (:attr:`WorkerConnector.lock`), so a connector whose
plugin code blocks holds up nothing but its own management; the map of connectors has a lock of
its own, held only for an instant, never across plugin code, so reads (``connectors()``,
configs, metrics) never wait on a plugin. Every call into a connector's plugin code is bounded
(:mod:`~connectrt.runtime.plugins.calls`): ``start()`` and ``task_configs()`` by
``connector.call.timeout.ms`` (then the connector is FAILED), ``stop()`` of connectors and
tasks by ``task.shutdown.graceful.timeout.ms`` (then it is abandoned and the stop goes on).
``ConnectorContext.request_task_reconfiguration()`` may come from any thread: it is queued
and handled on the worker's own reconfiguration thread.

The worker reaches the rest of its process only through the collaborators it is built with
(:class:`~connectrt.runtime.executors.worker_hooks.WorkerHooks`: the config resolver, the
config store for task configs and fencing counts, the topic tracker); it never calls the
herder. A caller that already resolved and validated a config (the herder's create and update)
hands it over as a :class:`~connectrt.runtime.worker.connector.ResolvedConnector`, so that the
config is resolved once and the connector class looked up once per change.

Kept as one module (about 700 lines): every method below works on the same map of
connectors under the same locking rules; splitting it further would trade them for callbacks
between modules.
"""

from __future__ import annotations

import logging
import queue
import threading
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from connectrt.api.connector import Connector
from connectrt.errors import ConfigError, ConnectError, NotFoundError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import ValidationResult, validate_connector_config
from connectrt.runtime.config.exactly_once import exactly_once_settings, worker_enabled
from connectrt.runtime.config.task_limits import task_limit
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.runtime.executors.runner_factory import RunnerFactory
from connectrt.runtime.executors.task_executor import TaskExecutor, TaskHandle, ThreadTaskExecutor
from connectrt.runtime.executors.worker_hooks import WorkerHooks
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.plugins.calls import PluginCallTimeout, call_plugin
from connectrt.runtime.plugins.loading import class_version, instance_version
from connectrt.runtime.plugins.metrics import PluginMetricsRegistry
from connectrt.runtime.plugins.registry import PluginRegistry, registry
from connectrt.runtime.plugins.version_config import CONNECTOR_VERSION, worker_converters
from connectrt.runtime.status import State, StatusBoard, TargetState
from connectrt.runtime.tasks.liveness import StallReport, StallWatchdog, WatchedTask
from connectrt.runtime.tasks.runner import TaskId, TaskRunner
from connectrt.runtime.worker.connector import (
    ResolvedConnector,
    WorkerConnector,
    WorkerConnectorContext,
)
from connectrt.runtime.worker.lineage import attach_lineage, hooks_with_lineage
from connectrt.runtime.worker.zombie_fencing import fence_zombies
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["Worker"]


def _default_executor(config: WorkerConfig) -> TaskExecutor:
    """The executor ``task.executor`` names (``spark`` is set up by ``connectrt spark``,
    which replaces this one). A memory limit is refused where no task process enforces it."""
    if config["task.memory.limit.mb"] and config["task.executor"] != "processes":
        raise ConfigError(
            f"task.memory.limit.mb={config['task.memory.limit.mb']} is enforced on task "
            f"processes only, and this worker runs its tasks with "
            f"task.executor={config['task.executor']}: set task.executor=processes, or remove "
            "the key",
            "task.memory.limit.mb",
        )
    if config["task.executor"] == "processes":
        from connectrt.runtime.executors.process.executor import ProcessTaskExecutor

        return ProcessTaskExecutor(config)
    return ThreadTaskExecutor()


class Worker:
    """Runs connectors and hands their tasks to a :class:`TaskExecutor` (see the module
    docstring for the threading contract). ``start`` before starting connectors; ``stop``
    stops every connector and then the offset store. ``hooks`` are its collaborators in the
    process (by default: configs used as written, nothing stored, no topic tracking)."""

    def __init__(
        self,
        config: WorkerConfig,
        offset_store: OffsetStore,
        plugins: PluginRegistry = registry,
        status: StatusBoard | None = None,
        hooks: WorkerHooks | None = None,
        executor: TaskExecutor | None = None,
    ) -> None:
        self.config = config
        self.hooks = hooks or WorkerHooks()
        self.executor: TaskExecutor = executor or _default_executor(config)
        self.offset_store = offset_store
        self.plugins = plugins
        self.status = status or StatusBoard(config.worker_id)
        self.policy = OverridePolicy.from_worker_config(config)
        self.plugin_metrics = PluginMetricsRegistry()  # KIP-877: the plugins' own metrics
        self._connectors: dict[str, WorkerConnector] = {}
        # Guards the map of connectors and the restart counts: held for an instant, never
        # across plugin code, and never while taking a connector's lock.
        self._lock = threading.RLock()
        self._reconfig_queue: queue.Queue[str | None] = queue.Queue()
        self._reconfig_thread: threading.Thread | None = None
        self._auto_restarts: dict[tuple[str, int], int] = {}
        self._started = False
        self.stall_watchdog = StallWatchdog(self._watched_tasks, self._restart_stalled)
        self.lineage = attach_lineage(self)  # OpenLineage run events (lineage.*), or None
        if self.lineage is not None:
            self.hooks = hooks_with_lineage(self.hooks, self.lineage)
        plugins.add_plugin_path(config["plugin.path"], config["plugin.packages"])

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if worker_enabled(self.config) and self.config["offset.storage.type"] != "kafka":
            raise ConfigError(
                "exactly.once.source.support=enabled needs offset.storage.type=kafka: source "
                "offsets are written to the offsets topic inside each transaction",
                "exactly.once.source.support",
            )
        tune_gc()  # record batches outlive CPython's default young generation
        self.offset_store.start()
        self._reconfig_thread = threading.Thread(
            target=self._reconfig_loop, name="worker-reconfig", daemon=True
        )
        self._reconfig_thread.start()
        self.stall_watchdog.start()
        if self.lineage is not None:
            self.lineage.start()
        self._started = True
        log.info("Worker %s started", self.config.worker_id)

    def stop(self) -> None:
        """Stop every connector (tasks commit their offsets; each stop bounded by
        ``task.shutdown.graceful.timeout.ms``), then the stores."""
        with self._lock:
            names = list(self._connectors)
        for name in names:
            self._stop_connector(name, remove=True)
        self.stall_watchdog.stop()
        if self.lineage is not None:
            self.lineage.stop()  # after the connectors: their COMPLETE events are sent
        self._reconfig_queue.put(None)
        if self._reconfig_thread is not None:
            self._reconfig_thread.join(5)
        try:
            self.executor.stop()
        finally:
            self.offset_store.stop()
        self._started = False
        log.info("Worker %s stopped", self.config.worker_id)

    # -- connectors ----------------------------------------------------------------------------
    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._get(name).config)

    def resolved_config(self, name: str) -> dict[str, str]:
        """The connector's config with provider references resolved (what its tasks get)."""
        return dict(self._get(name).resolved)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return [dict(c) for c in self._get(name).task_configs]

    def connector_type(self, name: str) -> str:
        return self._get(name).connector_type

    def connector_class(self, name: str) -> type[Connector] | None:
        """The class last looked up for the connector's current config (None: not yet, e.g.
        a connector created or taken up STOPPED, or one whose class failed to load)."""
        return self._get(name).connector_class

    def versions(self, name: str) -> tuple[str | None, str | None]:
        """The running connector's version and its tasks' (None: undefined or not running)."""
        state = self._get(name)
        return state.version, state.task_version

    def _get(self, name: str) -> WorkerConnector:
        with self._lock:
            state = self._connectors.get(name)
        if state is None:
            raise NotFoundError(f"Connector {name} not found")
        return state

    @contextmanager
    def _locked(self, name: str) -> Iterator[WorkerConnector]:
        """The connector ``name`` under its lock (NotFoundError if it is not, or no longer,
        on this worker)."""
        state = self._get(name)
        with state.lock:
            if state.removed:
                raise NotFoundError(f"Connector {name} not found")
            yield state

    @property
    def _graceful_s(self) -> float:
        return float(self.config["task.shutdown.graceful.timeout.ms"]) / 1000.0

    @property
    def _call_s(self) -> float:
        return float(self.config["connector.call.timeout.ms"]) / 1000.0

    def validate(self, config: Mapping[str, str]) -> ValidationResult:
        """Validate a resolved connector config as this worker runs connectors (its plugins,
        override policy, converters, task executor and exactly-once support); ConfigError
        listing every error if it is invalid."""
        return validate_connector_config(
            config,
            self.plugins,
            self.policy,
            worker_converters(self.config),
            executor=self.config["task.executor"],
            exactly_once_source=self.config["exactly.once.source.support"],
        ).raise_if_invalid()

    def start_connector(
        self,
        name: str,
        config: Mapping[str, str],
        target: TargetState = TargetState.STARTED,
        validate: bool = True,
        created: bool = False,
        resolved: ResolvedConnector | None = None,
    ) -> None:
        """Validate (unless the caller did), start the connector and its tasks.

        ``created``: a connector new to the cluster; created PAUSED, it stays dormant (neither
        it nor its tasks start until resumed, as in Kafka Connect), while a PAUSED connector
        the worker takes up again starts its tasks paused. ``resolved``: ``config`` as the
        caller resolved and validated it (then ``validate`` is False), used for this start.

        Invalid configs raise ConfigError (nothing is started). A connector whose ``start()``
        or ``task_configs()`` raises is kept, reported FAILED with the trace.
        """
        config = dict(config)
        config.setdefault("name", name)
        if validate:
            values = self.hooks.resolve(config)
            result = self.validate(values)
            if result.connector_type is not None:
                resolved = ResolvedConnector(values, result.connector_type)
        state = WorkerConnector(name, config, None, target)
        if resolved is not None:
            state.connector_class = resolved.connector_class
        state.dormant = created and target is TargetState.PAUSED
        with state.lock:
            with self._lock:
                if name in self._connectors:
                    raise ConnectError(f"Connector {name} already exists")
                self._connectors[name] = state
            if target is not TargetState.STOPPED:
                # Shown while start() runs (Kafka's state of a connector not yet started).
                self.status.put(name, None, State.UNASSIGNED)
            self._start_connector_instance(state, resolved)

    def _start_connector_instance(
        self, state: WorkerConnector, resolved: ResolvedConnector | None = None
    ) -> None:
        """Start a connector in its target state (its tasks too), with ``resolved`` when the
        caller resolved its config, else resolving it. Called under the connector's lock."""
        name = state.name
        if state.target is TargetState.STOPPED:
            self.status.put(name, None, State.STOPPED)
            return
        if state.dormant:
            self.status.put(name, None, State.PAUSED)
            return
        changed = self._run_connector(state, "start", resolved)
        if changed is None:
            return
        if changed:
            self._store_task_configs(state)
        self._start_tasks(state)

    def _store_task_configs(self, state: WorkerConnector) -> None:
        """Hand the connector's new task configs to the config store (via the hooks)."""
        configs = [dict(c) for c in state.task_configs]
        self.hooks.on_task_configs(state.name, state.config, state.resolved, configs)

    def _run_connector(
        self, state: WorkerConnector, verb: str, resolved: ResolvedConnector | None = None
    ) -> bool | None:
        """Instantiate and start the Connector, generate its task configs and report it
        RUNNING/PAUSED. Returns whether the task configs changed, or None when it FAILED
        (``start()`` or ``task_configs()`` raised, or did not return within
        ``connector.call.timeout.ms``: the connector is then abandoned, see
        :meth:`_start_plugin`). The config is resolved and the class looked up here unless
        the caller did (``resolved``). Called under the connector's lock."""
        try:
            if resolved is not None:
                state.resolved, cls = dict(resolved.resolved), resolved.connector_class
            else:
                state.resolved = self.hooks.resolve(state.config)
                cls = self.plugins.connector_class(
                    state.config["connector.class"], state.resolved.get(CONNECTOR_VERSION)
                )
            state.connector_class = cls
            state.plugin_metrics = self.plugin_metrics.connector(state.name)
            context = WorkerConnectorContext(
                state.name,
                self._reconfig_queue.put,
                self.status,
                self.offset_store,
                state.plugin_metrics,
            )
            self._start_plugin(state, cls, context)
            changed = state.generate_task_configs(self._call_s)
        except PluginCallTimeout as e:
            trace = (
                f"{type(e).__name__}: {e}. The connector is not running: fix what it waits for, "
                "or raise connector.call.timeout.ms, then restart it."
            )
            log.error("Connector %s failed to %s: %s", state.name, verb, trace)
            self.status.put(state.name, None, State.FAILED, trace)
            return None
        except Exception:
            trace = traceback.format_exc()
            log.error("Connector %s failed to %s\n%s", state.name, verb, trace)
            self.status.put(state.name, None, State.FAILED, trace)
            return None
        running = State.PAUSED if state.target is TargetState.PAUSED else State.RUNNING
        self.status.put(state.name, None, running)
        return changed

    def _start_plugin(
        self, state: WorkerConnector, cls: type, context: WorkerConnectorContext
    ) -> None:
        """Instantiate, initialize and start the Connector object on a thread of its own,
        waiting at most ``connector.call.timeout.ms``. A connector whose ``start()`` raised is
        kept in ``state`` (its ``stop()`` is called at the next stop, as before); one still
        starting then is abandoned: PluginCallTimeout, and should it start after all, it is
        stopped on its own thread."""
        started: dict[str, Any] = {}  # the connector and its version, once known

        def start() -> tuple[Any, str | None]:
            connector = cls()
            started["connector"], started["version"] = connector, instance_version(connector)
            connector.initialize(context)
            connector.start(dict(state.resolved))
            return connector, class_version(connector.task_class())

        def stop_late(result: tuple[Any, str | None]) -> None:
            log.warning("Connector %s started after it was abandoned; stopping it", state.name)
            result[0].stop()

        state.connector, state.version, state.task_version = None, None, None
        try:
            connector, task_version = call_plugin(
                start, self._call_s, f"start() of connector {state.name}", on_late=stop_late
            )
        except PluginCallTimeout:
            raise  # the abandoned connector is not kept: it is stopped if it ever starts
        except Exception:
            state.connector, state.version = started.get("connector"), started.get("version")
            raise
        state.connector, state.version = connector, started.get("version")
        state.task_version = task_version

    def _start_tasks(self, state: WorkerConnector) -> None:
        if not self._fence_zombies(state):
            return
        self._launch(state, list(enumerate(state.task_configs)))

    def _fence_zombies(self, state: WorkerConnector) -> bool:
        """Exactly-once sources (KIP-618): before a new generation of tasks starts, fence the
        transactional ids of the previous one (the larger of the stored ``tasks-fencing`` count
        and what this worker started last) and store the new count. False (tasks reported
        FAILED, not started) when fencing failed."""
        if state.connector_type != "source" or not state.task_configs:
            return True
        try:
            if exactly_once_settings(self.config, state.resolved, state.name, 0) is None:
                return True
        except ConfigError:
            return True  # the tasks fail with the reason when they are built
        count = len(state.task_configs)
        previous = max(self.hooks.task_count(state.name), state.fenced_count, count)
        try:
            fence_zombies(self.config, state.name, range(previous))
            self.hooks.on_task_count(state.name, count)
        except Exception:
            trace = traceback.format_exc()
            log.error("Connector %s: zombie fencing failed\n%s", state.name, trace)
            for i in range(count):
                self.status.put(state.name, i, State.FAILED, trace)
            return False
        state.fenced_count = count
        return True

    def _start_task(self, state: WorkerConnector, index: int, task_config: dict[str, str]) -> None:
        self._launch(state, [(index, task_config)])

    def _launch(self, state: WorkerConnector, tasks: list[tuple[int, dict[str, str]]]) -> None:
        if not tasks:
            return
        handles = self.executor.start_tasks(self, state.name, tasks, self._task_failed)
        state.runners.update(handles)

    # -- automatic restarts (errors.task.restart.*) --------------------------------------------
    def restart_counts(self, name: str) -> dict[int, int]:
        """Automatic restarts so far per task of a connector."""
        with self._lock:
            return {t: n for (c, t), n in self._auto_restarts.items() if c == name}

    def _task_failed(self, runner: TaskHandle) -> None:
        """Called on the failed task's thread: schedule an automatic restart if configured.
        Takes the map lock only (the connector's lock may be held by a stop joining this
        task); :meth:`_auto_restart` checks again under the connector's lock."""
        name, task = runner.id.connector, runner.id.task
        if self.lineage is not None:
            failed = self.status.task(name, task)  # a task process's is recorded, not put
            if failed is not None and failed.state is State.FAILED:
                self.lineage.task_failed(failed)
        with self._lock:
            state = self._connectors.get(name)
            if state is None or state.runners.get(task) is not runner:
                return
            limit = int(state.resolved.get("errors.task.restart.max.attempts", "0") or 0)
            done = self._auto_restarts.get((name, task), 0)
            if done >= limit:
                return
            self._auto_restarts[(name, task)] = done + 1
            backoff = int(state.resolved.get("errors.task.restart.backoff.ms", "1000") or 0)
        delay = min(backoff * 2**done, 60000) / 1000.0
        log.warning(
            "Task %s failed; automatic restart %d of %d in %.1f s",
            runner.id,
            done + 1,
            limit,
            delay,
        )
        timer = threading.Timer(delay, self._auto_restart, (name, task, runner))
        timer.daemon = True
        timer.start()

    def _auto_restart(self, name: str, task: int, failed: TaskHandle) -> None:
        try:
            with self._locked(name) as state:
                if (
                    state.runners.get(task) is not failed
                    or state.target is TargetState.STOPPED
                    or task >= len(state.task_configs)
                ):
                    return  # stopped, reconfigured or restarted by hand meanwhile
                state.runners.pop(task, None)
                self.status.put(name, task, State.RESTARTING)
                self._start_task(state, task, state.task_configs[task])
        except NotFoundError:
            return  # deleted meanwhile

    def build_runner(self, task_id: TaskId, task_config: dict[str, str]) -> TaskRunner:
        """Build (not start) the runner of a task of a started connector of this worker, by
        :meth:`runner_factory` from the connector's resolved config (which sets the task rate
        limits too, as for every executor)."""
        state = self._get(task_id.connector)
        connector = state.connector
        assert connector is not None
        return self.runner_factory().create_runner(
            task_id, connector.task_class(), task_config, state.resolved, state.target
        )

    def runner_factory(self) -> RunnerFactory:
        """A :class:`RunnerFactory` over the worker's current config, stores and hooks."""
        return RunnerFactory(
            self.config,
            self.plugins,
            self.policy,
            self.offset_store,
            self.status,
            self.hooks.on_topic,
            self.plugin_metrics,
            tasks=max(1, sum(len(s.task_configs) for s in self._states())),
        )

    def _states(self) -> list[WorkerConnector]:
        with self._lock:
            return list(self._connectors.values())

    def _stop_tasks(self, state: WorkerConnector) -> None:
        state.stop_tasks(self._graceful_s)

    def _stop_instance(self, state: WorkerConnector) -> None:
        """Stop the tasks, then the Connector object (each bounded by the graceful timeout)."""
        self._stop_tasks(state)
        state.stop_connector(self._graceful_s)

    def _stop_connector(self, name: str, remove: bool) -> None:
        try:
            with self._locked(name) as state:
                self._stop_instance(state)
                if remove:
                    state.removed = True
                    with self._lock:
                        if self._connectors.get(name) is state:
                            del self._connectors[name]
                    for i in range(len(state.task_configs)):
                        self.status.put(name, i, State.DESTROYED)
                    self.status.put(name, None, State.DESTROYED)
        except NotFoundError:
            return

    def delete_connector(self, name: str) -> None:
        """Stop the connector and its tasks and forget it. Returns within about twice
        ``task.shutdown.graceful.timeout.ms`` (tasks, then the Connector object), whatever
        their plugin code does."""
        self._get(name)
        self._stop_connector(name, remove=True)

    def set_target_state(
        self, name: str, target: TargetState, resolved: ResolvedConnector | None = None
    ) -> None:
        """Pause, resume or stop a connector (tasks commit before they stop). ``resolved``: its
        config as the caller resolved it, used if this starts the connector."""
        with self._locked(name) as state:
            previous, state.target = state.target, target
            if target is TargetState.STOPPED:
                self._stop_instance(state)
                for i in range(len(state.task_configs)):
                    self.status.put(name, i, State.DESTROYED)
                state.task_configs = []
                self.status.put(name, None, State.STOPPED)
                return
            if previous is TargetState.STOPPED or state.dormant:
                # Paused while STOPPED: dormant, as in Kafka Connect; resumed: it starts.
                state.dormant = target is TargetState.PAUSED
                self._start_connector_instance(state, resolved)
                return
            for r in list(state.runners.values()):
                r.transition_to(target)
            self.status.put(
                name, None, State.PAUSED if target is TargetState.PAUSED else State.RUNNING
            )

    def restart_connector(self, name: str) -> None:
        with self._locked(name) as state:
            self._stop_instance(state)
            self.status.put(name, None, State.RESTARTING)
            self._start_connector_instance(state)

    def restart_connector_instance(self, name: str) -> None:
        """Restart only the Connector object (Kafka's plain ``POST .../restart``): stop and
        start it; tasks restart only if its new task configs differ."""
        with self._locked(name) as state:
            if state.target is TargetState.STOPPED or state.dormant:
                return
            state.stop_connector(self._graceful_s)
            self.status.put(name, None, State.RESTARTING)
            old = list(state.task_configs)
            changed = self._run_connector(state, "restart")
            if changed is None:
                return
            if changed or len(old) != len(state.task_configs):
                self._store_task_configs(state)
                self._stop_tasks(state)
                for i in range(len(state.task_configs), len(old)):
                    self.status.put(name, i, State.DESTROYED)
                self._start_tasks(state)

    def reconfigure_connector(
        self, name: str, config: Mapping[str, str], resolved: ResolvedConnector | None = None
    ) -> None:
        """Replace a connector's config: stop it and its tasks, start with the new config in
        the same target state. Validation is the caller's job; ``resolved`` is the new config
        as it resolved it."""
        with self._locked(name) as state:
            old_tasks = len(state.task_configs)
            self._stop_instance(state)
            state.config = dict(config)
            state.connector_class = None if resolved is None else resolved.connector_class
            state.task_configs = []
            self._start_connector_instance(state, resolved)
            for i in range(len(state.task_configs), old_tasks):
                self.status.put(name, i, State.DESTROYED)

    def target_state(self, name: str) -> TargetState:
        return self._get(name).target

    def restart_task(self, name: str, task: int) -> None:
        """Stop the task (abandoned after ``task.shutdown.graceful.timeout.ms``) and start it
        again with its current config."""
        with self._locked(name) as state:
            if task >= len(state.task_configs):
                raise NotFoundError(f"Unknown task: {name}-{task}")
            with self._lock:
                self._auto_restarts.pop((name, task), None)  # an operator restart resets it
            runner = state.runners.pop(task, None)
            if runner is not None:
                runner.stop()
                runner.join(self._graceful_s)
                if runner.is_alive():
                    if hasattr(runner, "abandon"):
                        runner.abandon()  # stuck: it must not report over its successor
                    log.error(
                        "Graceful stop of task %s failed: it did not finish within %.0f ms "
                        "(task.shutdown.graceful.timeout.ms) and was abandoned",
                        runner.id,
                        self._graceful_s * 1000,
                    )
            self.status.put(name, task, State.RESTARTING)
            self._start_task(state, task, state.task_configs[task])

    def _reconfig_loop(self) -> None:
        while True:
            name = self._reconfig_queue.get()
            if name is None:
                return
            try:
                with self._locked(name) as state:
                    if state.connector is None:
                        continue
                    if state.generate_task_configs(self._call_s):
                        log.info("Connector %s task configs changed; restarting tasks", name)
                        self._store_task_configs(state)
                        self._stop_tasks(state)
                        self._start_tasks(state)
            except NotFoundError:
                continue  # deleted meanwhile
            except Exception:
                trace = traceback.format_exc()
                log.error("Task reconfiguration of %s failed\n%s", name, trace)
                self.status.put(name, None, State.FAILED, trace)

    # -- observation ---------------------------------------------------------------------------
    def reconfiguration_running(self) -> bool:
        """Whether the thread that applies ``request_task_reconfiguration()`` runs (health)."""
        thread = self._reconfig_thread
        return not self._started or (thread is not None and thread.is_alive())

    def task_metrics(self) -> list[TaskMetrics]:
        return [r.metrics for s in self._states() for r in dict(s.runners).values()]

    def stall(self, name: str, task: int) -> StallReport | None:
        """The task's stall report while it is stuck in one call (task.stall.timeout.ms)."""
        return self.stall_watchdog.stall(name, task)

    def _watched_tasks(self) -> list[WatchedTask]:
        """The stall watchdog's tasks, with each connector's timeout and action."""
        states = [(s.name, s.resolved, dict(s.runners)) for s in self._states()]
        watched = []
        for name, resolved, runners in states:
            timeout_s = task_limit(resolved, self.config, "task.stall.timeout.ms") / 1000.0
            action = task_limit(resolved, self.config, "task.stall.action")
            watched += [WatchedTask(name, t, h, timeout_s, action) for t, h in runners.items()]
        return watched

    def _restart_stalled(self, name: str, task: int, handle: TaskHandle) -> None:
        """task.stall.action=restart: restart the task if ``handle`` still runs it."""
        try:
            with self._locked(name) as state:
                if state.runners.get(task) is not handle:
                    return
                log.warning(
                    "Task %s-%d stalled; restarting it (task.stall.action=restart)", name, task
                )
                self.restart_task(name, task)
        except NotFoundError:
            return

    def runners(self, name: str) -> dict[int, TaskHandle]:
        return dict(self._get(name).runners)

    def task_pids(self, name: str) -> dict[int, int]:
        """The process id of each task of a connector that runs in a process of its own
        (``task.executor=processes``); tasks running as threads of this process are absent."""
        handles = dict(self._get(name).runners)  # a copy: tasks start and stop meanwhile
        return {
            index: pid
            for index, handle in handles.items()
            if isinstance(pid := getattr(handle, "pid", None), int)
        }
