"""The sink connector keys of share-group consumption (``consumer.group.type``, issue 37), as
``PUT .../config/validate`` reports them: per field, and only where a share group is asked for;
and the group configs the runtime sets on the share group."""

from __future__ import annotations

from pathlib import Path

from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.share_group import group_settings, uses_share_group
from connectrt.runtime.plugins.registry import PluginRegistry

ALL = OverridePolicy("All")


def _sink(**extra: str) -> dict[str, str | None]:
    return {
        "name": "s",
        "connector.class": "FileStreamSink",
        "tasks.max": "8",
        "file": "out.txt",
        "topics": "t",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


def _errors(config: dict[str, str | None]) -> dict[str, list[str]]:
    result = validate_connector_config(config, PluginRegistry(), ALL)
    return {k: v.errors for k, v in result.values.items() if v.errors}


def test_classic_is_the_default_and_share_validates_clean() -> None:
    assert _errors(_sink()) == {}
    assert not uses_share_group(_sink())
    config = _sink(consumer_group_type="share", share_record_lock_duration_ms="5000")
    assert _errors(config) == {}
    assert uses_share_group(config)


def test_an_unknown_group_type_is_an_error_on_that_field() -> None:
    errors = _errors(_sink(consumer_group_type="queue"))
    assert list(errors) == ["consumer.group.type"]
    assert "classic" in errors["consumer.group.type"][0]


def test_share_refuses_a_topic_pattern_and_an_unknown_offset_reset() -> None:
    config = _sink(consumer_group_type="share")
    del config["topics"]
    config["topics.regex"] = "t.*"
    config["consumer.override.auto.offset.reset"] = "none"
    errors = _errors(config)
    assert "share consumers subscribe to named topics only" in errors["topics.regex"][0]
    assert "share.auto.offset.reset" in errors["consumer.override.auto.offset.reset"][0]


def test_the_lock_duration_and_delivery_limit_are_range_checked() -> None:
    errors = _errors(
        _sink(
            consumer_group_type="share",
            share_record_lock_duration_ms="10",
            share_delivery_count_limit="50",
        )
    )
    assert set(errors) == {"share.record.lock.duration.ms", "share.delivery.count.limit"}


def test_group_settings_start_from_earliest_unless_the_connector_says_otherwise() -> None:
    assert group_settings(_sink(consumer_group_type="share")) == {
        "share.auto.offset.reset": "earliest"
    }
    config = _sink(consumer_group_type="share", share_delivery_count_limit="3")
    config["consumer.override.auto.offset.reset"] = "latest"
    assert group_settings(config) == {
        "share.auto.offset.reset": "latest",
        "share.delivery.count.limit": "3",
    }


def test_the_jdbc_sinks_exactly_once_mode_is_an_error_on_its_field(tmp_path: Path) -> None:
    """The JDBC sink's exactly once stores offsets in the database and seeks the consumer:
    through the runtime's validation (what create and ``config/validate`` run), a share group
    makes it an error on ``exactly.once.enabled``, which the REST API answers with a 400."""
    config: dict[str, str | None] = {
        "name": "j",
        "connector.class": "JdbcSinkConnector",
        "topics": "t",
        "connection.url": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "exactly.once.enabled": "true",
        "consumer.group.type": "share",
    }
    errors = _errors(config)
    assert list(errors) == ["exactly.once.enabled"]
    assert "a share group owns no partitions" in errors["exactly.once.enabled"][0]
    assert _errors({**config, "consumer.group.type": "classic"}) == {}
