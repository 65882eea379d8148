"""The pure checks behind the refusals of configurations a real Kafka cluster would refuse:
replication factors above the broker count, internal topics that are not compacted,
compacted topics for records without keys, and the first line of a failed task's trace."""

from __future__ import annotations

import pytest

from connectrt.errors import ConnectError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.cluster_limits import (
    BrokerCount,
    replication_factor_errors,
    replication_factor_refusal,
)
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.topic_creation import compacted_group_errors
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.tasks.runner import failure_trace
from connectrt.storage import internal_topics
from connectrt.storage.internal_topics import CONFIGS, OFFSETS, STATUS, cleanup_policy_refusal

DLQ_RF = "errors.deadletterqueue.topic.replication.factor"
DLQ = {"errors.deadletterqueue.topic.name": "dlq"}
CREATION = {
    "topic.creation.default.partitions": "1",
    "topic.creation.default.replication.factor": "1",
}


# -- replication factors -------------------------------------------------------------------


@pytest.mark.parametrize(("factor", "brokers"), [(1, 1), (3, 3), (2, 5), (-1, 1)])
def test_replication_factor_the_cluster_can_hold_is_accepted(factor: int, brokers: int) -> None:
    assert replication_factor_refusal("k", factor, brokers) is None


def test_replication_factor_above_the_brokers_names_setting_value_and_cluster_size() -> None:
    message = replication_factor_refusal("some.replication.factor", 3, 1)
    assert message is not None
    assert message.startswith("Invalid value 3 for configuration some.replication.factor:")
    assert "this cluster has 1 broker," in message
    assert "at most 1, or to -1" in message


def test_dlq_default_replication_factor_is_kafka_connects_three() -> None:
    assert replication_factor_errors(DLQ, 3, source=False) == {}
    errors = replication_factor_errors(DLQ, 1, source=False)
    assert list(errors) == [DLQ_RF]
    assert "Invalid value 3 (the default) for configuration " + DLQ_RF in errors[DLQ_RF][0]


def test_dlq_replication_factor_is_checked_only_when_a_dlq_is_set() -> None:
    assert replication_factor_errors({DLQ_RF: "3"}, 1, source=False) == {}
    assert replication_factor_errors({**DLQ, DLQ_RF: "1"}, 1, source=False) == {}
    assert replication_factor_errors({**DLQ, DLQ_RF: "-1"}, 1, source=False) == {}
    assert list(replication_factor_errors({**DLQ, DLQ_RF: "2"}, 1, source=True)) == [DLQ_RF]
    # Not a number: the type check reports it, not this one.
    assert replication_factor_errors({**DLQ, DLQ_RF: "three"}, 1, source=False) == {}


def test_topic_creation_groups_are_checked_for_sources_only() -> None:
    config = {
        **CREATION,
        "topic.creation.default.replication.factor": "3",
        "topic.creation.groups": "big, small",
        "topic.creation.big.replication.factor": "2",
        "topic.creation.small.include": "s.*",  # inherits the default's: reported there
    }
    errors = replication_factor_errors(config, 1, source=True)
    assert sorted(errors) == [
        "topic.creation.big.replication.factor",
        "topic.creation.default.replication.factor",
    ]
    assert replication_factor_errors(config, 3, source=True) == {}
    assert replication_factor_errors(config, 1, source=False) == {}


def test_validation_with_the_cluster_size_refuses_per_key(tmp_path) -> None:
    plugins = PluginRegistry()
    sink = {
        "name": "s",
        "connector.class": "FileStreamSink",
        "file": str(tmp_path / "out"),
        "topics": "in",
        **DLQ,
        DLQ_RF: "3",
    }
    refused = validate_connector_config(sink, plugins, OverridePolicy("All"), brokers=1)
    assert refused.values[DLQ_RF].errors and refused.error_count == 1
    assert DLQ_RF in refused.error_messages()[0]
    unknown = validate_connector_config(sink, plugins, OverridePolicy("All"), brokers=None)
    assert unknown.error_count == 0  # cluster size unknown: not refused on that ground
    assert (
        validate_connector_config(sink, plugins, OverridePolicy("All"), brokers=3).error_count == 0
    )


class _Counter:
    def __init__(self, answers: list[int | None]) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self) -> int | None:
        self.calls += 1
        return self.answers.pop(0)


def test_broker_count_is_remembered_while_known_and_asked_again_when_unknown() -> None:
    unknown_then_known = _Counter([None, 3])
    count = BrokerCount(unknown_then_known, ttl_s=60)
    assert count() is None
    assert count() == 3
    assert count() == 3
    assert unknown_then_known.calls == 2
    expiring = _Counter([1, 2])
    count = BrokerCount(expiring, ttl_s=0)
    assert (count(), count()) == (1, 2)


# -- compacted topics for records without keys ------------------------------------------------


def test_compacted_groups_are_named_by_their_policy_key() -> None:
    config = {
        **CREATION,
        "topic.creation.default.cleanup.policy": "delete",
        "topic.creation.groups": "c1,c2,plain",
        "topic.creation.c1.cleanup.policy": "compact",
        "topic.creation.c2.cleanup.policy": "Delete, Compact",
        "topic.creation.plain.include": "p.*",
    }
    errors = compacted_group_errors(config)
    assert sorted(errors) == [
        "topic.creation.c1.cleanup.policy",
        "topic.creation.c2.cleanup.policy",
    ]
    assert "accepts only records with a key" in errors["topic.creation.c1.cleanup.policy"][0]


def _file_source(tmp_path, **extra: str) -> dict[str, str | None]:
    return {
        "name": "f",
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in"),
        "topic": "compact-t",
        **CREATION,
        "topic.creation.default.cleanup.policy": "compact",
        **extra,
    }


def test_file_source_with_a_compacted_group_is_refused_unless_transforms_may_key_it(
    tmp_path,
) -> None:
    plugins = PluginRegistry()
    policy = OverridePolicy("All")
    refused = validate_connector_config(_file_source(tmp_path), plugins, policy)
    assert refused.values["topic.creation.default.cleanup.policy"].errors
    keyed = _file_source(
        tmp_path,
        transforms="key",
        **{
            "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.key.fields": "line",
        },
    )
    assert (
        not validate_connector_config(keyed, plugins, policy)
        .values["topic.creation.default.cleanup.policy"]
        .errors
    )


# -- internal topics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("internal", "setting", "purpose"),
    [
        (OFFSETS, "offset.storage.topic", "source connector offsets"),
        (CONFIGS, "config.storage.topic", "connector configurations"),
        (STATUS, "status.storage.topic", "connector and task statuses"),
    ],
)
def test_internal_topic_not_compacted_gets_kafka_connects_reason(
    internal: internal_topics.InternalTopic, setting: str, purpose: str
) -> None:
    assert cleanup_policy_refusal("t", internal, "compact") is None
    assert cleanup_policy_refusal("t", internal, " COMPACT ") is None
    assert cleanup_policy_refusal("t", internal, "delete") == (
        f"Topic 't' supplied via the '{setting}' property is required to have "
        f"'cleanup.policy=compact' to guarantee consistency and durability of {purpose}, but "
        "found the topic currently has 'cleanup.policy=delete'. Continuing would likely result "
        f"in eventually losing {purpose} and problems restarting this Connect cluster in the "
        f"future. Change the '{setting}' property in the Connect worker configurations to use "
        "a topic with 'cleanup.policy=compact'."
    )
    both = cleanup_policy_refusal("t", internal, "compact,delete")
    assert both is not None and "currently has 'cleanup.policy=compact,delete'" in both


def test_internal_topic_replication_factor_names_the_storage_setting() -> None:
    assert internal_topics.replication_factor_refusal("o", OFFSETS, -1, 1) is None
    assert internal_topics.replication_factor_refusal("o", OFFSETS, 1, 1) is None
    message = internal_topics.replication_factor_refusal("o", STATUS, 3, 1)
    assert message is not None
    assert message.startswith("Invalid value 3 for configuration status.storage.replication")
    assert "'status.storage.topic'" in message and "has 1 broker." in message


# -- the first line of a failed task's trace --------------------------------------------------


def test_failure_trace_puts_the_failing_exception_first_and_its_cause_below() -> None:
    try:
        try:
            raise ValueError("the cause")
        except ValueError as cause:
            raise ConnectError("Could not initialize dead letter queue with topic=d") from cause
    except ConnectError as e:
        trace = failure_trace(e)
    lines = trace.splitlines()
    assert lines[0] == (
        "connectrt.errors.ConnectError: Could not initialize dead letter queue with topic=d"
    )
    assert "ValueError: the cause" in trace
    assert trace.index("ValueError: the cause") > 0
    try:
        raise KeyError("k")
    except KeyError as e:
        assert failure_trace(e).splitlines()[0] == "KeyError: 'k'"
