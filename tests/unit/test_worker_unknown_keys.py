"""Unknown and misspelt worker keys are named at start-up, free-form keys are not."""

from __future__ import annotations

import logging

import pytest

from connectrt.process.unknown_keys import unknown_worker_keys, warn_unknown_keys

KAFKA_CONNECT_WORKER_PROPERTIES = {
    # Kafka's own config/connect-distributed.properties, plus keys a real cluster adds.
    "bootstrap.servers": "localhost:9092",
    "group.id": "connect-cluster",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "true",
    "value.converter.schemas.enable": "true",
    "offset.storage.topic": "connect-offsets",
    "offset.storage.replication.factor": "1",
    "config.storage.topic": "connect-configs",
    "config.storage.replication.factor": "1",
    "status.storage.topic": "connect-status",
    "status.storage.replication.factor": "1",
    "offset.flush.interval.ms": "10000",
    "listeners": "HTTP://:8083",
    "plugin.path": "/usr/share/java",
    "scheduled.rebalance.max.delay.ms": "0",
    "producer.linger.ms": "5",
    "consumer.max.poll.records": "500",
    "admin.request.timeout.ms": "1000",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "ssl.truststore.location": "x",
    "config.providers": "file",
    "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "rest.extension.classes": "",
    "listeners.https.ssl.keystore.location": "x",
    "spark.master": "local[2]",
    "task.executor.spark.slots": "2",
}


def test_kafka_connects_own_worker_properties_name_no_key():
    assert unknown_worker_keys(KAFKA_CONNECT_WORKER_PROPERTIES) == []


def test_a_misspelt_key_is_named_with_the_key_it_is_close_to():
    props = {
        **KAFKA_CONNECT_WORKER_PROPERTIES,
        "offset.flush.intervall.ms": "1000",
        "frobnicate.level": "3",
    }
    found = {u.key: u.suggestion for u in unknown_worker_keys(props)}
    assert found == {
        "offset.flush.intervall.ms": "offset.flush.interval.ms",
        "frobnicate.level": None,
    }


def test_one_warning_per_unknown_key_in_kafka_connects_wording(caplog: pytest.LogCaptureFixture):
    props = {"bootstrap.servers": "x", "offset.flush.intervall.ms": "1", "frobnicate.level": "3"}
    with caplog.at_level(logging.INFO, logger="connectrt.process.unknown_keys"):
        warn_unknown_keys({**props, "session.timeout.ms": "10000"})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "The configuration 'frobnicate.level' was supplied but isn't a known config.",
        "The configuration 'offset.flush.intervall.ms' was supplied but isn't a known config."
        " Did you mean offset.flush.interval.ms?",
    ]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [
        "Kafka Connect worker settings with no effect in connectrt: session.timeout.ms"
    ]
