"""Connector plugins: the configuration half of a connector.

A :class:`Connector` does not move data. It validates its configuration and splits it into at
most ``tasks.max`` task configurations; the runtime then starts one task per configuration.

Lifecycle (all calls come from the worker's connector thread, never concurrently):
``initialize(context)`` -> ``start(config)`` -> ``task_configs(max_tasks)`` (again whenever the
connector calls ``context.request_task_reconfiguration()``) -> ``stop()``. ``validate()`` and
``config_def()`` may be called on a fresh, un-started instance (for the REST validate
endpoint), so they must not depend on ``start()``. ``stop()`` must be idempotent.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from connectrt.api.config import ConfigDef, ConfigValue

if TYPE_CHECKING:
    from connectrt.api.metrics import PluginMetrics
    from connectrt.api.records import TopicPartition
    from connectrt.api.task import OffsetStorageReader, Task

__all__ = [
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "ExactlyOnceSupport",
    "SinkConnector",
    "SinkConnectorContext",
    "SourceConnector",
    "SourceConnectorContext",
]


class ConnectorContext(abc.ABC):
    """Given to a connector by the runtime. Methods are thread-safe: a connector may call them
    from its own background threads (e.g. a table monitor)."""

    @abc.abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs()`` again and restart tasks if they changed."""

    @abc.abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector (its status becomes FAILED with this error's trace)."""

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        """Where the connector registers metrics of its own (KIP-877), tagged with its name;
        they are removed when it stops. None where the runtime offers none."""
        return None


class SourceConnectorContext(ConnectorContext):
    @property
    @abc.abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """Reads the committed source offsets of this connector."""


class SinkConnectorContext(ConnectorContext):
    pass


class Connector(abc.ABC):
    """Base class of every connector: subclass SourceConnector or SinkConnector."""

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        """Called once by the runtime before ``start``."""
        self.context = context

    def version(self) -> str:
        """The plugin's version string (shown by ``/connector-plugins``)."""
        return "unknown"

    @abc.abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with the connector's raw (string) config. Parse it with ``config_def()``."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Release resources. Must be idempotent and safe if ``start`` failed half-way."""

    @abc.abstractmethod
    def task_class(self) -> type[Task]:
        """The Task class that runs this connector's task configurations."""

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the work into at most ``max_tasks`` task configs (string maps)."""

    @abc.abstractmethod
    def config_def(self) -> ConfigDef:
        """The connector's own configuration keys (framework keys are added by the runtime)."""

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """Per-key validation results. Override to add cross-field checks; call ``super()``."""
        return self.config_def().validate(config)

    def reconfigure(self, config: Mapping[str, str]) -> None:
        """Apply a new config; the default is ``stop()`` then ``start(config)``."""
        self.stop()
        self.start(config)


class ExactlyOnceSupport:
    """What :meth:`SourceConnector.exactly_once_support` answers (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries:
    """What :meth:`SourceConnector.can_define_transaction_boundaries` answers (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class SourceConnector(Connector):
    """A connector whose tasks read from an external system into Kafka."""

    context: SourceConnectorContext

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        """Whether this connector, with ``config``, can run exactly-once (KIP-618).

        ``ExactlyOnceSupport.SUPPORTED`` when its tasks' records can be re-read from exactly the
        source offsets they carry (so a task restarted from its last committed offsets neither
        skips nor repeats anything), ``UNSUPPORTED`` when not, None (the default) when the
        connector does not say. Consulted only by validation of
        ``exactly.once.support=required``; called on a fresh, un-started instance.
        """
        return None

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> str:
        """``ConnectorTransactionBoundaries.SUPPORTED`` when the tasks, with ``config``, commit
        their own transactions through ``SourceTaskContext.transaction_context`` (needed for
        ``transaction.boundary=connector``); the default is ``UNSUPPORTED``. Called on a
        fresh, un-started instance by validation."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def records_have_keys(self, config: Mapping[str, str]) -> bool | None:
        """Whether the records this connector's tasks produce, with ``config``, carry a key:
        False when they never do, True when they always do, None (the default) when the
        connector does not say. Beyond Kafka: validation refuses a topic creation group with
        ``cleanup.policy=compact`` for a connector answering False (and no transforms, which
        could set a key), since a compacted topic refuses records without a key. Called on a
        fresh, un-started instance by validation."""
        return None

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]
    ) -> bool:
        """Check (or apply externally) an offsets change requested by an operator.

        Return True when the connector handled it; raise ``NotImplementedError`` to refuse it.
        The default returns False: the runtime changes its own stored offsets only.
        """
        return False


class SinkConnector(Connector):
    """A connector whose tasks write Kafka records into an external system."""

    context: SinkConnectorContext

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """See :meth:`SourceConnector.alter_offsets`; offsets are Kafka offsets per partition."""
        return False
