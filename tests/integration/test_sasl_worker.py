"""A worker configured as Kafka Connect users configure a SASL cluster, on Apache Kafka.

The module starts its own Apache Kafka broker (Java 17+ and the cached jars, as
``test_kafka_broker_launcher.py``) with a ``SASL_PLAINTEXT`` listener (mechanism PLAIN, users
``admin`` and ``alice``) next to the PLAINTEXT one the broker uses itself. A worker runs in this
process over real HTTP, from a Kafka Connect-style config: the top-level
``security.protocol``/``sasl.mechanism``/``sasl.jaas.config`` and no ``producer.``/
``consumer.``/``admin.`` copies. Its internal topics' clients use the top-level keys and its
task clients inherit them (:mod:`connectrt.runtime.client_security`):

* a FileStream source and sink move 500 lines over the SASL listener, 0 lost, and the REST
  answers about the worker's connectors never show the password;
* with a wrong password, the worker fails at start-up (within 60 s).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.rest import rest_worker_props, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

LISTENER = "SASL_PLAINTEXT"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSWORD = "alice-secret"
LINES = 500


def _jaas(user: str, password: str) -> str:
    return f'{PLAIN} required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    users = f'user_admin="admin-secret" user_alice="{PASSWORD}"'
    broker = KafkaBroker(
        extra_listeners={LISTENER: "SASL_PLAINTEXT"},
        properties={
            "sasl.enabled.mechanisms": "PLAIN",
            f"listener.name.{LISTENER.lower()}.plain.sasl.jaas.config": (
                f'{PLAIN} required username="admin" password="admin-secret" {users};'
            ),
        },
    )
    with broker:
        yield broker


def _secured_props(kafka: KafkaBroker, password: str, **extra: str) -> dict[str, str]:
    return rest_worker_props(
        kafka.listener_bootstrap(LISTENER),
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": _jaas("alice", password),
            **extra,
        },
    )


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kafka_connect_style_sasl_config_runs_a_file_pipeline(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    topic = f"sasl-lines-{time.monotonic_ns()}"
    create_topic(kafka.bootstrap_servers, topic, partitions=1)  # through the PLAINTEXT listener
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"line-{i:05d}" for i in range(LINES)]
    src.write_text("".join(line + "\n" for line in expected), encoding="utf-8")
    props = _secured_props(kafka, PASSWORD)
    assert not any(k.startswith(("producer.sasl", "consumer.sasl", "admin.")) for k in props)

    worker = start_rest_worker(kafka.listener_bootstrap(LISTENER), props)
    try:
        for name, config in (
            ("sasl-src", {"connector.class": "FileStreamSource", "file": str(src), "topic": topic}),
            (
                "sasl-sink",
                {"connector.class": "FileStreamSinkConnector", "file": str(dst), "topics": topic},
            ),
        ):
            response = worker.http.post("/connectors", json={"name": name, "config": config})
            assert response.status_code == 201, response.text
        wait_for(lambda: _count_lines(dst) >= LINES, 180, f"{LINES} lines in the sink file")
        time.sleep(1.0)  # a duplicate would land within the sink's next poll
        assert dst.read_text(encoding="utf-8").splitlines() == expected  # 0 lost, in order

        answers = [
            worker.http.get(path)
            for path in (
                "/connectors?expand=status&expand=info",
                "/connectors/sasl-src/config",
                "/connectors/sasl-sink/status",
                "/connectors/sasl-src/tasks",
                "/",
            )
        ]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            assert PASSWORD not in answer.text
        states = worker.http.get("/connectors/sasl-sink/status").json()
        assert [t["state"] for t in states["tasks"]] == ["RUNNING"]
    finally:
        try:
            worker.delete_connectors()
        finally:
            worker.stop()


def test_a_wrong_password_fails_the_worker_at_start_up(kafka: KafkaBroker) -> None:
    props = _secured_props(kafka, "not-the-password", **{"worker.startup.timeout.ms": "20000"})
    started = time.monotonic()
    with pytest.raises((RuntimeError, TimeoutError)) as err:
        worker = start_rest_worker(kafka.listener_bootstrap(LISTENER), props)
        worker.stop()  # pragma: no cover - reached only if the worker started, failing the test
    assert isinstance(err.value, RuntimeError), f"the worker did not fail: {err.value}"
    assert "worker died during start" in str(err.value)
    assert time.monotonic() - started < 60
