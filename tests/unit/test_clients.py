"""Producer/consumer/admin client settings: layering, runtime-owned keys, override policies."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import (
    CLIENT_LOGGER,
    CONSUMER_DEFAULTS,
    MAX_POLL_RECORDS_DEFAULT,
    PRODUCER_DEFAULTS,
    OverridePolicy,
    admin_config,
    consumer_config,
    max_block_ms,
    max_poll_records,
    producer_config,
    worker_clients,
)
from connectrt.runtime.config.worker import WorkerConfig

ALL = OverridePolicy("All")
NONE = OverridePolicy("None")
PRINCIPAL = OverridePolicy("Principal")
BOOT = "broker1:9092,broker2:9092"


def producer(
    worker: dict[str, str], conn: dict[str, str] | None, policy: OverridePolicy = ALL
) -> dict[str, Any]:
    return producer_config(BOOT, worker, conn, policy, "connector-producer-c-0")


def consumer(
    worker: dict[str, str], conn: dict[str, str] | None, policy: OverridePolicy = ALL
) -> dict[str, Any]:
    return consumer_config(BOOT, worker, conn, policy, "connector-consumer-c-0", "connect-c")


# --- producer -------------------------------------------------------------------------------


def test_producer_defaults() -> None:
    cfg = producer({}, None)
    for key, value in PRODUCER_DEFAULTS.items():
        assert cfg[key] == value
    assert cfg["acks"] == "all"
    assert cfg["bootstrap.servers"] == BOOT
    assert cfg["client.id"] == "connector-producer-c-0"


def test_librdkafka_logs_go_to_python_logging() -> None:
    # Not raw "%6|...|BGQUEUE|..." lines on stderr: the worker's format and levels apply.
    assert producer({}, None)["logger"] is CLIENT_LOGGER
    assert consumer_config(BOOT, {}, None, ALL, "c", "g")["logger"] is CLIENT_LOGGER
    assert admin_config(BOOT, {}, None, ALL, "a")["logger"] is CLIENT_LOGGER
    assert CLIENT_LOGGER.name == "connectrt.kafka.client"


def test_producer_compresses_nothing_unless_asked() -> None:
    # Kafka Connect's producer default (compression.type=none): a consumer without lz4 or
    # zstd support can still read every record. Throughput is a one-line worker setting.
    assert "compression.type" not in producer({}, None)
    assert "compression.codec" not in producer({}, None)  # librdkafka's default is none
    assert producer({"producer.compression.type": "lz4"}, None)["compression.type"] == "lz4"


def test_producer_layering_defaults_then_worker_then_connector() -> None:
    worker = {"producer.acks": "1", "producer.linger.ms": "50", "producer.batch.size": "1000"}
    conn = {"producer.override.linger.ms": "7", "producer.override.compression.type": "zstd"}
    cfg = producer(worker, conn)
    assert cfg["acks"] == "1"  # worker beats default
    assert cfg["linger.ms"] == "7"  # connector beats worker
    assert cfg["compression.type"] == "zstd"  # connector beats default
    assert cfg["batch.size"] == "1000"
    assert cfg["enable.idempotence"] is True  # untouched default


def test_producer_ignores_other_prefixes() -> None:
    worker = {"consumer.acks": "0", "admin.acks": "0", "acks": "0", "producer": "x"}
    conn = {
        "consumer.override.acks": "0",
        "admin.override.acks": "0",
        "producer.acks": "0",
        "acks": "0",
    }
    assert producer(worker, conn)["acks"] == "all"


def test_producer_without_connector_config_uses_worker_only() -> None:
    cfg = producer({"producer.linger.ms": "9"}, None, NONE)
    assert cfg["linger.ms"] == "9"


def test_client_id_can_be_overridden() -> None:
    cfg = producer({}, {"producer.override.client.id": "mine"})
    assert cfg["client.id"] == "mine"


# --- consumer -------------------------------------------------------------------------------


def test_consumer_defaults() -> None:
    cfg = consumer({}, None)
    for key, value in CONSUMER_DEFAULTS.items():
        assert cfg[key] == value
    assert cfg["enable.auto.commit"] is False
    assert cfg["auto.offset.reset"] == "earliest"
    assert cfg["group.id"] == "connect-c"
    assert cfg["client.id"] == "connector-consumer-c-0"
    assert cfg["bootstrap.servers"] == BOOT


def test_consumer_layering() -> None:
    worker = {"consumer.auto.offset.reset": "latest", "consumer.fetch.min.bytes": "10"}
    conn = {"consumer.override.fetch.min.bytes": "20", "consumer.override.session.timeout.ms": "1"}
    cfg = consumer(worker, conn)
    assert cfg["auto.offset.reset"] == "latest"
    assert cfg["fetch.min.bytes"] == "20"
    assert cfg["session.timeout.ms"] == "1"


def test_runtime_owned_consumer_keys_cannot_be_overridden() -> None:
    worker = {"consumer.group.id": "worker-group", "consumer.enable.auto.commit": "true"}
    conn = {
        "consumer.override.group.id": "conn-group",
        "consumer.override.enable.auto.commit": "true",
    }
    cfg = consumer(worker, conn)
    assert cfg["group.id"] == "connect-c"
    assert cfg["enable.auto.commit"] is False


# --- admin ----------------------------------------------------------------------------------


def test_admin_layering() -> None:
    worker = {"admin.request.timeout.ms": "100", "admin.retries": "3"}
    conn = {"admin.override.request.timeout.ms": "200"}
    cfg = admin_config(BOOT, worker, conn, ALL, "connector-adminclient-c-0")
    assert cfg == {
        "bootstrap.servers": BOOT,
        "request.timeout.ms": "200",
        "retries": "3",
        "client.id": "connector-adminclient-c-0",
        "logger": CLIENT_LOGGER,
    }


def test_admin_listeners_rest_setting_does_not_leak_into_admin_client() -> None:
    # `admin.listeners` is a REST server key of the worker (Kafka's RestServerConfig), not an
    # admin client setting; librdkafka rejects unknown properties like "listeners".
    worker = {"admin.listeners": "http://localhost:8084", "admin.retries": "3"}
    cfg = admin_config(BOOT, worker, None, ALL, "a")
    assert "listeners" not in cfg
    assert cfg["retries"] == "3"


# --- Java-only keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "key.serializer",
        "value.serializer",
        "delivery.timeout.ms",
        "buffer.memory",
        "interceptor.classes",
    ],
)
def test_java_only_producer_keys_are_dropped(key: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="connectrt.runtime.clients.settings"):
        cfg = producer({f"producer.{key}": "x"}, {f"producer.override.{key}": "y"})
    assert key not in cfg
    assert any(key in r.getMessage() for r in caplog.records)


def test_max_block_ms_is_not_given_to_librdkafka_but_bounds_exactly_once_commits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """librdkafka has no max.block.ms: it is dropped from the client config without a warning,
    since an exactly-once source task reads it (the longest a commit rides out an outage)."""
    with caplog.at_level(logging.WARNING, logger="connectrt.runtime.clients.settings"):
        cfg = producer({"producer.max.block.ms": "5000"}, {"producer.override.max.block.ms": "7"})
    assert "max.block.ms" not in cfg
    assert not any("max.block.ms" in r.getMessage() for r in caplog.records)
    assert max_block_ms({}, {}) == 60000  # Java's default
    assert max_block_ms({"producer.max.block.ms": "5000"}, {}) == 5000
    assert (
        max_block_ms({"producer.max.block.ms": "5000"}, {"producer.override.max.block.ms": "7"})
        == 7
    )
    with pytest.raises(ConfigError, match=r"max\.block\.ms"):
        max_block_ms({}, {"producer.override.max.block.ms": "soon"})


@pytest.mark.parametrize(
    "key",
    ["key.deserializer", "value.deserializer", "max.poll.records", "default.api.timeout.ms"],
)
def test_java_only_consumer_keys_are_dropped(key: str) -> None:
    cfg = consumer({f"consumer.{key}": "10"}, {f"consumer.override.{key}": "20"})
    assert key not in cfg
    assert cfg["group.id"] == "connect-c"


def test_java_only_admin_keys_are_dropped() -> None:
    cfg = admin_config(BOOT, {"admin.default.api.timeout.ms": "1"}, None, ALL, "a")
    assert "default.api.timeout.ms" not in cfg


# --- override policies ---------------------------------------------------------------------


def test_unknown_policy_name() -> None:
    with pytest.raises(
        ConfigError, match=r"Unknown connector\.client\.config\.override\.policy"
    ) as e:
        OverridePolicy("Some")
    assert e.value.name == "connector.client.config.override.policy"


def test_all_policy_allows_everything() -> None:
    conn = {
        "producer.override.acks": "1",
        "consumer.override.fetch.min.bytes": "1",
        "admin.override.retries": "1",
    }
    assert ALL.violations(conn) == {}


def test_none_policy_message_is_kafkas() -> None:
    assert NONE.violations({"producer.override.acks": "1", "name": "c"}) == {
        "producer.override.acks": "The 'None' policy does not allow 'acks' to be overridden "
        "in the connector configuration."
    }


def test_none_policy_rejects_every_client_prefix() -> None:
    conn = {
        "producer.override.acks": "1",
        "consumer.override.fetch.min.bytes": "1",
        "admin.override.retries": "1",
        "producer.acks": "not an override",
    }
    v = NONE.violations(conn)
    assert set(v) == {
        "producer.override.acks",
        "consumer.override.fetch.min.bytes",
        "admin.override.retries",
    }
    assert v["admin.override.retries"] == (
        "The 'None' policy does not allow 'retries' to be overridden in the connector "
        "configuration."
    )


def test_principal_policy_allows_only_security_keys() -> None:
    conn = {
        "producer.override.sasl.jaas.config": "x",
        "consumer.override.sasl.mechanism": "PLAIN",
        "admin.override.security.protocol": "SASL_SSL",
        "producer.override.acks": "1",
    }
    assert PRINCIPAL.violations(conn) == {
        "producer.override.acks": "The 'Principal' policy does not allow 'acks' to be "
        "overridden in the connector configuration."
    }


def test_none_policy_rejects_override_when_building_clients() -> None:
    conn = {"producer.override.acks": "1"}
    with pytest.raises(ConfigError) as ei:
        producer({}, conn, NONE)
    assert str(ei.value) == (
        "The 'None' policy does not allow 'acks' to be overridden in the connector configuration."
    )
    assert ei.value.name == "producer.override.acks"
    with pytest.raises(ConfigError):
        consumer({}, conn, NONE)  # any violation fails every client of the connector
    with pytest.raises(ConfigError):
        admin_config(BOOT, {}, conn, NONE, "a")


def test_principal_policy_applies_allowed_overrides() -> None:
    conn = {"consumer.override.security.protocol": "SASL_SSL"}
    assert consumer({}, conn, PRINCIPAL)["security.protocol"] == "SASL_SSL"


def test_none_policy_still_applies_worker_settings() -> None:
    assert consumer({"consumer.fetch.min.bytes": "5"}, {"name": "c"}, NONE)["fetch.min.bytes"] == (
        "5"
    )


# --- the Allowlist policy (KIP-1188) --------------------------------------------------------


def test_allowlist_policy_allows_exactly_the_listed_client_keys() -> None:
    policy = OverridePolicy("Allowlist", ["linger.ms", "fetch.min.bytes"])
    conn = {
        "producer.override.linger.ms": "20",
        "consumer.override.fetch.min.bytes": "10",
        "admin.override.linger.ms": "1",  # the list names client keys, whatever the client
        "producer.override.acks": "1",
        "consumer.override.sasl.mechanism": "PLAIN",
    }
    assert policy.violations(conn) == {
        "producer.override.acks": "The 'Allowlist' policy does not allow 'acks' to be "
        "overridden in the connector configuration.",
        "consumer.override.sasl.mechanism": "The 'Allowlist' policy does not allow "
        "'sasl.mechanism' to be overridden in the connector configuration.",
    }
    assert producer({}, {"producer.override.linger.ms": "20"}, policy)["linger.ms"] == "20"


def test_allowlist_policy_with_an_empty_list_allows_nothing() -> None:
    policy = OverridePolicy("Allowlist")
    assert list(policy.violations({"producer.override.linger.ms": "20"})) == [
        "producer.override.linger.ms"
    ]
    assert policy.violations({"linger.ms": "20", "name": "c"}) == {}


@pytest.mark.parametrize(
    "name",
    [
        "Allowlist",
        "AllowlistConnectorClientConfigOverridePolicy",
        "org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy",
    ],
)
def test_policy_accepts_kafkas_alias_and_class_names(name: str) -> None:
    assert OverridePolicy(name, ["acks"]).name == "Allowlist"


def test_policy_from_worker_config_reads_the_allowlist(caplog: pytest.LogCaptureFixture) -> None:
    wc = WorkerConfig.from_props(
        {
            "connector.client.config.override.policy": "Allowlist",
            "connector.client.config.override.allowlist": "linger.ms, acks",
        }
    )
    policy = OverridePolicy.from_worker_config(wc)
    assert (policy.name, policy.allowlist) == ("Allowlist", frozenset({"linger.ms", "acks"}))
    with caplog.at_level(logging.WARNING):
        OverridePolicy.from_worker_config(
            WorkerConfig.from_props({"connector.client.config.override.policy": "Principal"})
        )
    assert "Principal is deprecated" in caplog.text


def test_worker_config_refuses_a_bad_policy_or_a_duplicated_allowlist() -> None:
    unknown = r"Unknown connector\.client\.config\.override\.policy Foo"
    with pytest.raises(ConfigError, match=unknown):
        WorkerConfig.from_props({"connector.client.config.override.policy": "Foo"})
    with pytest.raises(ConfigError, match="Duplicate values are not allowed") as ei:
        WorkerConfig.from_props({"connector.client.config.override.allowlist": "acks,acks"})
    assert ei.value.name == "connector.client.config.override.allowlist"
    default = WorkerConfig.from_props({})
    assert OverridePolicy.from_worker_config(default).name == "All"  # Kafka 4.x's default


# --- max.poll.records ---------------------------------------------------------------------------


def test_max_poll_records_default() -> None:
    assert max_poll_records({}, {}) == MAX_POLL_RECORDS_DEFAULT == 500


def test_max_poll_records_from_worker() -> None:
    assert max_poll_records({"consumer.max.poll.records": "100"}, {}) == 100


def test_max_poll_records_connector_override_wins() -> None:
    worker = {"consumer.max.poll.records": "100"}
    assert max_poll_records(worker, {"consumer.override.max.poll.records": "7"}) == 7


def test_max_poll_records_invalid() -> None:
    with pytest.raises(ConfigError, match=r"max\.poll\.records") as ei:
        max_poll_records({}, {"consumer.override.max.poll.records": "many"})
    assert "many" in str(ei.value)


def test_worker_clients_name_the_role_and_take_worker_security() -> None:
    worker = {
        "producer.linger.ms": "20",
        "consumer.fetch.min.bytes": "7",
        "security.protocol": "SASL_SSL",
    }
    clients = worker_clients(BOOT, worker, "status", "connect-status-reader")
    assert clients.producer["client.id"] == "connect-status-producer"
    assert clients.producer["linger.ms"] == "20"
    assert clients.consumer["client.id"] == "connect-status-consumer"
    assert clients.consumer["group.id"] == "connect-status-reader"
    assert clients.consumer["fetch.min.bytes"] == "7"
    assert clients.admin["client.id"] == "connect-status-admin"
    for cfg in clients:
        assert cfg["bootstrap.servers"] == BOOT
        assert cfg["security.protocol"] == "SASL_SSL"
