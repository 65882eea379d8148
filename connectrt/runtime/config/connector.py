"""Whole-config validation of connector configurations.

Every connector config is validated against the framework keys (``name``, ``connector.class``,
``tasks.max``, converters, ``errors.*``, sink ``topics``/``topics.regex``...; defined in
:mod:`connectrt.runtime.config.connector_def` and re-exported here) merged with the
connector's own :meth:`~connectrt.api.Connector.config_def` (the plugin's definition wins), plus
the client override policy (and, for sinks, consumer overrides that cannot work together:
:mod:`~connectrt.runtime.clients.group_protocol`). :func:`validate_connector_config` returns
per-field results (the REST validate endpoint's shape), whose
:meth:`~ValidationResult.raise_if_invalid` raises one ConfigError listing every problem, in
Kafka's wording. Validation keeps no state of its own: it instantiates the connector class to
ask for its definition and run its ``validate``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from connectrt.api.config import ConfigDef, ConfigValue
from connectrt.api.connector import Connector, SinkConnector, SourceConnector
from connectrt.errors import ConfigError
from connectrt.runtime.clients.group_protocol import override_errors as group_protocol_errors
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.cluster_limits import replication_factor_errors
from connectrt.runtime.config.connector_classes import check_converters, refuse_class_references
from connectrt.runtime.config.connector_def import (
    COMMON_CONFIG_DEF,
    SINK_CONFIG_DEF,
    SOURCE_CONFIG_DEF,
    framework_def_for,
)
from connectrt.runtime.config.exactly_once import check_exactly_once
from connectrt.runtime.config.share_group import share_group_errors
from connectrt.runtime.config.topic_creation import (
    compacted_group_errors,
    uses_topic_creation,
    validate_topic_creation,
)
from connectrt.runtime.plugins.guarded_calls import plugin_call
from connectrt.runtime.plugins.registry import PluginRegistry, VersionedPluginLoadingError
from connectrt.runtime.plugins.version_config import CONNECTOR_VERSION, validate_plugin_versions
from connectrt.transforms.chain import validate_transforms

__all__ = [
    "COMMON_CONFIG_DEF",
    "NO_CONNECTOR_TYPE",
    "SINK_CONFIG_DEF",
    "SOURCE_CONFIG_DEF",
    "ValidationResult",
    "refuse_class_references",
    "validate_connector_config",
]


NO_CONNECTOR_TYPE = "Connector config contains no connector type"
"""The error of a config without ``connector.class`` (Kafka's message quotes the whole config;
this one quotes none of it)."""


@dataclass
class ValidationResult:
    """Per-field validation of a whole connector config. ``connector_type`` is the connector
    class validated, for callers that go on to start it (None when the version the config
    asks for is not installed: the newest was validated, and the version key has an error)."""

    connector_class: str
    groups: list[str]
    definition: ConfigDef
    values: dict[str, ConfigValue]
    connector_type: type[Connector] | None = field(default=None, compare=False, repr=False)

    @property
    def error_count(self) -> int:
        return sum(len(v.errors) for v in self.values.values())

    def raise_if_invalid(self) -> ValidationResult:
        """This result, or one ConfigError (Kafka's wording) listing every error, naming the
        first key in error."""
        messages = self.error_messages()
        if messages:
            raise ConfigError(
                f"Connector configuration is invalid and contains the following {len(messages)} "
                "error(s):\n"
                + "\n".join(messages)
                + "\nYou can also find the above list of errors "
                "at the endpoint `/connector-plugins/{connectorType}/config/validate`",
                next(v.name for v in self.values.values() if v.errors),
            )
        return self

    def error_messages(self) -> list[str]:
        out = []
        for v in self.values.values():
            for e in v.errors:
                out.append(e if v.name in e else f"{v.name}: {e}")
        return out


def validate_connector_config(
    config: Mapping[str, str | None],
    plugins: PluginRegistry,
    policy: OverridePolicy,
    worker_converters: Mapping[str, tuple[str, str | None]] | None = None,
    *,
    executor: str | None = None,
    exactly_once_source: str | None = None,
    written: Mapping[str, str | None] | None = None,
    brokers: int | None = None,
) -> ValidationResult:
    """Validate ``config`` completely; never raises for invalid values (errors are per field).

    ``written`` is the config as the caller wrote it when ``config`` has config provider
    references resolved: the connector class is then looked up by its written name, as Kafka
    does, so an error about it never quotes a resolved value.
    Raises ConfigError only when ``connector.class`` is missing or names no connector, or a
    class-typed key holds a config provider reference
    (:mod:`~connectrt.runtime.config.connector_classes`); the message quotes no other value of
    the config. Unknown converter and transform classes are per-field errors, as in Kafka. The
    connector version checked is the one ``connector.plugin.version`` asks for (the newest when
    no installed version matches: that error is on the version key); ``worker_converters``
    (class and version per kind) are the converters the config does not name. ``executor`` is
    the worker's ``task.executor``, when known: keys that only one executor can honour
    (``task.memory.limit.mb``) are checked against it.
    ``exactly_once_source`` is the worker's ``exactly.once.source.support``, when known
    (:func:`~connectrt.runtime.config.exactly_once.check_exactly_once`).
    ``brokers`` is the Kafka cluster's number of brokers, when known: replication factors
    above it are errors (:mod:`~connectrt.runtime.config.cluster_limits`).
    """
    class_name = (written if written is not None else config).get("connector.class")
    if not class_name:
        raise ConfigError(NO_CONNECTOR_TYPE, "connector.class")
    refuse_class_references(written if written is not None else config)
    requested: type[Connector] | None = None  # None: the version asked for is not installed
    try:
        cls = requested = plugins.connector_class(class_name, config.get(CONNECTOR_VERSION))
    except VersionedPluginLoadingError:
        cls = plugins.connector_class(class_name)
    connector = plugin_call(cls, "__init__()", cls)
    framework = framework_def_for(cls)
    own = plugin_call(cls, "config_def()", connector.config_def)
    definition = plugin_call(cls, "config_def()", lambda: framework.merge(own))
    values = framework.validate(config)
    present_values = {k: v for k, v in config.items() if v is not None}
    values.update(plugin_call(cls, "validate()", lambda: connector.validate(present_values)))
    if issubclass(cls, SinkConnector):
        _check_topics(config, values)
    elif issubclass(cls, SourceConnector):
        _add_errors(values, config, validate_topic_creation(config))
        assert isinstance(connector, SourceConnector)
        if uses_topic_creation(config) and not (present_values.get("transforms") or "").strip():
            keyed = plugin_call(
                cls,
                "records_have_keys()",
                lambda: connector.records_have_keys(present_values),
            )
            if keyed is False:
                _add_errors(values, config, compacted_group_errors(config))
        check_exactly_once(config, values, connector, exactly_once_source)
    if brokers is not None:
        _add_errors(
            values,
            config,
            replication_factor_errors(config, brokers, source=issubclass(cls, SourceConnector)),
        )
    if executor is not None:
        _check_executor(values, executor)
    present = {k: v for k, v in config.items() if v is not None}
    if present.get("transforms") or present.get("predicates"):
        for key, errors in validate_transforms(present, plugins.transform_class).items():
            values.setdefault(key, ConfigValue(key, config.get(key))).errors.extend(errors)
    check_converters(config, values, plugins)
    validate_plugin_versions(config, plugins, values, worker_converters)
    for key, raw in config.items():
        # Keys the definitions do not know (client overrides, converter and transform
        # settings, extra connector keys) are listed too, with no definition (Kafka's shape).
        if key not in values:
            values[key] = ConfigValue(key, raw)
    for key, message in policy.violations({k: v or "" for k, v in config.items()}).items():
        values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
    if issubclass(cls, SinkConnector):
        for key, message in group_protocol_errors(config).items():
            values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
        for key, message in share_group_errors(config).items():
            values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
    null_error = "Null value can not be supplied as the configuration value."
    for key, raw in config.items():
        if raw is None:
            cv = values.setdefault(key, ConfigValue(key, None))
            cv.errors = [e for e in cv.errors if not e.startswith("Missing required")]
            if null_error not in cv.errors:
                cv.errors.append(null_error)
    groups = list(framework.groups)
    for g in own.groups:
        if g not in groups:
            groups.append(g)
    return ValidationResult(class_name, groups, definition, values, requested)


def _check_topics(config: Mapping[str, str | None], values: dict[str, ConfigValue]) -> None:
    topics = (config.get("topics") or "").strip()
    regex = (config.get("topics.regex") or "").strip()
    msg = None
    if topics and regex:
        msg = "topics and topics.regex are mutually exclusive options, but both are set."
    elif not topics and not regex:
        msg = "Must configure one of topics or topics.regex"
    if msg:
        values["topics"].errors.append(msg)
        values["topics.regex"].errors.append(msg)
    dlq = (config.get("errors.deadletterqueue.topic.name") or "").strip()
    if dlq:
        listed = [t.strip() for t in topics.split(",")] if topics else []
        regex_ok = not values["topics.regex"].errors
        if dlq in listed or (regex and regex_ok and re.fullmatch(regex, dlq)):
            values["errors.deadletterqueue.topic.name"].errors.append(
                f"The DLQ topic '{dlq}' may not be included in the list of topics "
                "('topics' or 'topics.regex') to consume"
            )


def _add_errors(
    values: dict[str, ConfigValue],
    config: Mapping[str, str | None],
    errors: Mapping[str, list[str]],
) -> None:
    for key, messages in errors.items():
        cv = values.setdefault(key, ConfigValue(key, config.get(key)))
        cv.errors.extend(e for e in messages if e not in cv.errors)


def _check_executor(values: dict[str, ConfigValue], executor: str) -> None:
    limit = values.get("task.memory.limit.mb")
    if limit is None or limit.errors or not limit.value or executor == "processes":
        return
    limit.errors.append(
        f"task.memory.limit.mb is enforced on task processes only, and this worker runs its "
        f"tasks with task.executor={executor}: set task.executor=processes in the worker "
        "config, or remove the key"
    )
