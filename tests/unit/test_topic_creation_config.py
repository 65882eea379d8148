"""Parsing, matching and validation of the topic.creation.* connector settings (KIP-158)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.config.topic_creation import (
    TopicCreationConfig,
    TopicCreator,
    validate_topic_creation,
)

BASE = {
    "topic.creation.default.replication.factor": "-1",
    "topic.creation.default.partitions": "3",
}


def parse(**extra: str) -> TopicCreationConfig:
    cfg = {**BASE, **{k.replace("__", "."): v for k, v in extra.items()}}
    result = TopicCreationConfig.from_connector_config(cfg)
    assert result is not None
    return result


def test_not_used_without_both_default_keys():
    assert TopicCreationConfig.from_connector_config({}) is None
    assert (
        TopicCreationConfig.from_connector_config({"topic.creation.default.partitions": "3"})
        is None
    )
    assert TopicCreationConfig.from_connector_config({"topic": "x"}) is None
    assert validate_topic_creation({"topic": "x", "name": "n"}) == {}


def test_default_group_only():
    tc = parse()
    assert tc.groups == ()
    g = tc.group_for("anything")
    assert g.name == "default"
    assert (g.partitions, g.replication_factor, dict(g.configs)) == (3, -1, {})
    nt = g.new_topic("anything")
    assert (nt.topic, nt.num_partitions, nt.replication_factor) == ("anything", 3, -1)


def test_groups_first_match_wins_and_inherit_counts():
    cfg = {
        **BASE,
        "topic.creation.groups": "compacted, big",
        "topic.creation.compacted.include": r"orders\..*, audit",
        "topic.creation.compacted.partitions": "2",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.big.include": ".*",
        "topic.creation.big.exclude": "tmp-.*",
        "topic.creation.big.replication.factor": "1",
        "topic.creation.default.compression.type": "lz4",
    }
    tc = TopicCreationConfig.from_connector_config(cfg)
    assert tc is not None
    assert [g.name for g in tc.groups] == ["compacted", "big"]
    compacted = tc.group_for("orders.eu")
    assert compacted.name == "compacted"
    assert (compacted.partitions, compacted.replication_factor) == (2, -1)  # rf inherited
    # Only partitions/replication.factor are inherited (Kafka): not the default's topic configs.
    assert dict(compacted.configs) == {"cleanup.policy": "compact"}
    assert tc.group_for("audit").name == "compacted"
    big = tc.group_for("payments")
    assert (big.name, big.partitions, big.replication_factor) == ("big", 3, 1)
    assert dict(big.configs) == {}
    default = tc.group_for("tmp-1")  # excluded from big, falls back to default
    assert default.name == "default"
    assert dict(default.configs) == {"compression.type": "lz4"}


def test_full_match_not_search():
    tc = parse(
        topic__creation__groups="g",
        topic__creation__g__include="orders",
    )
    assert tc.group_for("orders").name == "g"
    assert tc.group_for("orders-2").name == "default"
    assert tc.group_for("my-orders").name == "default"


def test_exclude_wins_over_include():
    tc = parse(
        topic__creation__groups="g",
        topic__creation__g__include="a.*",
        topic__creation__g__exclude="ab.*, .*z",
    )
    assert tc.group_for("ax").name == "g"
    assert tc.group_for("abc").name == "default"
    assert tc.group_for("axz").name == "default"


def test_default_group_include_exclude_do_not_keep_topics_out():
    # As in Kafka: default is the fallback for every topic, its regexes are ignored.
    tc = parse(topic__creation__default__include="x", topic__creation__default__exclude=".*")
    assert tc.group_for("y").name == "default"


def test_group_named_default_in_list_is_ignored_and_duplicates_rejected():
    tc = parse(topic__creation__groups="default")
    assert tc.groups == ()
    errors = validate_topic_creation(
        {**BASE, "topic.creation.groups": "a,a", "topic.creation.a.include": "x"}
    )
    assert "Duplicate alias provided." in errors["topic.creation.groups"][0]


@pytest.mark.parametrize("value", ["0", "-2", "-100"])
def test_invalid_partitions(value: str):
    errors = validate_topic_creation({**BASE, "topic.creation.default.partitions": value})
    assert errors == {
        "topic.creation.default.partitions": [
            f"Invalid value {value} for configuration topic.creation.default.partitions: "
            "Number of partitions must be positive, or -1 to use the broker's default"
        ]
    }
    with pytest.raises(ConfigError) as ei:
        TopicCreationConfig.from_connector_config(
            {**BASE, "topic.creation.default.partitions": value}
        )
    assert ei.value.name == "topic.creation.default.partitions"


def test_invalid_replication_factor_and_types():
    errors = validate_topic_creation(
        {
            "topic.creation.default.replication.factor": "0",
            "topic.creation.default.partitions": "three",
            "topic.creation.groups": "g",
            "topic.creation.g.include": "x",
            "topic.creation.g.replication.factor": "40000",  # not a short
        }
    )
    assert set(errors) == {
        "topic.creation.default.replication.factor",
        "topic.creation.default.partitions",
        "topic.creation.g.replication.factor",
    }
    assert (
        "Replication factor must be positive"
        in errors["topic.creation.default.replication.factor"][0]
    )
    assert errors["topic.creation.default.partitions"] == [
        "Invalid value three for configuration topic.creation.default.partitions: Not an int"
    ]
    assert "Not a short" in errors["topic.creation.g.replication.factor"][0]


def test_group_without_include_and_invalid_regex():
    errors = validate_topic_creation(
        {
            **BASE,
            "topic.creation.groups": "noinc,badre",
            "topic.creation.noinc.partitions": "2",
            "topic.creation.badre.include": "ok.*,(unclosed",
            "topic.creation.badre.exclude": "[z",
        }
    )
    assert set(errors) == {
        "topic.creation.noinc.include",
        "topic.creation.badre.include",
        "topic.creation.badre.exclude",
    }
    assert errors["topic.creation.noinc.include"][0].startswith(
        'Missing required configuration "topic.creation.noinc.include"'
    )
    assert "Syntax error in regular expression" in errors["topic.creation.badre.include"][0]


def test_any_topic_creation_key_requires_both_defaults():
    errors = validate_topic_creation({"topic.creation.default.partitions": "3"})
    assert errors == {
        "topic.creation.default.replication.factor": [
            'Missing required configuration "topic.creation.default.replication.factor" '
            "which has no default value."
        ]
    }
    assert set(validate_topic_creation({"topic.creation.groups": "g"})) >= {
        "topic.creation.default.replication.factor",
        "topic.creation.default.partitions",
        "topic.creation.g.include",
    }


# -- TopicCreator against a fake admin client ------------------------------------------------
class _Future:
    def __init__(self, error: KafkaError | None) -> None:
        self.error = error

    def result(self, timeout: float | None = None) -> None:
        if self.error is not None:
            raise KafkaException(self.error)


class _Metadata:
    def __init__(self, topics: set[str]) -> None:
        self.topics = {t: object() for t in topics}


class FakeAdmin:
    def __init__(self, existing: set[str], create_error: int | None = None) -> None:
        self.existing = existing
        self.create_error = create_error
        self.list_calls = 0
        self.created: list[Any] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Metadata:
        assert topic is None, "a metadata request naming the topic may auto-create it"
        self.list_calls += 1
        return _Metadata(self.existing)

    def create_topics(self, topics: list[Any], **kwargs: Any) -> dict[str, _Future]:
        self.created.extend(topics)
        err = KafkaError(self.create_error) if self.create_error is not None else None
        if err is None:
            self.existing.update(t.topic for t in topics)
        return {t.topic: _Future(err) for t in topics}


def _creator(admin: FakeAdmin) -> TopicCreator:
    tc = parse(
        topic__creation__groups="c",
        topic__creation__c__include="c-.*",
        topic__creation__c__partitions="2",
        topic__creation__c__cleanup__policy="compact",
    )
    return TopicCreator({"bootstrap.servers": "unused"}, tc, admin_factory=lambda cfg: admin)  # type: ignore[arg-type,return-value]


def test_creator_creates_missing_topic_once_with_group_settings():
    admin = FakeAdmin({"exists"})
    creator = _creator(admin)
    creator.ensure("c-1")
    creator.ensure("c-1")
    creator.ensure("other")
    creator.ensure("exists")
    creator.ensure("exists")
    assert admin.list_calls == 3
    made = {t.topic: t for t in admin.created}
    assert set(made) == {"c-1", "other"}
    assert (made["c-1"].num_partitions, made["c-1"].config) == (2, {"cleanup.policy": "compact"})
    assert (made["other"].num_partitions, made["other"].replication_factor) == (3, -1)


def test_creator_already_exists_is_fine_other_errors_fail():
    creator = _creator(FakeAdmin(set(), KafkaError.TOPIC_ALREADY_EXISTS))
    creator.ensure("raced")
    creator = _creator(FakeAdmin(set(), KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(ConnectError, match="Task failed to create new topic 'denied'"):
        creator.ensure("denied")
