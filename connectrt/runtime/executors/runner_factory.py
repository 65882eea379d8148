"""Building a task's runner: converters, transforms, error handling and Kafka clients.

:class:`RunnerFactory` turns a task class and its configs into a ready (not started)
:class:`SourceTaskRunner` or :class:`SinkTaskRunner`, configured from the worker config and the
connector's resolved config the way Kafka Connect configures a task, plus connectrt's
``task.rate.limit.*`` (set here, so they hold on every executor). The worker uses it for its
local tasks; executors that rebuild a task elsewhere (the Spark executor task) reach it through
:meth:`Worker.create_runner`. :func:`create_converter` is shared with the Spark data source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from connectrt.api.config import with_prefix
from connectrt.api.file_access import ALLOWED_DIRS_CONFIG, FileAccess, configure_file_access
from connectrt.api.task import SinkTask, SourceTask
from connectrt.converters.schema_drift import DRIFT_CONFIG
from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import (
    OverridePolicy,
    admin_config,
    consumer_config,
    max_block_ms,
    max_poll_records,
    producer_config,
)
from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.share_group import group_settings, uses_share_group
from connectrt.runtime.config.task_limits import task_limit
from connectrt.runtime.config.topic_creation import TopicCreationConfig, TopicCreator
from connectrt.runtime.config.tracing import tracing_settings
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.memory_budget import BUDGET_KEY, apply_share, task_share
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.offsets.stores import create_kafka_offset_store
from connectrt.runtime.plugins.metrics import PluginMetricsRegistry
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.sink.consumer_lag import ConsumerLagProbe
from connectrt.runtime.sink.runner import SinkTaskRunner
from connectrt.runtime.sink.share_runner import ShareSinkRunnerSettings, ShareSinkTaskRunner
from connectrt.runtime.source.runner import SourceTaskRunner
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId, TaskRunner
from connectrt.runtime.tasks.settings import (
    RunnerSettings,
    SinkRunnerSettings,
    SourceRunnerSettings,
)
from connectrt.runtime.tasks.timing import time_task_calls
from connectrt.storage.offsets import OffsetStore
from connectrt.transforms.chain import TransformationChain

__all__ = ["RunnerFactory", "create_converter"]

_R = TypeVar("_R", bound=TaskRunner)


def create_converter(
    plugins: PluginRegistry,
    config: Mapping[str, Any],
    kind: str,
    defaults: Callable[[], tuple[str, Mapping[str, Any]]],
) -> Any:
    """A configured ``key``/``value``/``header`` converter as a connector config asks for it.

    ``<kind>.converter`` in ``config`` (with its ``<kind>.converter.*`` settings) wins over
    ``defaults()``: the class name and settings to use otherwise (the worker's). The
    installed version used is the one ``<kind>.converter.plugin.version`` asks for (KIP-891).
    Used by the worker and the Spark bridge.
    """
    key = f"{kind}.converter"
    # KIP-891: <kind>.converter.plugin.version picks the version; the worker's applies to the
    # worker's converter unless the connector sets one. It is not a converter setting.
    version = config.get(f"{key}.plugin.version")
    if config.get(key):
        class_name = str(config[key])
        prefix = key + "."
        cfg = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
        cfg.pop("plugin.version", None)
    else:
        class_name, default_config = defaults()
        cfg = dict(default_config)
        worker_version = cfg.pop("plugin.version", None)
        version = version if version is not None else worker_version
    cls = plugins.load_class(
        class_name,
        "HeaderConverter" if kind == "header" else "Converter",
        None if version is None else str(version),
    )
    if kind != "header" and config.get(DRIFT_CONFIG) is not None:  # the connector's policy
        cfg.setdefault(DRIFT_CONFIG, config[DRIFT_CONFIG])
    conv = cls()
    if kind == "header":
        conv.configure(cfg)
    else:
        conv.configure(cfg, kind == "key")
    return conv


@dataclass(frozen=True)
class RunnerFactory:
    """Builds task runners from the worker-wide inputs it holds.

    ``config`` is the worker config (client settings, converter defaults, offset flush
    intervals), ``policy`` the connector client config override policy; runners report to
    ``status``, source runners store offsets in ``offset_store``, and every runner calls
    ``on_topic(connector, topic, task)`` the first time its task uses a topic. ``tasks`` is
    how many tasks the worker runs, the one being built included: the task's clients are sized
    from its share of ``worker.memory.budget.mb``
    (:mod:`connectrt.runtime.executors.memory_budget`). Immutable and cheap, with no state of its
    own: the worker makes one per build from its current stores and hooks
    (:meth:`Worker.runner_factory`), under its lock for local tasks. The runners it builds share
    nothing but these inputs.
    """

    config: WorkerConfig
    plugins: PluginRegistry
    policy: OverridePolicy
    offset_store: OffsetStore
    status: StatusBoard
    on_topic: Callable[[str, str, int], None]
    plugin_metrics: PluginMetricsRegistry | None = None  # KIP-877; None: not published
    tasks: int = 1

    def converter(self, conn_config: Mapping[str, str], kind: str) -> Any:
        """The ``kind`` converter of a connector, the worker's one unless the config names one."""
        return create_converter(
            self.plugins,
            conn_config,
            kind,
            lambda: (self.config.converter_class(kind), self.config.converter_config(kind)),
        )

    def create_runner(
        self,
        task_id: TaskId,
        task_cls: type,
        task_config: dict[str, str],
        connector_config: Mapping[str, str],
        target: TargetState = TargetState.STARTED,
    ) -> TaskRunner:
        """Build (not start) a runner from configs alone: ``connector_config`` is the resolved
        connector config. Used for local tasks and by executors that rebuild a task elsewhere
        (the worker then needs no running connector)."""
        resolved = connector_config
        # The file rule of this worker, for tasks that open files named by their config
        # (FileStream): installed wherever a task is built (this process, a task process, a
        # Spark executor).
        configure_file_access(
            FileAccess.of(self.config[ALLOWED_DIRS_CONFIG], self.config["plugin.path"])
        )
        task = task_cls()
        converters = TaskConverters(
            key=self.converter(resolved, "key"),
            value=self.converter(resolved, "value"),
            header=self.converter(resolved, "header"),
        )
        on_topic = self.on_topic
        transforms: TransformationChain[Any] | None = None
        if resolved.get("transforms", "").strip():
            transforms = TransformationChain(resolved, self.plugins.transform_class)
        errors = self._error_handler(task_id, resolved)
        plugin_metrics = (self.plugin_metrics or PluginMetricsRegistry()).task(
            task_id.connector, task_id.task
        )
        plugin_metrics.monitor_all(
            {"key": converters.key, "value": converters.value, "header": converters.header},
            transforms.stages if transforms is not None else (),
        )
        wc = self.config
        share = task_share(wc[BUDGET_KEY], self.tasks)
        # What source and sink runners alike are built from; each adds its own settings.
        shared = RunnerSettings(
            task_config=task_config,
            converters=converters,
            status=self.status,
            offset_flush_interval_ms=wc["offset.flush.interval.ms"],
            target_state=target,
            on_topic=lambda topic: on_topic(task_id.connector, topic, task_id.task),
            transforms=transforms,
            errors=errors,
        )
        if isinstance(task, SourceTask):
            producer_cfg = self._sized(
                "producer",
                producer_config(
                    wc.bootstrap_servers,
                    wc.originals,
                    resolved,
                    self.policy,
                    f"connector-producer-{task_id}",
                ),
                share,
                resolved,
            )
            eos = exactly_once_settings(wc, resolved, task_id.connector, task_id.task)
            eos_store = None
            if eos is not None:
                # KIP-618: a transactional, idempotent producer; acks=all is required for it.
                producer_cfg.update(
                    {
                        "transactional.id": eos.transactional_id,
                        "enable.idempotence": True,
                        "acks": "all",
                    }
                )
                # How long a commit may ride out a broker outage (source_transactions).
                eos = replace(
                    eos,
                    transaction_timeout_ms=int(producer_cfg.get("transaction.timeout.ms", 60000)),
                    max_block_ms=max_block_ms(wc.originals, resolved),
                )
                # Read after init_transactions fenced this task's predecessor: its offsets are
                # all below the end found then, while siblings keep committing past it.
                eos_store = create_kafka_offset_store(
                    wc, eos.offsets_topic, f"-{task_id}", start_at_snapshot=True
                )
            source = SourceRunnerSettings(
                **vars(shared),
                producer_config=producer_cfg,
                offset_store=self.offset_store,
                offset_flush_timeout_ms=wc["offset.flush.timeout.ms"],
                topic_creator=self._topic_creator(task_id, resolved),
                exactly_once=eos,
                exactly_once_store=eos_store,
            )
            source_runner = SourceTaskRunner(task_id, task, source)
            time_task_calls(task, source_runner.metrics)
            self._traced(source_runner)
            return plugin_metrics.bind(self._rate_limited(source_runner, resolved))
        if isinstance(task, SinkTask) and uses_share_group(resolved):
            runner = self._share_sink_runner(task_id, task, shared, resolved, share)
            return plugin_metrics.bind(runner)
        if isinstance(task, SinkTask):
            lag = ConsumerLagProbe()
            sink = SinkRunnerSettings(
                **vars(shared),
                consumer_config=self._sink_consumer_config(task_id, resolved, share),
                max_poll_records=max_poll_records(wc.originals, resolved),
                consumer_factory=lag.create,
            )
            sink_runner = SinkTaskRunner(task_id, task, sink)
            time_task_calls(task, sink_runner.metrics)
            sink_runner.metrics.partition_lag = lag.partition_lag
            self._traced(sink_runner)
            return plugin_metrics.bind(self._rate_limited(sink_runner, resolved))
        raise ConfigError(f"Task class {task_cls.__name__} is neither a SourceTask nor a SinkTask")

    def _sink_consumer_config(
        self, task_id: TaskId, resolved: Mapping[str, str], share: int | None
    ) -> dict[str, Any]:
        """A sink task's consumer settings in group ``connect-<name>`` (classic or share),
        sized to the task's share of the worker's memory budget."""
        wc = self.config
        config = consumer_config(
            wc.bootstrap_servers,
            wc.originals,
            resolved,
            self.policy,
            f"connector-consumer-{task_id}",
            f"connect-{task_id.connector}",
        )
        return self._sized("consumer", config, share, resolved)

    def _share_sink_runner(
        self,
        task_id: TaskId,
        task: SinkTask,
        shared: RunnerSettings,
        resolved: Mapping[str, str],
        share: int | None,
    ) -> TaskRunner:
        """A sink task's runner in the share group ``connect-<name>``
        (``consumer.group.type=share``, :mod:`connectrt.runtime.sink.share_runner`)."""
        wc = self.config
        group_id = f"connect-{task_id.connector}"
        settings = ShareSinkRunnerSettings(
            **vars(shared),
            consumer_config=self._sink_consumer_config(task_id, resolved, share),
            max_poll_records=max_poll_records(wc.originals, resolved),
            group_id=group_id,
            admin_config=admin_config(
                wc.bootstrap_servers,
                wc.originals,
                resolved,
                self.policy,
                f"connector-admin-{task_id}",
            ),
            group_settings=group_settings(resolved),
        )
        runner = ShareSinkTaskRunner(task_id, task, settings)
        time_task_calls(task, runner.metrics)
        return self._rate_limited(runner, resolved)

    def _traced(self, runner: TaskRunner) -> None:
        """Attach an OpenTelemetry tracer to ``runner`` when the worker's tracing is on
        (:mod:`connectrt.runtime.config.tracing`); OpenTelemetry is imported only then."""
        settings = tracing_settings(self.config.values)
        if settings is None:
            return
        try:
            if isinstance(runner, SinkTaskRunner):
                from connectrt.runtime.sink.tracing import SinkTracer

                SinkTracer.attach(runner, settings)
            elif isinstance(runner, SourceTaskRunner):
                from connectrt.runtime.source.tracing import SourceTracer

                SourceTracer.attach(runner, settings)
        except ImportError as e:
            raise ConfigError(
                f"Tracing is on but OpenTelemetry is not installed ({e}): "
                "pip install 'connectrt[otel]', or turn tracing.enabled/OTEL_TRACES_EXPORTER off"
            ) from e

    def _rate_limited(self, runner: _R, connector_config: Mapping[str, str]) -> _R:
        """``runner`` with the connector's (else the worker's) ``task.rate.limit.*`` set.

        Done here, where every executor builds its runners (local threads, task processes and
        Spark executors through :func:`~connectrt.runtime.executors.task_payload.build_runner`), so
        the limits hold wherever the task runs."""
        runner.set_rate_limit(
            task_limit(connector_config, self.config, "task.rate.limit.records.per.sec"),
            task_limit(connector_config, self.config, "task.rate.limit.bytes.per.sec"),
        )
        return runner

    def _sized(
        self,
        kind: str,
        client_config: dict[str, Any],
        share: int | None,
        connector_config: Mapping[str, str],
    ) -> dict[str, Any]:
        """``client_config`` sized to the task's budget ``share`` where neither the worker
        (``producer.*``/``consumer.*``) nor the connector (``*.override.*``) set the key."""
        explicit = {
            **with_prefix(self.config.originals, f"{kind}."),
            **with_prefix(connector_config, f"{kind}.override."),
        }
        return apply_share(kind, client_config, share, explicit)

    def _error_handler(self, task_id: TaskId, connector_config: Mapping[str, str]) -> ErrorHandler:
        """The task's ``errors.*`` handler, with dead letter queue clients if one is set."""
        wc = self.config
        policy = ErrorPolicy.from_config(connector_config)
        return ErrorHandler(
            task_id,
            policy,
            TaskMetrics(task_id.connector, task_id.task),
            producer_config(
                wc.bootstrap_servers,
                wc.originals,
                connector_config,
                self.policy,
                f"connector-dlq-producer-{task_id}",
            )
            if policy.dlq_topic
            else None,
            admin_config(
                wc.bootstrap_servers,
                wc.originals,
                connector_config,
                self.policy,
                f"connector-adminclient-{task_id}",
            )
            if policy.dlq_topic
            else None,
        )

    def _topic_creator(
        self, task_id: TaskId, connector_config: Mapping[str, str]
    ) -> TopicCreator | None:
        """A source task's topic creator, or None when topic creation is off for it."""
        wc = self.config
        creation = None
        if wc["topic.creation.enable"]:
            creation = TopicCreationConfig.from_connector_config(connector_config)
        if creation is None:
            return None
        admin = admin_config(
            wc.bootstrap_servers,
            wc.originals,
            connector_config,
            self.policy,
            f"connector-adminclient-{task_id}",
        )
        return TopicCreator(admin, creation)
