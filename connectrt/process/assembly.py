"""Wiring a worker process together: stores, worker, herder, REST server.

The order is one-way: the stores and the worker's collaborators (the config resolver, the topic
tracker) first, then the worker built with them, then the herder built with the worker and the
same stores (:func:`assemble_herder`); nothing is bound late.

``standalone`` keeps connector configs in memory (the command-line files are the source of
truth, as with Kafka's connect-standalone); ``worker`` keeps configs, target states and status
in Kafka topics so that they survive restarts, and refuses to start next to another live worker
on the same config topic, unless ``standby.enable=true`` makes them one cluster of a leader
and standbys (:mod:`connectrt.process.standby`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectrt.control_topic import ControlTopicListener
from connectrt.listener.security import ListenerSecurity
from connectrt.listener.server import HttpServer, sibling_listener
from connectrt.process.unknown_keys import warn_unknown_keys
from connectrt.rest.app import create_app
from connectrt.runtime.clients.security import log_worker_security, resolve_security
from connectrt.runtime.clients.settings import (
    OverridePolicy,
    admin_config,
    consumer_config,
    worker_clients,
)
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.worker_hooks import WorkerHooks
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.herder.leadership import LeaderFence
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.offsets.stores import create_offset_store
from connectrt.runtime.plugins.registry import PluginRegistry, registry
from connectrt.runtime.secrets.masking import RedactingFilter, SecretMasker, install_log_redaction
from connectrt.runtime.secrets.providers import ConfigProviders
from connectrt.runtime.worker.health import thread_probe
from connectrt.runtime.worker.topic_tracker import StatusTopicTracker
from connectrt.runtime.worker.worker import Worker
from connectrt.storage.config_store import ConfigStore
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.status_store import StatusStore
from connectrt.storage.worker_lock import SingleWorkerGuard, WorkerGuard

log = logging.getLogger(__name__)

__all__ = ["WorkerProcess", "assemble_herder", "create_herder"]


def _client_configs(wc: WorkerConfig, role: str) -> dict[str, Any]:
    bootstrap = wc.bootstrap_servers
    clients = worker_clients(bootstrap, wc.originals, role, f"connect-{role}-reader")
    return {
        "bootstrap_servers": bootstrap,
        "producer_config": clients.producer,
        "consumer_config": clients.consumer,
        "admin_config": clients.admin,
        "timeout": wc["worker.startup.timeout.ms"] / 1000.0,
    }


def _with_resolved_security(
    wc: WorkerConfig, providers: ConfigProviders, redactor: RedactingFilter
) -> WorkerConfig:
    """``wc`` with the config provider references in its client security keys resolved (the
    values found are hidden from log lines)."""

    def resolve(config: Mapping[str, str]) -> Mapping[str, str]:
        resolved = providers.resolve(config)
        redactor.register_all(resolved.substituted_values)
        return resolved.config

    originals = resolve_security(wc.originals, resolve)
    return wc if originals == wc.originals else WorkerConfig(wc.values, originals)


def create_herder(
    wc: WorkerConfig, mode: str = "standalone", plugins: PluginRegistry = registry
) -> Herder:
    """Build (not start) the herder for ``mode`` = ``standalone`` or ``worker``."""
    # Config provider classes load as every other plugin does: discovered, or from a package
    # of plugin.packages (the worker adds the same directories and packages again; idempotent).
    plugins.add_plugin_path(wc["plugin.path"], wc["plugin.packages"])
    providers = ConfigProviders.from_worker_config(
        wc.originals, lambda name: plugins.load_class(name, "ConfigProvider")
    )
    redactor = install_log_redaction()  # every log record of the process, plugins' too
    wc = _with_resolved_security(wc, providers, redactor)
    log_worker_security(wc.originals)
    config_store, status_store, guard = _stores(wc, mode)
    offset_admin = OffsetAdmin(
        wc.bootstrap_servers,
        admin_config(
            wc.bootstrap_servers,
            wc.originals,
            None,
            OverridePolicy("None"),
            "connect-admin",
            worker_own=True,
        ),
    )
    secrets = ConfigSecrets(plugins, SecretMasker(), providers, redactor)
    herder = assemble_herder(
        wc, plugins, config_store, status_store, offset_admin, secrets, guard=guard
    )
    offsets = herder.worker.offset_store
    if isinstance(guard, LeaderFence) and isinstance(offsets, KafkaOffsetStore):
        # The worker's source offsets (at-least-once tasks) are fenced like statuses; the id is
        # taken before the worker starts the store (it then starts transactional).
        guard.add(lambda: {"-offsets": offsets.log})
    return herder


def _stores(wc: WorkerConfig, mode: str) -> tuple[ConfigStore, StatusStore, WorkerGuard | None]:
    """The config and status stores of ``mode`` (in memory for ``standalone``, on Kafka
    topics for ``worker``, with the single-worker guard heartbeating on the status topic, or
    with ``standby.enable=true`` the leader's fence of config- and status-topic writes)."""
    if mode != "worker":
        from connectrt.storage.config_store import MemoryConfigStore
        from connectrt.storage.status_store import MemoryStatusStore

        return MemoryConfigStore(), MemoryStatusStore(), None
    from connectrt.storage.kafka_config import KafkaConfigStore
    from connectrt.storage.kafka_status import KafkaStatusStore

    config_store = KafkaConfigStore(
        wc["config.storage.topic"],
        replication_factor=wc["config.storage.replication.factor"],
        **_client_configs(wc, "configs"),
    )
    status_store = KafkaStatusStore(
        wc["status.storage.topic"],
        partitions=wc["status.storage.partitions"],
        replication_factor=wc["status.storage.replication.factor"],
        **_client_configs(wc, "status"),
    )
    if wc["standby.enable"]:
        fence = LeaderFence(
            lambda: config_store.log, wc["group.id"], lambda: {"-status": status_store.log}
        )
        return config_store, status_store, fence
    guard = SingleWorkerGuard(status_store, wc["group.id"], wc.worker_id, legacy=config_store)
    return config_store, status_store, guard


def assemble_herder(
    wc: WorkerConfig,
    plugins: PluginRegistry,
    config_store: ConfigStore,
    status_store: StatusStore,
    offset_admin: OffsetAdmin,
    secrets: ConfigSecrets,
    guard: WorkerGuard | None = None,
) -> Herder:
    """Build (not start) a worker and its herder over collaborators built first: the worker
    gets ``secrets`` (its config resolver), ``config_store`` (task configs, fencing counts)
    and a topic tracker over ``status_store``; the herder gets the worker and the same
    objects, and starts and stops the stores."""
    hooks = WorkerHooks(
        secrets=secrets,
        config_store=config_store,
        topics=StatusTopicTracker.for_worker(wc, status_store),
    )
    worker = Worker(wc, create_offset_store(wc), plugins, hooks=hooks)
    return Herder(
        wc, worker, config_store, status_store, offset_admin, plugins, secrets, guard=guard
    )


@dataclass
class WorkerProcess:
    """A herder plus its REST server: what ``connectrt standalone``/``worker`` run.

    Every listener (REST API, schema registry) is served behind the one ``security``.
    ``prepare`` (optional) runs once on the thread that starts the herder, right before it: at
    start-up, or in a standby cluster only once this worker is elected leader (``connectrt
    spark`` starts its Spark application there, so that a standby runs no Spark driver)."""

    herder: Herder
    rest: HttpServer
    control: ControlTopicListener | None = None  # set when ``control.topic`` is configured
    registry: Any = None  # a SchemaRegistryServer when ``schema.registry.enable=true``
    security: ListenerSecurity | None = None
    prepare: Callable[[], None] | None = None

    @classmethod
    def build(cls, props: Mapping[str, str], mode: str) -> WorkerProcess:
        warn_unknown_keys(props)  # as Kafka Connect does, before anything starts
        herder = create_herder(WorkerConfig.from_props(props), mode)
        wc = herder.config  # its security keys' config provider references resolved
        security = ListenerSecurity.from_worker_config(wc)
        ssl = {
            "certfile": wc.get("listeners.https.ssl.certificate.location") or "",
            "keyfile": wc.get("listeners.https.ssl.key.location") or "",
        }
        rest_listener = wc["listeners"][0]
        rest = HttpServer(
            create_app(herder),
            rest_listener,
            ssl,
            security=security,
            open_paths=security.health_paths,
        )
        control = None
        if wc.get("control.topic"):
            policy = OverridePolicy("None")
            control = ControlTopicListener(
                herder,
                wc.bootstrap_servers,
                wc["control.topic"],
                consumer_config(
                    wc.bootstrap_servers,
                    wc.originals,
                    None,
                    policy,
                    "connect-control-consumer",
                    "connect-control",
                    worker_own=True,
                ),
                admin_config=admin_config(
                    wc.bootstrap_servers,
                    wc.originals,
                    None,
                    policy,
                    "connect-control-admin",
                    worker_own=True,
                ),
            )
            herder.control = control  # type: ignore[attr-defined]  # read by GET /control/events
            listener = control
            herder.health.add_probe(
                "control",
                thread_probe(
                    f"control-topic listener thread (control.topic={listener.topic})",
                    lambda: listener.running,
                ),
            )
        schema_registry = None
        if wc.get("schema.registry.enable"):
            from connectrt.schema_registry.server import SchemaRegistryServer

            bootstrap = wc.bootstrap_servers
            clients = worker_clients(bootstrap, wc.originals, "schemas", "connect-schemas-reader")
            schema_registry = SchemaRegistryServer(
                bootstrap,
                wc["schema.registry.topic"],
                wc.get("schema.registry.listener") or sibling_listener(rest_listener, 8081),
                default_compatibility=wc["schema.registry.compatibility"],
                ssl=ssl,
                security=security,
                replication_factor=wc["schema.registry.topic.replication.factor"],
                producer_config=clients.producer,
                consumer_config=clients.consumer,
                admin_config=clients.admin,
                timeout=wc["worker.startup.timeout.ms"] / 1000.0,
            )
            registry_server = schema_registry
            # The console's schema pages read it (connectrt.rest.console.schemas).
            herder.schema_registry_url = lambda: registry_server.url  # type: ignore[attr-defined]
        return cls(herder, rest, control, schema_registry, security)

    def run(
        self,
        initial: Sequence[tuple[str, Mapping[str, str], str | None]] = (),
        stop: threading.Event | None = None,
    ) -> None:
        """Start the REST API, the herder and its connectors; block until ``stop`` is set;
        then stop everything gracefully.

        The REST API opens first so that ``/health`` answers 503 ``starting`` meanwhile; until
        the herder is ready, requests under ``/connectors`` get 503 + ``Retry-After``
        (:mod:`connectrt.rest.readiness`), so nothing reaches the herder before it has read
        its topics. With ``standby.enable=true`` the herder starts only once this worker is
        elected leader (:mod:`connectrt.process.standby`)."""
        stop = stop or threading.Event()
        if self.herder.config.get("standby.enable") and isinstance(self.herder.guard, LeaderFence):
            from connectrt.process.standby import StandbyWorker

            wc = self.herder.config

            def stores() -> tuple[Any, Any]:
                config_store, status_store, _guard = _stores(wc, "worker")
                return config_store, status_store

            StandbyWorker(self, stores).run(stop)
            return
        self.start_rest()
        try:
            self.start_herder(initial)
            log.info("connectrt worker ready; REST API at %s", self.rest.url)
            stop.wait()
        finally:
            try:
                self.stop_herder()
            finally:
                self.rest.stop()

    # -- the steps of run(), which a standby takes at other times (process.standby) ----------
    def start_rest(self) -> None:
        """Start the REST API; ``worker_id`` then names the port actually bound (listeners may
        ask for port 0) unless ``rest.advertised.port`` is set."""
        self.rest.start()
        if self.herder.config.get("rest.advertised.port") is None:
            status = self.herder.worker.status
            host = status.worker_id.rsplit(":", 1)[0]
            status.worker_id = f"{host}:{self.rest.port}"

    def start_herder(self, initial: Sequence[tuple[str, Mapping[str, str], str | None]]) -> None:
        """Start the schema registry (before connectors, whose converters may use it),
        ``prepare``, the herder with the ``initial`` connectors, and the control topic listener,
        whose start position is fixed before the herder reports ready."""
        if self.registry is not None:
            self.registry.start()
            log.info("Schema registry at %s", self.registry.url)
        if self.prepare is not None:
            self.prepare()
        self.herder.start(initial, ready=self.control is None)
        if self.control is not None:
            self.control.start()
            self.herder.mark_ready()

    def stop_herder(self) -> None:
        """Stop what :meth:`start_herder` started: the control topic listener, the herder, the
        schema registry, in that order, each also when stopping the one before failed."""
        try:
            if self.control is not None:
                self.control.stop()
        finally:
            try:
                self.herder.stop()
            finally:
                if self.registry is not None:
                    self.registry.stop()
