"""Whole-connector-config validation for the bundled FileStream connectors."""

from __future__ import annotations

import pytest

from connectrt.api.config import ConfigValue
from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import (
    COMMON_CONFIG_DEF,
    SINK_CONFIG_DEF,
    SOURCE_CONFIG_DEF,
    validate_connector_config,
)
from connectrt.runtime.plugins.registry import PluginRegistry

ALL = OverridePolicy("All")
NONE = OverridePolicy("None")

BOTH = "topics and topics.regex are mutually exclusive options, but both are set."
NEITHER = "Must configure one of topics or topics.regex"
NULL_MSG = "Null value can not be supplied as the configuration value."
ENDPOINT = (
    "You can also find the above list of errors at the endpoint "
    "`/connector-plugins/{connectorType}/config/validate`"
)


@pytest.fixture
def plugins() -> PluginRegistry:
    return PluginRegistry()


def source(**extra: str | None) -> dict[str, str | None]:
    cfg: dict[str, str | None] = {
        "name": "local-file-source",
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": "test.txt",
        "topic": "connect-test",
    }
    cfg.update(extra)
    return cfg


def sink(**extra: str | None) -> dict[str, str | None]:
    cfg: dict[str, str | None] = {
        "name": "local-file-sink",
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": "test.sink.txt",
        "topics": "connect-test",
    }
    cfg.update(extra)
    return cfg


def errors_of(values: dict[str, ConfigValue], key: str) -> list[str]:
    return values[key].errors


# --- valid configs --------------------------------------------------------------------------


def test_valid_source_config(plugins: PluginRegistry) -> None:
    result = validate_connector_config(source(), plugins, ALL)
    assert result.error_count == 0
    assert result.error_messages() == []
    assert result.connector_class == "FileStreamSource"
    assert result.values["tasks.max"].value == 1
    assert result.values["topic"].value == "connect-test"
    assert result.values["batch.size"].value == 2000  # the connector's own default
    assert "batch.size" in result.definition.keys
    assert "tasks.max" in result.definition.keys


def test_valid_sink_config(plugins: PluginRegistry) -> None:
    result = validate_connector_config(sink(), plugins, ALL)
    assert result.error_count == 0
    assert result.values["topics"].value == ["connect-test"]
    assert result.values["errors.tolerance"].value == "none"


def test_valid_config_passes_check(plugins: PluginRegistry) -> None:
    assert validate_connector_config(sink(), plugins, ALL).raise_if_invalid().error_count == 0
    assert validate_connector_config(source(), plugins, ALL).raise_if_invalid().error_count == 0


@pytest.mark.parametrize(
    "cls",
    [
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "FileStreamSourceConnector",
        "connectors.file.FileStreamSourceConnector",
    ],
)
def test_connector_class_aliases(plugins: PluginRegistry, cls: str) -> None:
    result = validate_connector_config(source(**{"connector.class": cls}), plugins, ALL)
    assert result.error_count == 0
    assert result.connector_class == cls


# --- connector.class ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, ""])
def test_missing_connector_class(plugins: PluginRegistry, value: str | None) -> None:
    cfg = {"name": "c", "tasks.max": "1", "db.password": "hunter22", "note": "keep-me-private"}
    if value is not None:
        cfg["connector.class"] = value
    with pytest.raises(ConfigError) as ei:
        validate_connector_config(cfg, plugins, ALL)
    msg = str(ei.value)
    # Kafka's text, word for word (the REST differential compares it); the key is carried
    # as the error's field name, which validate reports.
    assert msg == "Connector config contains no connector type"
    # Unlike Kafka's, the message does not echo the config (not even masked).
    assert "tasks.max" not in msg and "hunter22" not in msg and "keep-me-private" not in msg
    assert ei.value.name == "connector.class"


def test_unknown_connector_class(plugins: PluginRegistry) -> None:
    with pytest.raises(ConfigError, match="NoSuchConnector"):
        validate_connector_config(source(**{"connector.class": "NoSuchConnector"}), plugins, ALL)


def test_non_connector_class(plugins: PluginRegistry) -> None:
    with pytest.raises(ConfigError, match="is not a Connector"):
        validate_connector_config(source(**{"connector.class": "JsonConverter"}), plugins, ALL)


# --- common keys ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-3"])
def test_tasks_max_below_one(plugins: PluginRegistry, value: str) -> None:
    result = validate_connector_config(source(**{"tasks.max": value}), plugins, ALL)
    assert errors_of(result.values, "tasks.max") == ["Value must be at least 1"]
    assert result.error_count == 1


def test_tasks_max_not_a_number(plugins: PluginRegistry) -> None:
    result = validate_connector_config(sink(**{"tasks.max": "two"}), plugins, ALL)
    assert len(errors_of(result.values, "tasks.max")) == 1
    assert "two" in errors_of(result.values, "tasks.max")[0]


def test_missing_name(plugins: PluginRegistry) -> None:
    cfg = source()
    del cfg["name"]
    result = validate_connector_config(cfg, plugins, ALL)
    assert errors_of(result.values, "name") == [
        'Missing required configuration "name" which has no default value.'
    ]


@pytest.mark.parametrize("name", ["", "  ", "bad\x07name"])
def test_invalid_name(plugins: PluginRegistry, name: str) -> None:
    result = validate_connector_config(source(name=name), plugins, ALL)
    assert len(errors_of(result.values, "name")) == 1


def test_errors_tolerance_must_be_none_or_all(plugins: PluginRegistry) -> None:
    result = validate_connector_config(sink(**{"errors.tolerance": "some"}), plugins, ALL)
    assert errors_of(result.values, "errors.tolerance") == ["String must be one of: none, all"]


def test_connector_own_keys_are_validated(plugins: PluginRegistry) -> None:
    cfg = source(**{"batch.size": "0"})
    del cfg["topic"]
    result = validate_connector_config(cfg, plugins, ALL)
    assert errors_of(result.values, "topic") == [
        'Missing required configuration "topic" which has no default value.'
    ]
    assert errors_of(result.values, "batch.size") == ["Value must be at least 1"]
    assert result.error_count == 2


def test_null_value_of_framework_key(plugins: PluginRegistry) -> None:
    result = validate_connector_config(source(**{"tasks.max": None}), plugins, ALL)
    assert errors_of(result.values, "tasks.max") == [NULL_MSG]


def test_null_value_of_unknown_key(plugins: PluginRegistry) -> None:
    result = validate_connector_config(source(**{"some.extra": None}), plugins, ALL)
    assert errors_of(result.values, "some.extra") == [NULL_MSG]


@pytest.mark.parametrize("key", ["file", "topic"])
def test_null_value_of_connector_key(plugins: PluginRegistry, key: str) -> None:
    # Kafka: any null value yields "Null value can not be supplied as the configuration value."
    result = validate_connector_config(source(**{key: None}), plugins, ALL)
    assert errors_of(result.values, key) == [NULL_MSG]


# --- sink topics / topics.regex / DLQ -----------------------------------------------------------


def test_sink_needs_topics_or_regex(plugins: PluginRegistry) -> None:
    cfg = sink()
    del cfg["topics"]
    result = validate_connector_config(cfg, plugins, ALL)
    assert errors_of(result.values, "topics") == [NEITHER]
    assert errors_of(result.values, "topics.regex") == [NEITHER]
    assert result.error_count == 2


def test_sink_empty_topics_counts_as_unset(plugins: PluginRegistry) -> None:
    result = validate_connector_config(sink(topics=" "), plugins, ALL)
    assert errors_of(result.values, "topics") == [NEITHER]


def test_sink_topics_and_regex_are_exclusive(plugins: PluginRegistry) -> None:
    result = validate_connector_config(sink(**{"topics.regex": "connect-.*"}), plugins, ALL)
    assert errors_of(result.values, "topics") == [BOTH]
    assert errors_of(result.values, "topics.regex") == [BOTH]
    assert result.error_count == 2


def test_sink_regex_only_is_valid(plugins: PluginRegistry) -> None:
    cfg = sink(**{"topics.regex": "connect-.*"})
    del cfg["topics"]
    assert validate_connector_config(cfg, plugins, ALL).error_count == 0


def test_sink_invalid_regex(plugins: PluginRegistry) -> None:
    cfg = sink(**{"topics.regex": "(unclosed"})
    del cfg["topics"]
    result = validate_connector_config(cfg, plugins, ALL)
    errs = errors_of(result.values, "topics.regex")
    assert len(errs) == 1
    assert errs[0].startswith("Invalid regular expression")


def test_sink_invalid_regex_with_dlq_is_reported_not_raised(plugins: PluginRegistry) -> None:
    cfg = sink(**{"topics.regex": "(unclosed", "errors.deadletterqueue.topic.name": "dlq"})
    del cfg["topics"]
    result = validate_connector_config(cfg, plugins, ALL)
    assert errors_of(result.values, "topics.regex")[0].startswith("Invalid regular expression")


def test_dlq_topic_in_topics_is_rejected(plugins: PluginRegistry) -> None:
    cfg = sink(topics="a, dlq ,b", **{"errors.deadletterqueue.topic.name": "dlq"})
    result = validate_connector_config(cfg, plugins, ALL)
    errs = errors_of(result.values, "errors.deadletterqueue.topic.name")
    assert errs == [
        "The DLQ topic 'dlq' may not be included in the list of topics "
        "('topics' or 'topics.regex') to consume"
    ]


def test_dlq_topic_matched_by_regex_is_rejected(plugins: PluginRegistry) -> None:
    cfg = sink(**{"topics.regex": "d.*", "errors.deadletterqueue.topic.name": "dlq"})
    del cfg["topics"]
    result = validate_connector_config(cfg, plugins, ALL)
    assert len(errors_of(result.values, "errors.deadletterqueue.topic.name")) == 1


def test_dlq_topic_elsewhere_is_fine(plugins: PluginRegistry) -> None:
    cfg = sink(topics="a,b", **{"errors.deadletterqueue.topic.name": "a-dlq"})
    assert validate_connector_config(cfg, plugins, ALL).error_count == 0
    cfg = sink(**{"topics.regex": "a.*", "errors.deadletterqueue.topic.name": "dlq"})
    del cfg["topics"]
    assert validate_connector_config(cfg, plugins, ALL).error_count == 0


def test_source_has_no_topics_checks(plugins: PluginRegistry) -> None:
    result = validate_connector_config(source(), plugins, ALL)
    assert "topics" not in result.values
    assert "topics.regex" not in result.values


# --- override policy ---------------------------------------------------------------------------


def test_override_policy_violations_become_field_errors(plugins: PluginRegistry) -> None:
    cfg = sink(**{"producer.override.acks": "1", "consumer.override.fetch.min.bytes": "9"})
    result = validate_connector_config(cfg, plugins, NONE)
    assert errors_of(result.values, "producer.override.acks") == [
        "The 'None' policy does not allow 'acks' to be overridden in the connector configuration."
    ]
    assert errors_of(result.values, "consumer.override.fetch.min.bytes") == [
        "The 'None' policy does not allow 'fetch.min.bytes' to be overridden in the connector "
        "configuration."
    ]
    assert result.values["producer.override.acks"].value == "1"
    assert result.error_count == 2


def test_override_allowed_by_all_policy(plugins: PluginRegistry) -> None:
    cfg = sink(**{"producer.override.acks": "1"})
    assert validate_connector_config(cfg, plugins, ALL).error_count == 0


def test_principal_policy(plugins: PluginRegistry) -> None:
    cfg = sink(
        **{
            "consumer.override.sasl.mechanism": "PLAIN",
            "consumer.override.max.poll.records": "10",
        }
    )
    result = validate_connector_config(cfg, plugins, OverridePolicy("Principal"))
    assert result.error_count == 1
    assert "'max.poll.records'" in errors_of(result.values, "consumer.override.max.poll.records")[0]


# --- ValidationResult.raise_if_invalid --------------------------------------------------------


def test_check_combined_message_format(plugins: PluginRegistry) -> None:
    cfg = sink(**{"tasks.max": "0", "topics.regex": "x.*"})
    with pytest.raises(ConfigError) as ei:
        validate_connector_config(cfg, plugins, ALL).raise_if_invalid()
    msg = str(ei.value)
    lines = msg.split("\n")
    assert lines[0] == "Connector configuration is invalid and contains the following 3 error(s):"
    assert lines[-1] == ENDPOINT
    body = lines[1:-1]
    assert len(body) == 3
    assert sum("Value must be at least 1" in line and "tasks.max" in line for line in body) == 1
    assert sum(BOTH in line for line in body) == 2
    assert ei.value.name == "tasks.max"


def test_check_single_error(plugins: PluginRegistry) -> None:
    cfg = sink(**{"producer.override.acks": "1"})
    with pytest.raises(ConfigError) as ei:
        validate_connector_config(cfg, plugins, NONE).raise_if_invalid()
    lines = str(ei.value).split("\n")
    assert lines[0] == "Connector configuration is invalid and contains the following 1 error(s):"
    assert len(lines) == 3
    assert lines[1].endswith(
        "The 'None' policy does not allow 'acks' to be overridden in the connector configuration."
    )
    assert "producer.override.acks" in lines[1]
    assert lines[2] == ENDPOINT
    assert ei.value.name == "producer.override.acks"


# --- groups ---------------------------------------------------------------------------------


def test_groups_of_sink(plugins: PluginRegistry) -> None:
    groups = validate_connector_config(sink(), plugins, ALL).groups
    assert groups[:4] == ["Common", "Transforms", "Predicates", "Error Handling"]


def test_groups_of_source(plugins: PluginRegistry) -> None:
    groups = validate_connector_config(source(), plugins, ALL).groups
    assert groups[:4] == ["Common", "Transforms", "Predicates", "Error Handling"]
    assert len(groups) == len(set(groups))


def test_framework_definitions() -> None:
    assert COMMON_CONFIG_DEF.groups == [
        "Common",
        "Transforms",
        "Predicates",
        "Error Handling",
        "Task Limits",  # connectrt: task.stall.*, task.rate.limit.*
    ]
    assert {"topics", "topics.regex", "errors.deadletterqueue.topic.name"} <= set(
        SINK_CONFIG_DEF.keys
    )
    assert "topics" not in SOURCE_CONFIG_DEF.keys
    tasks_max = COMMON_CONFIG_DEF.keys["tasks.max"]
    assert (tasks_max.default, tasks_max.group, tasks_max.order_in_group) == (1, "Common", 3)
    assert tasks_max.display_name == "Tasks max"
    assert COMMON_CONFIG_DEF.keys["name"].required
    assert COMMON_CONFIG_DEF.keys["connector.class"].required
    assert COMMON_CONFIG_DEF.keys["transforms"].group == "Transforms"
    assert COMMON_CONFIG_DEF.keys["predicates"].group == "Predicates"
    assert COMMON_CONFIG_DEF.keys["errors.tolerance"].group == "Error Handling"
    assert COMMON_CONFIG_DEF.keys["errors.retry.delay.max.ms"].default == 60000
