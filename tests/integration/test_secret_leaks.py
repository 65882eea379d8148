"""No secret leaves the worker: values resolved from config providers and passwords embedded in
URLs never appear in a REST response (validate included), a status trace or a log line.

The test plants an environment variable, a value in a properties file, a file in a secrets
directory and two URL passwords, drives every connector endpoint over real HTTP (create,
read, validate, patch, a task that fails with a resolved value in its error), and searches
every response body and the captured logs for the planted values.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

KAFKA_PROVIDERS = "org.apache.kafka.common.config.provider"


class Planted:
    """The secrets of one run, each unique so a hit cannot be a coincidence."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        run = uuid.uuid4().hex[:10]
        self.env = f"envleak{run}"
        self.file = f"fileleak{run}"
        self.directory = f"dirleak{run}"
        self.userinfo = f"urlleak{run}"
        self.param = f"paramleak{run}"
        monkeypatch.setenv("CONNECTRT_LEAK_TEST", self.env)
        self.properties = tmp_path / "secrets.properties"
        self.properties.write_text(f"note={self.file}\n")
        self.secrets_dir = tmp_path / "secrets.d"
        self.secrets_dir.mkdir()
        (self.secrets_dir / "token").write_text(self.directory)

    @property
    def values(self) -> list[str]:
        return [self.env, self.file, self.directory, self.userinfo, self.param]

    def config(self, out_dir: Path, topic: str) -> dict[str, str]:
        return {
            "connector.class": "FileStreamSink",
            "topics": topic,
            # The sink fails to open this path: its error names the resolved directory.
            "file": f"{out_dir}/${{env:CONNECTRT_LEAK_TEST}}/missing/out.txt",
            "note.env": "${env:CONNECTRT_LEAK_TEST}",
            "note.mixed": "prefix-${env:CONNECTRT_LEAK_TEST}-suffix",
            "note.file": f"${{file:{self.properties}:note}}",
            "note.directory": f"${{directory:{self.secrets_dir}:token}}",
            "target.url": f"https://svc:{self.userinfo}@example.invalid/path",
            "jdbc.url": f"jdbc:postgresql://db.invalid/app?user=u&password={self.param}",
        }

    def assert_absent(self, text: str, where: str) -> None:
        found = [v for v in self.values if v in text]
        assert not found, f"{where} leaks {found}: {text[:2000]}"


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Planted:
    return Planted(tmp_path, monkeypatch)


@pytest.fixture
def worker(broker: EmbeddedBroker, planted: Planted):
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "config.providers": "file,env,directory",
            "config.providers.file.class": f"{KAFKA_PROVIDERS}.FileConfigProvider",
            "config.providers.env.class": f"{KAFKA_PROVIDERS}.EnvVarConfigProvider",
            "config.providers.directory.class": f"{KAFKA_PROVIDERS}.DirectoryConfigProvider",
        },
    )
    try:
        yield worker
    finally:
        try:
            worker.delete_connectors()
        finally:
            worker.stop()


def _responses(worker: RestWorker, name: str, config: dict[str, str]) -> list[httpx.Response]:
    http = worker.http
    plugin = "org.apache.kafka.connect.file.FileStreamSinkConnector"
    out = [
        http.put(f"/connector-plugins/{plugin}/config/validate", json=config),
        http.put("/connector-plugins/FileStreamSink/config/validate", json=config),
        http.get(f"/connectors/{name}"),
        http.get(f"/connectors/{name}/config"),
        http.get(f"/connectors/{name}/status"),
        http.get(f"/connectors/{name}/tasks"),
        http.get(f"/connectors/{name}/tasks/0/status"),
        http.get(f"/connectors/{name}/topics"),
        http.get(f"/connectors/{name}/offsets"),
        http.get("/connectors", params=[("expand", "info"), ("expand", "status")]),
        http.patch(f"/connectors/{name}/config", json={"note.extra": "${env:CONNECTRT_LEAK_TEST}"}),
    ]
    # A validate error that quotes a value: an invalid number from a provider.
    bad = {**config, "tasks.max": "${env:CONNECTRT_LEAK_TEST}"}
    out.append(http.put("/connector-plugins/FileStreamSink/config/validate", json=bad))
    return out


def test_no_response_status_or_log_carries_a_planted_secret(
    worker: RestWorker,
    planted: Planted,
    tmp_path: Path,
    unique_name,
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = unique_name("leak")
    config = planted.config(tmp_path, unique_name("leak-topic"))
    with caplog.at_level("DEBUG"):
        created = worker.http.post("/connectors", json={"name": name, "config": config})
        assert created.status_code == 201, created.text
        planted.assert_absent(created.text, "POST /connectors")
        # The task fails opening the resolved path; its trace must not show it.
        wait_for(
            lambda: any(
                t["state"] == "FAILED"
                for t in worker.http.get(f"/connectors/{name}/status").json().get("tasks", [])
            ),
            60,
            "the sink task to fail on its missing directory",
        )
        for response in _responses(worker, name, config):
            assert response.status_code < 500, response.text
            planted.assert_absent(
                response.text, f"{response.request.method} {response.request.url}"
            )
    planted.assert_absent(caplog.text, "the logs")
    # The PATCH above reconfigured the connector, so its task starts again: wait for the new
    # attempt's failure rather than reading a status between the two.
    # One status read both checks and yields the trace, so a restart between two reads
    # cannot hand the assertion a RUNNING status.
    traces: list[str] = []

    def failed_with_trace() -> bool:
        status = worker.http.get(f"/connectors/{name}/tasks/0/status").json()
        if status.get("state") == "FAILED" and "trace" in status:
            traces.append(status["trace"])
            return True
        return False

    wait_for(failed_with_trace, 60, "the reconfigured sink task to fail again with a trace")
    trace = traces[-1]
    assert "missing" in trace  # the failure is explained, with the placeholder in place
    planted.assert_absent(trace, "the task trace")


def test_validate_reports_values_as_written(worker: RestWorker, planted: Planted, tmp_path: Path):
    config = planted.config(tmp_path, "some-topic")
    config["tasks.max"] = "${env:CONNECTRT_LEAK_TEST}"
    response = worker.http.put("/connector-plugins/FileStreamSink/config/validate", json=config)
    assert response.status_code == 200, response.text
    values = {c["value"]["name"]: c["value"] for c in response.json()["configs"]}
    assert values["note.env"]["value"] == "${env:CONNECTRT_LEAK_TEST}"
    assert values["note.file"]["value"] == config["note.file"]
    assert values["target.url"]["value"] == "https://svc:[hidden]@example.invalid/path"
    errors = values["tasks.max"]["errors"]
    assert errors and all("${env:CONNECTRT_LEAK_TEST}" in e for e in errors), errors
    planted.assert_absent(response.text, "validate")


def test_get_config_masks_url_passwords_and_put_back_keeps_them(
    worker: RestWorker, planted: Planted, tmp_path: Path, unique_name
):
    name = unique_name("url")
    config = {
        "connector.class": "FileStreamSink",
        "topics": unique_name("url-topic"),
        "file": str(tmp_path / "out.txt"),
        "target.url": f"https://svc:{planted.userinfo}@example.invalid/path",
    }
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    shown = worker.http.get(f"/connectors/{name}/config").json()
    assert shown["target.url"] == "https://svc:[hidden]@example.invalid/path"
    # GET -> edit -> PUT: the masked URL sent back keeps the stored password.
    shown["file"] = str(tmp_path / "other.txt")
    assert worker.http.put(f"/connectors/{name}/config", json=shown).status_code == 200
    stored = worker.process.herder.worker.connector_config(name)
    assert stored["target.url"] == config["target.url"]
    assert stored["file"] == shown["file"]
