"""The worker configuration: defaults, prefixed client/converter settings, worker_id."""

from __future__ import annotations

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.config.worker import JSON_CONVERTER, WORKER_CONFIG_DEF, WorkerConfig
from connectrt.runtime.config.worker_def import SIMPLE_HEADER_CONVERTER


def test_defaults() -> None:
    wc = WorkerConfig.from_props({})
    assert wc["offset.flush.interval.ms"] == 60000
    assert wc["offset.flush.timeout.ms"] == 5000
    assert wc["offset.storage.topic"] == "connect-offsets"
    assert wc["offset.storage.partitions"] == 25
    assert wc["task.shutdown.graceful.timeout.ms"] == 5000
    assert wc["connector.client.config.override.policy"] == "All"
    assert wc["topic.creation.enable"] is True
    assert wc["header.converter"] == SIMPLE_HEADER_CONVERTER
    assert wc["listeners"] == ["http://:8083"]
    assert wc["plugin.path"] == []
    assert wc.bootstrap_servers == "localhost:9092"


def test_values_are_typed() -> None:
    wc = WorkerConfig.from_props(
        {
            "offset.flush.interval.ms": "10000",
            "topic.creation.enable": "FALSE",
            "plugin.path": "/a, /b",
            "offset.storage.partitions": "3",
        }
    )
    assert wc["offset.flush.interval.ms"] == 10000
    assert wc["topic.creation.enable"] is False
    assert wc["plugin.path"] == ["/a", "/b"]
    assert wc["offset.storage.partitions"] == 3


def test_get_with_default_and_unknown_keys_pass_through() -> None:
    wc = WorkerConfig.from_props({"group.id": "connect-cluster"})
    assert wc.get("group.id") == "connect-cluster"
    assert wc.get("no.such.key") is None
    assert wc.get("no.such.key", "d") == "d"
    assert wc.originals == {"group.id": "connect-cluster"}


def test_bootstrap_servers_list_is_joined() -> None:
    wc = WorkerConfig.from_props({"bootstrap.servers": "a:9092, b:9092"})
    assert wc["bootstrap.servers"] == ["a:9092", "b:9092"]
    assert wc.bootstrap_servers == "a:9092,b:9092"


@pytest.mark.parametrize("kind", ["key", "value"])
def test_converters_default_to_json_when_unset(kind: str) -> None:
    wc = WorkerConfig.from_props({})
    assert wc[f"{kind}.converter"] is None
    assert wc.converter_class(kind) == JSON_CONVERTER
    assert JSON_CONVERTER == "org.apache.kafka.connect.json.JsonConverter"


def test_configured_converters_are_used() -> None:
    wc = WorkerConfig.from_props(
        {
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": " ByteArrayConverter ",
        }
    )
    assert wc.converter_class("key") == "org.apache.kafka.connect.storage.StringConverter"
    assert wc.converter_class("value") == "ByteArrayConverter"
    assert wc.converter_class("header") == SIMPLE_HEADER_CONVERTER


def test_converter_config_strips_prefix() -> None:
    wc = WorkerConfig.from_props(
        {
            "key.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "true",
            "value.converter.schemas.cache.size": "10",
            "header.converter.x": "y",
        }
    )
    assert wc.converter_config("key") == {"schemas.enable": "false"}
    assert wc.converter_config("value") == {
        "schemas.enable": "true",
        "schemas.cache.size": "10",
    }
    assert wc.converter_config("header") == {"x": "y"}


def test_client_config_strips_prefix() -> None:
    wc = WorkerConfig.from_props(
        {
            "producer.acks": "1",
            "producer.linger.ms": "20",
            "consumer.max.poll.records": "100",
            "admin.retries": "2",
            "bootstrap.servers": "b:1",
        }
    )
    assert wc.client_config("producer") == {"acks": "1", "linger.ms": "20"}
    assert wc.client_config("consumer") == {"max.poll.records": "100"}
    assert wc.client_config("admin") == {"retries": "2"}


def test_worker_id_default() -> None:
    assert WorkerConfig.from_props({}).worker_id.endswith(":8083")


def test_worker_id_port_from_listener() -> None:
    wc = WorkerConfig.from_props({"listeners": "http://:9000"})
    assert wc.worker_id.endswith(":9000")
    assert wc.worker_id.count(":") == 1


def test_worker_id_uses_first_listener() -> None:
    wc = WorkerConfig.from_props({"listeners": "http://:9001,https://:9443"})
    assert wc.worker_id.endswith(":9001")


def test_worker_id_host_from_listener() -> None:
    # Kafka advertises the listener's host when rest.advertised.host.name is not set.
    wc = WorkerConfig.from_props({"listeners": "http://worker1.example.com:9000"})
    assert wc.worker_id == "worker1.example.com:9000"


def test_worker_id_from_advertised_host_and_port() -> None:
    wc = WorkerConfig.from_props(
        {
            "listeners": "http://:9000",
            "rest.advertised.host.name": "192.168.1.5",
            "rest.advertised.port": "8083",
        }
    )
    assert wc.worker_id == "192.168.1.5:8083"


def test_worker_id_advertised_host_with_listener_port() -> None:
    wc = WorkerConfig.from_props(
        {"listeners": "http://0.0.0.0:9100", "rest.advertised.host.name": "w2"}
    )
    assert wc.worker_id == "w2:9100"


def test_worker_id_advertised_port_only() -> None:
    wc = WorkerConfig.from_props({"rest.advertised.port": "7000"})
    assert wc.worker_id.endswith(":7000")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("connector.client.config.override.policy", "Some"),
        ("offset.flush.interval.ms", "-1"),
        ("offset.storage.type", "redis"),
        ("offset.storage.partitions", "0"),
        ("rest.advertised.port", "http"),
        ("topic.creation.enable", "yes"),
    ],
)
def test_invalid_values_are_rejected(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as ei:
        WorkerConfig.from_props({key: value})
    assert key in str(ei.value)


def test_worker_config_is_immutable() -> None:
    wc = WorkerConfig.from_props({})
    with pytest.raises(AttributeError):
        wc.values = {}  # type: ignore[misc]


def test_definition_has_kafka_key_names() -> None:
    assert {
        "bootstrap.servers",
        "key.converter",
        "value.converter",
        "header.converter",
        "offset.storage.topic",
        "offset.flush.interval.ms",
        "offset.flush.timeout.ms",
        "task.shutdown.graceful.timeout.ms",
        "plugin.path",
        "listeners",
        "rest.advertised.host.name",
        "rest.advertised.port",
        "connector.client.config.override.policy",
        "topic.creation.enable",
    } <= set(WORKER_CONFIG_DEF.keys)
