"""CONNECTRT_TEST_BROKER chooses the test broker (connectrt.testing.broker_choice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError
from connectrt.testing import broker_choice
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


def _fake_java(folder: Path, major: int) -> None:
    """A ``java`` on ``folder`` that reports ``major`` to ``java -version``."""
    script = folder / "java"
    script.write_text(f"#!/bin/sh\necho 'openjdk version \"{major}.0.1\" 2025-01-01' >&2\n")
    script.chmod(0o755)


@pytest.mark.parametrize(
    ("java", "cached", "mvn", "expected"),
    [
        (None, True, True, "embedded"),  # no Java at all
        (11, True, True, "embedded"),  # too old for Kafka 4
        (17, True, False, "kafka"),  # jars cached: no Maven needed
        (17, False, True, "kafka"),  # Maven fetches them
        (21, False, False, "embedded"),  # nothing to fetch them with
    ],
)
def test_make_test_picks_kafka_where_it_can_start(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    java: int | None,
    cached: bool,
    mvn: bool,
    expected: str,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if java is not None:
        _fake_java(bin_dir, java)
    if mvn:
        (bin_dir / "mvn").write_text("#!/bin/sh\n")
        (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(broker_choice, "kafka_jars_cached", lambda: cached)
    assert broker_choice.default_test_broker() == expected
