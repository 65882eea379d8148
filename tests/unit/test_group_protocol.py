"""KIP-848 ``group.protocol=consumer`` for sink consumers: which rebalance calls apply, which
classic group settings are left out or refused (librdkafka refuses a consumer with them)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from connectrt.errors import ConfigError
from connectrt.runtime.clients.group_protocol import (
    CLASSIC_ONLY_KEYS,
    assigns_incrementally,
    override_errors,
)
from connectrt.runtime.clients.settings import OverridePolicy, consumer_config
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.plugins.registry import PluginRegistry

ALL = OverridePolicy("All")
WORKER = {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "500"}


def _sink(**overrides: str) -> dict[str, str]:
    return {
        "name": "s",
        "connector.class": "FileStreamSink",
        "topics": "t",
        "file": "out.txt",
        **{f"consumer.override.{k}": v for k, v in overrides.items()},
    }


def _consumer(worker: dict[str, str], connector: dict[str, str]) -> dict[str, object]:
    return consumer_config("127.0.0.1:9", worker, connector, ALL, "client", "connect-s")


@pytest.mark.parametrize(
    ("config", "incremental"),
    [
        ({}, False),
        ({"group.protocol": "classic"}, False),
        ({"partition.assignment.strategy": "range"}, False),
        ({"partition.assignment.strategy": "cooperative-sticky"}, True),
        ({"partition.assignment.strategy": "range,cooperative-sticky"}, False),
        ({"group.protocol": "consumer"}, True),
        ({"group.protocol": " CONSUMER "}, True),
    ],
)
def test_which_configs_assign_incrementally(config: dict[str, str], incremental: bool) -> None:
    assert assigns_incrementally(config) is incremental


def test_the_worker_classic_settings_are_left_out_for_a_consumer_protocol_sink() -> None:
    cfg = _consumer(WORKER, _sink(**{"group.protocol": "consumer"}))
    assert cfg["group.protocol"] == "consumer"
    assert not set(CLASSIC_ONLY_KEYS) & set(cfg)
    # librdkafka accepts the result (it refuses session.timeout.ms with the consumer protocol).
    Consumer({k: v for k, v in cfg.items() if k != "logger"}).close()


def test_the_worker_classic_settings_stay_for_a_classic_sink() -> None:
    cfg = _consumer(WORKER, _sink())
    assert cfg["session.timeout.ms"] == "6000"
    assert cfg["heartbeat.interval.ms"] == "500"


def test_a_worker_wide_consumer_protocol_leaves_them_out_too() -> None:
    cfg = _consumer({**WORKER, "consumer.group.protocol": "consumer"}, _sink())
    assert "session.timeout.ms" not in cfg


def test_a_connector_classic_setting_beside_the_consumer_protocol_is_refused() -> None:
    worker = {"consumer.group.protocol": "consumer"}
    with pytest.raises(ConfigError, match=r"consumer\.override\.session\.timeout\.ms cannot be"):
        _consumer(worker, _sink(**{"session.timeout.ms": "6000"}))


def test_validation_names_the_conflicting_override() -> None:
    config = _sink(
        **{"group.protocol": "consumer", "partition.assignment.strategy": "cooperative-sticky"}
    )
    result = validate_connector_config(config, PluginRegistry(), ALL)
    errors = result.values["consumer.override.partition.assignment.strategy"].errors
    assert errors and "group.remote.assignor" in errors[0]
    assert not result.values["consumer.override.group.protocol"].errors


def test_validation_refuses_an_unknown_protocol() -> None:
    result = validate_connector_config(_sink(**{"group.protocol": "share"}), PluginRegistry(), ALL)
    assert result.values["consumer.override.group.protocol"].errors == [
        "Invalid value share for configuration group.protocol: String must be one of: "
        "classic, consumer"
    ]


def test_classic_settings_with_the_classic_protocol_are_fine() -> None:
    assert (
        override_errors(_sink(**{"group.protocol": "classic", "session.timeout.ms": "6000"})) == {}
    )
    assert override_errors(_sink(**{"session.timeout.ms": "6000"})) == {}
