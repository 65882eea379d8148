"""Config provider references are stored as written and resolved only for the connector."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import start_rest_worker, wait_for

pytestmark = pytest.mark.integration

KAFKA_PROVIDERS = "org.apache.kafka.common.config.provider"


def test_file_and_env_references_resolve_only_inside_the_worker(
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    topic = unique_name("provided")
    create_topic(broker.bootstrap_servers, topic)
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"topic.name={topic}\ndb.password=pa55-w0rd-from-file\n")
    monkeypatch.setenv("CONNECTRT_TEST_BATCH", "5")
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n")
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "config.providers": "file,env",
            "config.providers.file.class": f"{KAFKA_PROVIDERS}.FileConfigProvider",
            "config.providers.env.class": f"{KAFKA_PROVIDERS}.EnvVarConfigProvider",
        },
    )
    try:
        config = {
            "connector.class": "FileStreamSource",
            "file": str(source),
            "topic": f"${{file:{secrets}:topic.name}}",
            "batch.size": "${env:CONNECTRT_TEST_BATCH}",
            "connection.password": f"${{file:{secrets}:db.password}}",
        }
        with caplog.at_level("DEBUG"):
            created = worker.http.post("/connectors", json={"name": "prov", "config": config})
            assert created.status_code == 201, created.text
            stored = worker.http.get("/connectors/prov/config").json()
            assert stored["topic"] == config["topic"]  # the reference, as written
            assert stored["batch.size"] == "${env:CONNECTRT_TEST_BATCH}"
            wait_for(
                lambda: len(read_topic(broker.bootstrap_servers, topic)[0]) == 2,
                60,
                "the 2 records in the resolved topic",
            )
            tasks = worker.http.get("/connectors/prov/tasks").json()
            assert tasks[0]["config"]["topic"] == config["topic"]  # stored unresolved
            for path in ("/connectors/prov", "/connectors/prov/tasks", "/connectors?expand=info"):
                assert "pa55-w0rd-from-file" not in worker.http.get(path).text
        assert "pa55-w0rd-from-file" not in caplog.text
    finally:
        worker.stop()
