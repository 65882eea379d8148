"""KIP-158 topic creation by source tasks, through the real worker and broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.plugins.registry import registry
from connectrt.testing.harness import WorkerHarness, produce, read_topic

pytestmark = pytest.mark.integration

LINES = 50


def _partitions(bootstrap: str, topic: str) -> int | None:
    """Partition count of ``topic``, None if it does not exist (never auto-creates it)."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    t = md.topics.get(topic)
    return None if t is None else len(t.partitions)


def _topic_config(bootstrap: str, topic: str, key: str) -> str | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
    entries = next(iter(futures.values())).result(10)
    entry = entries.get(key)
    return None if entry is None else entry.value


def _run_source(
    broker: EmbeddedBroker,
    tmp_path: Path,
    topic: str,
    extra: dict[str, str],
    worker_props: dict[str, str] | None = None,
) -> None:
    """Run a FileStreamSource writing LINES lines to ``topic`` until all are in Kafka."""
    src = tmp_path / f"{topic}.txt"
    src.write_text("".join(f"line-{i}\n" for i in range(LINES)))
    assert _partitions(broker.bootstrap_servers, topic) is None
    with WorkerHarness(broker.bootstrap_servers, worker_props) as h:
        h.start_connector(
            "src",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": topic, **extra},
        )
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics("src").values()) >= LINES,
            timeout=60,
            what="all lines committed",
        )
    records = read_topic(broker.bootstrap_servers, topic)
    assert sum(len(v) for v in records.values()) == LINES


DEFAULT_KEYS = {
    "topic.creation.default.replication.factor": "-1",
    "topic.creation.default.partitions": "3",
}


def test_default_group_creates_topic_before_first_record(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic = unique_name("tc-default")
    _run_source(broker, tmp_path, topic, DEFAULT_KEYS)
    # Created by the task with the group's settings (auto-create would give the broker default).
    assert _partitions(broker.bootstrap_servers, topic) == 3


def test_second_group_partitions_and_topic_config(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic = unique_name("compact")
    extra = {
        **DEFAULT_KEYS,
        "topic.creation.groups": "compacted",
        "topic.creation.compacted.include": "compact-.*",
        "topic.creation.compacted.partitions": "2",
        "topic.creation.compacted.cleanup.policy": "compact",
        # A compacted topic accepts keyed records only, and the file source's have no key
        # (a compacted group without these transforms is refused at validation).
        "transforms": "hoist,key",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
        "transforms.key.fields": "line",
    }
    _run_source(broker, tmp_path, topic, extra)
    assert _partitions(broker.bootstrap_servers, topic) == 2
    assert _topic_config(broker.bootstrap_servers, topic, "cleanup.policy") == "compact"


def test_exclude_wins_over_include(broker: EmbeddedBroker, tmp_path: Path, unique_name):
    topic = unique_name("ex") + "-skip"
    extra = {
        **DEFAULT_KEYS,
        "topic.creation.groups": "g",
        "topic.creation.g.include": "ex-.*",
        "topic.creation.g.exclude": ".*-skip",
        "topic.creation.g.partitions": "2",
    }
    _run_source(broker, tmp_path, topic, extra)
    assert _partitions(broker.bootstrap_servers, topic) == 3  # default group, not g


def test_no_creation_without_keys_or_when_disabled(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    bootstrap = broker.bootstrap_servers
    # What the broker's own auto-creation gives, for comparison.
    reference = unique_name("auto-ref")
    produce(bootstrap, reference, [b"x"])
    auto_partitions = _partitions(bootstrap, reference)
    assert auto_partitions is not None and auto_partitions != 5

    plain = unique_name("plain")
    _run_source(broker, tmp_path, plain, {})
    assert _partitions(bootstrap, plain) == auto_partitions

    disabled = unique_name("disabled")
    keys = {
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.default.partitions": "5",
    }
    _run_source(broker, tmp_path, disabled, keys, {"topic.creation.enable": "false"})
    assert _partitions(bootstrap, disabled) == auto_partitions


def test_invalid_settings_rejected_per_field(broker: EmbeddedBroker, tmp_path: Path):
    config = {
        "name": "bad-tc",
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "t",
        "topic.creation.default.replication.factor": "0",
        "topic.creation.default.partitions": "0",
        "topic.creation.groups": "noinc,badre",
        "topic.creation.noinc.partitions": "2",
        "topic.creation.badre.include": "(unclosed",
        "topic.creation.badre.partitions": "-5",
    }
    result = validate_connector_config(config, registry, OverridePolicy("All"))
    errors = {k: v.errors for k, v in result.values.items() if v.errors}
    assert set(errors) == {
        "topic.creation.default.replication.factor",
        "topic.creation.default.partitions",
        "topic.creation.noinc.include",
        "topic.creation.badre.include",
        "topic.creation.badre.partitions",
    }
    assert errors["topic.creation.default.partitions"] == [
        "Invalid value 0 for configuration topic.creation.default.partitions: Number of "
        "partitions must be positive, or -1 to use the broker's default"
    ]
    assert "Topic Creation" in result.groups
    # A type error is reported once (ConfigDef and topic-creation checks give the same text).
    bad_type = validate_connector_config(
        {**config, "topic.creation.default.partitions": "x"}, registry, OverridePolicy("All")
    )
    assert len(bad_type.values["topic.creation.default.partitions"].errors) == 1

    ok = validate_connector_config(
        {
            "name": "ok-tc",
            "connector.class": "FileStreamSource",
            "file": str(tmp_path / "in.txt"),
            "topic": "t",
            **DEFAULT_KEYS,
        },
        registry,
        OverridePolicy("All"),
    )
    assert ok.error_count == 0

    with WorkerHarness(broker.bootstrap_servers) as h, pytest.raises(ConfigError):
        h.start_connector("bad-tc", config)
