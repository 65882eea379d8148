"""The framework-level keys of every connector config: :data:`COMMON_CONFIG_DEF` and its sink and
source extensions :data:`SINK_CONFIG_DEF` and :data:`SOURCE_CONFIG_DEF` (Kafka Connect's
``ConnectorConfig``, ``SinkConnectorConfig`` and ``SourceConnectorConfig`` keys: ``name``,
``connector.class``, ``tasks.max``, converters, the ``*.plugin.version`` keys of KIP-891,
``transforms``/``predicates``, ``errors.*``,
sink ``topics``/``topics.regex`` and the dead letter queue, source exactly-once and topic
creation).

The definitions are built at import time and read-only afterwards: safe to share across threads.
Validating a whole connector config against them is :mod:`connectrt.runtime.config.connector`.
"""

from __future__ import annotations

from connectrt.api.config import (
    CompositeValidator,
    ConfigDef,
    ConfigType,
    Importance,
    NonEmptyString,
    Range,
    ValidRegex,
    ValidString,
    Width,
)
from connectrt.api.connector import Connector, SinkConnector, SourceConnector
from connectrt.converters.schema_drift import SCHEMA_DRIFT_CONFIG_DEF
from connectrt.errors import ConfigError
from connectrt.runtime.config.share_group import SHARE_GROUP_CONFIG_DEF
from connectrt.runtime.config.task_limits import TASK_LIMITS_CONFIG_DEF
from connectrt.runtime.plugins.version_config import PLUGIN_VERSION_CONFIG_DEF

__all__ = [
    "COMMON_CONFIG_DEF",
    "SINK_CONFIG_DEF",
    "SOURCE_CONFIG_DEF",
    "framework_def_for",
]

_COMMON = "Common"
_TRANSFORMS = "Transforms"
_PREDICATES = "Predicates"
_ERRORS = "Error Handling"


def _addressable_name(name: str, value: object) -> None:
    if value is not None and any(ord(c) < 32 or 127 <= ord(c) < 160 for c in str(value)):
        raise ConfigError("Connector name must not contain ISO control characters", name, value)
    # Every connector must stay manageable at /connectors/{name}: a "/" never reaches the route
    # (encoded or not, it splits the path) and "." or ".." are collapsed by URL normalisation.
    # Other characters (spaces, "?", "#", "%", non-ASCII) work when percent-encoded, as
    # connectrt's CLI and client do.
    text = str(value) if value is not None else ""
    if "/" in text:
        raise ConfigError(
            "Connector name must not contain '/': it could not be addressed in the REST API's "
            "URL paths (/connectors/{name})",
            name,
            value,
        )
    if text.strip() in (".", ".."):
        raise ConfigError(
            f"Connector name must not be '{text.strip()}': URL normalisation would remove it "
            "from the REST API's paths",
            name,
            value,
        )


COMMON_CONFIG_DEF = (
    ConfigDef()
    .define(
        "name",
        ConfigType.STRING,
        validator=CompositeValidator((NonEmptyString(), _addressable_name)),
        importance=Importance.HIGH,
        documentation="Globally unique name to use for this connector.",
        group=_COMMON,
        order_in_group=1,
        width=Width.MEDIUM,
        display_name="Connector name",
    )
    .define(
        "connector.class",
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Name or alias of the class for this connector: a Python path "
        "(package.module.Class), a Kafka Connect class name of a connector connectrt "
        "ships, or its short alias (e.g. FileStreamSource).",
        group=_COMMON,
        order_in_group=2,
        width=Width.LONG,
        display_name="Connector class",
    )
    .define(
        "tasks.max",
        ConfigType.INT,
        1,
        Range.at_least(1),
        Importance.HIGH,
        "Maximum number of tasks to use for this connector.",
        group=_COMMON,
        order_in_group=3,
        width=Width.SHORT,
        display_name="Tasks max",
    )
    .define(
        "tasks.max.enforce",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "(Deprecated) Whether to fail a connector that generates more than tasks.max task configs.",
        group=_COMMON,
        order_in_group=4,
        width=Width.SHORT,
        display_name="Enforce tasks max",
    )
    .define(
        "key.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Converter for record keys; defaults to the worker's key.converter.",
        group=_COMMON,
        order_in_group=5,
        width=Width.SHORT,
        display_name="Key converter class",
    )
    .define(
        "value.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Converter for record values; defaults to the worker's value.converter.",
        group=_COMMON,
        order_in_group=6,
        width=Width.SHORT,
        display_name="Value converter class",
    )
    .define(
        "header.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Converter for header values; defaults to the worker's header.converter.",
        group=_COMMON,
        order_in_group=7,
        width=Width.SHORT,
        display_name="Header converter class",
    )
    .define(
        "config.action.reload",
        ConfigType.STRING,
        "restart",
        ValidString.of("none", "restart", case_insensitive=True),
        Importance.LOW,
        "What to do when a config provider's value expires.",
        group=_COMMON,
        order_in_group=8,
        width=Width.MEDIUM,
        display_name="Reload Action",
    )
    .define(
        "transforms",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Aliases for the transformations to be applied to records.",
        group=_TRANSFORMS,
        order_in_group=1,
        width=Width.LONG,
        display_name="Transforms",
    )
    .define(
        "predicates",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Aliases for the predicates used by transformations.",
        group=_PREDICATES,
        order_in_group=1,
        width=Width.LONG,
        display_name="Predicates",
    )
    .define(
        "errors.retry.timeout",
        ConfigType.LONG,
        0,
        None,
        Importance.MEDIUM,
        "Maximum ms a failed operation is retried; 0 = no retries, -1 = forever.",
        group=_ERRORS,
        order_in_group=1,
        width=Width.MEDIUM,
        display_name="Retry Timeout for Errors",
    )
    .define(
        "errors.retry.delay.max.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.MEDIUM,
        "Maximum ms between consecutive retries.",
        group=_ERRORS,
        order_in_group=2,
        width=Width.MEDIUM,
        display_name="Maximum Delay Between Retries for Errors",
    )
    .define(
        "errors.tolerance",
        ConfigType.STRING,
        "none",
        ValidString.of("none", "all"),
        Importance.MEDIUM,
        "'none' fails the task on any error; 'all' skips bad records.",
        group=_ERRORS,
        order_in_group=3,
        width=Width.SHORT,
        display_name="Error Tolerance",
    )
    .define(
        "errors.log.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Log each error.",
        group=_ERRORS,
        order_in_group=4,
        width=Width.SHORT,
        display_name="Log Errors",
    )
    .define(
        "errors.task.restart.max.attempts",
        ConfigType.INT,
        0,
        Range.at_least(0),
        Importance.MEDIUM,
        "connectrt: restart a FAILED task automatically up to this many times (0 = never, "
        "Kafka's behaviour); the count shows in the task status as 'restarts'.",
        group=_ERRORS,
        order_in_group=9,
        width=Width.SHORT,
        display_name="Task restart attempts",
    )
    .define(
        "errors.task.restart.backoff.ms",
        ConfigType.LONG,
        1000,
        Range.at_least(0),
        Importance.LOW,
        "connectrt: delay before the first automatic restart; doubles on each attempt, at "
        "most 60 s.",
        group=_ERRORS,
        order_in_group=10,
        width=Width.SHORT,
        display_name="Task restart backoff",
    )
    .define(
        "errors.log.include.messages",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Include the record in error logs.",
        group=_ERRORS,
        order_in_group=5,
        width=Width.SHORT,
        display_name="Log Error Details",
    )
)

COMMON_CONFIG_DEF = COMMON_CONFIG_DEF.merge(PLUGIN_VERSION_CONFIG_DEF)  # KIP-891
COMMON_CONFIG_DEF = COMMON_CONFIG_DEF.merge(TASK_LIMITS_CONFIG_DEF)  # stall, rate limits

SINK_CONFIG_DEF = COMMON_CONFIG_DEF.merge(
    ConfigDef()
    .define(
        "topics",
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "List of topics to consume, separated by commas.",
        group=_COMMON,
        order_in_group=4,
        width=Width.LONG,
        display_name="Topics",
    )
    .define(
        "topics.regex",
        ConfigType.STRING,
        "",
        ValidRegex(),
        Importance.HIGH,
        "Regular expression giving the topics to consume.",
        group=_COMMON,
        order_in_group=4,
        width=Width.LONG,
        display_name="Topics regex",
    )
    .define(
        "errors.deadletterqueue.topic.name",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Topic that receives records the sink could not process.",
        group=_ERRORS,
        order_in_group=6,
        width=Width.MEDIUM,
        display_name="Dead Letter Queue Topic Name",
    )
    .define(
        "errors.deadletterqueue.topic.replication.factor",
        ConfigType.SHORT,
        3,
        None,
        Importance.MEDIUM,
        "Replication factor of the dead letter queue topic.",
        group=_ERRORS,
        order_in_group=7,
        width=Width.MEDIUM,
        display_name="Dead Letter Queue Topic Replication Factor",
    )
    .define(
        "errors.deadletterqueue.context.headers.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Add __connect.errors.* context headers to DLQ records.",
        group=_ERRORS,
        order_in_group=8,
        width=Width.MEDIUM,
        display_name="Enable Error Context Headers",
    )
)

SINK_CONFIG_DEF = SINK_CONFIG_DEF.merge(SHARE_GROUP_CONFIG_DEF)  # consumer.group.type=share

SOURCE_CONFIG_DEF = COMMON_CONFIG_DEF.merge(
    ConfigDef()
    .define(
        "exactly.once.support",
        ConfigType.STRING,
        "requested",
        ValidString.of("requested", "required", case_insensitive=True),
        Importance.MEDIUM,
        "Whether exactly-once delivery is required for this connector.",
        group="Exactly Once Support",
        order_in_group=1,
        width=Width.SHORT,
        display_name="Exactly once support",
    )
    .define(
        "transaction.boundary",
        ConfigType.STRING,
        "poll",
        ValidString.of("poll", "interval", "connector", case_insensitive=True),
        Importance.MEDIUM,
        "With exactly-once source support enabled on the worker: where each transaction "
        "ends. 'poll': after every non-empty batch a task's poll() returns; 'interval': every "
        "transaction.boundary.interval.ms; 'connector': when the task asks through its "
        "TransactionContext (the connector must support it).",
        group="Exactly Once Support",
        order_in_group=2,
        width=Width.SHORT,
        display_name="Transaction Boundary",
    )
    .define(
        "transaction.boundary.interval.ms",
        ConfigType.LONG,
        None,
        Range.at_least(0),
        Importance.LOW,
        "With transaction.boundary=interval: how often transactions commit (default: the "
        "worker's offset.flush.interval.ms).",
        group="Exactly Once Support",
        order_in_group=3,
        width=Width.SHORT,
        display_name="Transaction boundary interval",
    )
    .define(
        "offsets.storage.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "A connector-specific offsets topic. Exactly-once tasks write their source offsets to "
        "it inside their transactions and read them from it (read_committed); unset: the "
        "worker's offset.storage.topic. Only used by exactly-once tasks.",
        group="offsets.storage",
        order_in_group=1,
        width=Width.LONG,
        display_name="Offsets topic",
    )
    .define(
        "topic.creation.default.replication.factor",
        ConfigType.SHORT,
        None,
        None,
        Importance.LOW,
        "Replication factor of topics the source tasks create (-1 = broker default). Topic "
        "creation is used when this and topic.creation.default.partitions are both set.",
        group="Topic Creation",
        order_in_group=1,
        width=Width.LONG,
        display_name="Replication Factor for Topics in default",
    )
    .define(
        "topic.creation.default.partitions",
        ConfigType.INT,
        None,
        None,
        Importance.LOW,
        "Number of partitions of topics the source tasks create (-1 = broker default).",
        group="Topic Creation",
        order_in_group=2,
        width=Width.LONG,
        display_name="Partition Count for Topics in default",
    )
)
SOURCE_CONFIG_DEF = SOURCE_CONFIG_DEF.merge(SCHEMA_DRIFT_CONFIG_DEF)  # schema.drift


def framework_def_for(connector_cls: type[Connector]) -> ConfigDef:
    """The framework definition for a connector class: sink, source or (neither) common."""
    if issubclass(connector_cls, SinkConnector):
        return SINK_CONFIG_DEF
    if issubclass(connector_cls, SourceConnector):
        return SOURCE_CONFIG_DEF
    return COMMON_CONFIG_DEF
