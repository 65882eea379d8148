"""CONNECTRT_TEST_BROKER chooses the test broker (connectrt.testing.broker_choice)."""

from __future__ import annotations

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError
from connectrt.testing.broker_choice import ExternalBroker, broker_from_env
from connectrt.testing.kafka_broker import KafkaBroker


def test_embedded_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONNECTRT_TEST_BROKER", raising=False)
    assert isinstance(broker_from_env(), EmbeddedBroker)
    assert isinstance(broker_from_env(""), EmbeddedBroker)
    assert isinstance(broker_from_env("embedded"), EmbeddedBroker)


def test_kafka_and_host_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECTRT_TEST_BROKER", "kafka")
    assert isinstance(broker_from_env(), KafkaBroker)
    external = broker_from_env("kafka.example.com:9092")
    assert isinstance(external, ExternalBroker)
    assert (external.bootstrap_servers, external.port, external.pid) == (
        "kafka.example.com:9092",
        9092,
        None,
    )
    ipv6 = broker_from_env("[::1]:19092")
    assert isinstance(ipv6, ExternalBroker)
    assert (ipv6.host, ipv6.bootstrap_servers) == ("::1", "[::1]:19092")


@pytest.mark.parametrize("value", ["tansu", "localhost", "host:", ":9092", "host:70000", "h:x"])
def test_anything_else_is_refused_with_the_accepted_forms(value: str) -> None:
    with pytest.raises(ConnectError, match=r"expected 'embedded'.*'kafka'.*HOST:PORT"):
        broker_from_env(value)
