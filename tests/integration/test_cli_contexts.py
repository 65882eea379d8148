"""The CLI's named contexts, ``connectors validate -f`` and shell completion, against a real
worker (embedded broker, real HTTP). Contexts live in a temporary CONNECTRT_CONFIG_DIR."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.listener.auth import hash_password
from connectrt.testing.rest import RestWorker, start_rest_worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    running = start_rest_worker(broker.bootstrap_servers)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def remove_connectors(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("CONNECTRT_CONFIG_DIR", str(home))
    for var in ("CONNECTRT_URL", "CONNECTRT_USER", "CONNECTRT_TOKEN", "CONNECTRT_CONTEXT"):
        monkeypatch.delenv(var, raising=False)
    return home


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_contexts_pick_the_worker_and_its_credentials(
    config_dir: Path, broker: EmbeddedBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    credentials = tmp_path / "users"
    credentials.write_text(f"ops:{hash_password('s3cret', iterations=1000)}\n")
    secured = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)},
    )
    try:
        assert run(capsys, "context", "list")[1].startswith("No contexts yet")
        code, out, err = run(
            capsys, "context", "add", "prod", "--url", secured.url, "--user", "ops:s3cret"
        )
        assert code == 0 and "Saved context prod (current)" in out
        saved = config_dir / "contexts.json"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600  # it holds a password
        assert run(capsys, "connectors", "list", "--json") == (0, "{}\n", "")

        code, out, _ = run(capsys, "context", "add", "other", "--url", "http://127.0.0.1:9")
        assert code == 0 and "(current)" not in out
        code, out, _ = run(capsys, "context", "list")
        lines = out.splitlines()
        assert lines[0].split() == ["NAME", "URL", "AUTH"]
        assert lines[1].split() == ["other", "http://127.0.0.1:9"]
        assert lines[2].split() == ["*", "prod", secured.url, "user", "ops:[hidden]"]
        assert "s3cret" not in out
        listed = json.loads(run(capsys, "context", "list", "--json")[1])
        assert listed["current"] == "prod"
        assert listed["contexts"]["prod"]["user"] == "ops:[hidden]"

        # --context picks another one for one command; options win over the context.
        code, _, err = run(capsys, "connectors", "list", "--context", "other")
        assert code == 1 and err.startswith("error: cannot reach http://127.0.0.1:9")
        code, _, err = run(capsys, "connectors", "list", "--user", "ops:wrong")
        assert (code, err) == (1, "error: Unauthorized (HTTP 401)\n")

        assert run(capsys, "context", "use", "other")[0] == 0
        assert run(capsys, "connectors", "list")[0] == 1
        assert (
            run(capsys, "connectors", "list", "--url", secured.url, "--user", "ops:s3cret")[0] == 0
        )
        code, _, err = run(capsys, "context", "use", "nope")
        assert (code, err) == (1, "error: No context named 'nope' (see 'connectrt context list')\n")
        assert run(capsys, "context", "show", "prod")[1].splitlines()[:2] == [
            f"url: {secured.url}",
            "user: ops:[hidden]",
        ]
        assert run(capsys, "context", "remove", "other")[0] == 0
        assert "other" not in json.loads(saved.read_text())["contexts"]
    finally:
        secured.stop()


def worker_class(worker: RestWorker, alias: str) -> str:
    """The class name the worker's validate answer gives for ``alias``."""
    answer = worker.http.put(f"/connector-plugins/{alias}/config/validate", json={})
    return str(answer.json()["name"])


def test_validate_a_connector_file(
    config_dir: Path, worker: RestWorker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.properties"
    good.write_text(f"name=v\nconnector.class=FileStreamSink\ntopics=t\nfile={tmp_path}/o\n")
    code, out, err = run(capsys, "connectors", "validate", "-f", str(good), "--url", worker.url)
    assert (code, err) == (0, "")
    assert out == f"{good}: valid configuration for {worker_class(worker, 'FileStreamSink')}\n"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"connector.class": "FileStreamSink", "tasks.max": "many"}))
    code, out, err = run(capsys, "connectors", "validate", "-f", str(bad), "--url", worker.url)
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["KEY", "ERROR"]
    assert any(line.startswith("tasks.max ") for line in lines)
    assert lines[-1].startswith(f"{bad}: ") and "invalid value" in lines[-1]
    code, out, _ = run(
        capsys, "connectors", "validate", "-f", str(bad), "--url", worker.url, "--json"
    )
    assert code == 1 and json.loads(out)["error_count"] >= 1
    assert worker.http.get("/connectors").json() == []  # nothing was created
    noclass = tmp_path / "noclass.properties"
    noclass.write_text("name=x\n")
    code, _, err = run(capsys, "connectors", "validate", "-f", str(noclass), "--url", worker.url)
    assert (code, err) == (1, f"error: {noclass} has no 'connector.class'\n")


def test_shell_completion_scripts_and_connector_names(
    config_dir: Path, worker: RestWorker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = run(capsys, "completion", shell)
        assert code == 0 and "_CONNECTRT_COMPLETE" in out, shell
    data = tmp_path / "in.txt"
    data.write_text("x\n")
    for name in ("orders-src", "other-src"):
        created = worker.http.post(
            "/connectors",
            json={
                "name": name,
                "config": {"connector.class": "FileStreamSource", "file": str(data), "topic": "t"},
            },
        )
        assert created.status_code == 201, created.text
    env = {
        **os.environ,
        "CONNECTRT_URL": worker.url,
        "_CONNECTRT_COMPLETE": "bash_complete",
        "COMP_WORDS": "connectrt connectors status or",
        "COMP_CWORD": "3",
    }
    completed = subprocess.run(
        [sys.executable, "-m", "connectrt.cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.stdout.split() == ["plain,orders-src"], completed.stderr
    env["COMP_WORDS"], env["COMP_CWORD"] = "connectrt conn", "1"
    completed = subprocess.run(
        [sys.executable, "-m", "connectrt.cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.stdout.split() == ["plain,connectors"]
