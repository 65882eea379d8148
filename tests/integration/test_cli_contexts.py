"""Named contexts, ``connectors validate`` and shell completion, through the real CLI against
real workers (one with HTTP Basic auth, one over HTTPS with bearer tokens).

Commands run in-process through ``connectrt.cli.main`` (output via capsys); completion runs
``python -m connectrt.cli`` as a shell does, and bash itself sources the script. Every test has
its own ``XDG_CONFIG_HOME``, so a developer's own contexts are neither used nor touched.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import trustme

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.listener.auth import hash_password, hash_token
from connectrt.testing.rest import RestWorker, start_rest_worker

pytestmark = pytest.mark.integration

Run = Callable[..., tuple[int, str, str]]
PASSWORD = "s3cret-pa55"
TOKEN = "t0ken-abc-123"


@pytest.fixture(autouse=True)
def own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for var in ("CONNECTRT_URL", "CONNECTRT_USER", "CONNECTRT_TOKEN", "CONNECTRT_CONTEXT"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(scope="module")
def secured(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    """A worker requiring HTTP Basic auth: alice / PASSWORD."""
    credentials = tmp_path_factory.mktemp("basic") / "credentials"
    credentials.write_text(f"alice:{hash_password(PASSWORD, iterations=1000)}\n")
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)},
    )
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """``cli("context", "list")`` -> (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def secret_file(tmp: Path, name: str, secret: str) -> Path:
    path = tmp / name
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return path


class _HeaderRecorder(BaseHTTPRequestHandler):
    """Answers every GET with ``{}`` and records the Authorization header it got."""

    seen: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str | None]]]:
    """A plain HTTP server on 127.0.0.1 that records the Authorization headers sent to it."""
    _HeaderRecorder.seen = []
    server = HTTPServer(("127.0.0.1", 0), _HeaderRecorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _HeaderRecorder.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# -- contexts -----------------------------------------------------------------------------------
def test_context_with_a_password_file_reaches_a_basic_auth_worker(
    cli: Run,
    secured: RestWorker,
    own_config_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    password_file = secret_file(tmp_path, "alice.pw", PASSWORD)
    code, out, err = cli(
        "context", "add", "prod", "--url", secured.url, "--user", "alice",
        "--password-file", str(password_file),
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out == f"Added context prod: {secured.url} (current)\n"

    config = own_config_home / "connectrt" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    stored = json.loads(config.read_text())
    assert stored["current"] == "prod"
    assert stored["contexts"]["prod"] == {
        "url": secured.url,
        "user": "alice",
        "password_file": str(password_file.resolve()),
    }
    assert PASSWORD not in config.read_text()

    # The current context is used without any flag or environment variable.
    assert cli("connectors", "list", "--json") == (0, "{}\n", "")
    # Credentials from the environment replace the current context's; a context named
    # explicitly beats the environment.
    monkeypatch.setenv("CONNECTRT_USER", "alice:wrong")
    assert cli("connectors", "list")[2] == "error: Unauthorized (HTTP 401)\n"
    assert cli("connectors", "list", "--json", "--context", "prod") == (0, "{}\n", "")
    monkeypatch.delenv("CONNECTRT_USER")
    # Without it (an explicit URL drops the current context's credentials): 401.
    assert cli("connectors", "list", "--url", secured.url) == (
        1,
        "",
        "error: Unauthorized (HTTP 401)\n",
    )
    # The password is read at each use: a rotated file needs no context command.
    password_file.write_text("wrong\n")
    assert cli("connectors", "list")[2] == "error: Unauthorized (HTTP 401)\n"
    password_file.write_text(PASSWORD + "\n")
    assert cli("connectors", "list")[0] == 0

    # Nothing prints the password.
    for args in (("context", "list"), ("context", "list", "--json"), ("context", "current")):
        code, out, _ = cli(*args)
        assert code == 0 and PASSWORD not in out
    code, out, _ = cli("context", "list")
    header, row = out.splitlines()
    assert header.split() == ["CURRENT", "NAME", "URL", "AUTH", "TLS"]
    assert row.split() == ["*", "prod", secured.url, "basic", "alice", "(password", "file)", "-"]
    assert json.loads(cli("context", "current", "--json")[1])["url"] == secured.url


def test_use_switches_and_context_option_overrides(
    cli: Run, secured: RestWorker, tmp_path: Path, recorder: tuple[str, list[str | None]]
):
    other_url, seen = recorder
    password_file = secret_file(tmp_path, "alice.pw", PASSWORD)
    add = ("context", "add")
    assert cli(*add, "prod", "--url", secured.url, "--user", "alice",
               "--password-file", str(password_file))[0] == 0  # fmt: skip
    assert cli(*add, "other", "--url", other_url)[1] == f"Added context other: {other_url}\n"
    assert cli("context", "current") == (0, f"prod: {secured.url}\n", "")

    assert cli("context", "use", "other") == (0, f"Using context other: {other_url}\n", "")
    assert cli("context", "current")[1] == f"other: {other_url}\n"
    assert cli("connectors", "list", "--json") == (0, "{}\n", "")
    assert seen == [None]  # the other context has no credentials
    # --context beats the current context, and CONNECTRT_CONTEXT does too.
    assert cli("connectors", "list", "--json", "--context", "prod")[0] == 0
    os.environ["CONNECTRT_CONTEXT"] = "prod"
    try:
        assert cli("connectors", "list", "--json")[0] == 0
    finally:
        del os.environ["CONNECTRT_CONTEXT"]
    assert seen == [None]

    # An explicit URL with the current context's credentials: never sent elsewhere.
    assert cli("context", "use", "prod")[0] == 0
    assert cli("connectors", "list", "--json", "--url", other_url)[0] == 0
    os.environ["CONNECTRT_URL"] = other_url
    try:
        assert cli("connectors", "list", "--json")[0] == 0
    finally:
        del os.environ["CONNECTRT_URL"]
    assert seen == [None, None, None]

    # Removing the current context leaves none current; list marks none.
    assert cli("context", "remove", "prod") == (0, "Removed context prod\n", "")
    assert cli("context", "current") == (
        1,
        "",
        "error: No current context: pick one with 'connectrt context use NAME'\n",
    )
    lines = cli("context", "list")[1].splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["other"]


def test_context_errors_are_clear_and_change_nothing(
    cli: Run, own_config_home: Path, tmp_path: Path
):
    config = own_config_home / "connectrt" / "config.json"
    code, _, err = cli("context", "add", "x", "--url", "http://h:1", "--user", "alice:pw")
    assert code == 1
    assert err == (
        "error: --user takes a user name only; put the password in a file and give "
        "--password-file\n"
    )
    code, _, err = cli("context", "add", "x", "--url", "localhost:8083")
    assert (code, err) == (1, "error: --url 'localhost:8083' is not an http:// or https:// URL\n")
    code, _, err = cli("context", "add", "x", "--url", "http://alice:pw@h:1")
    assert code == 1 and "must not hold a password" in err and "pw@" not in err
    missing = tmp_path / "nope.pw"
    code, _, err = cli(
        "context", "add", "x", "--url", "http://h:1", "--user", "a", "--password-file", str(missing)
    )
    assert (code, err) == (1, f"error: --password-file {missing}: No such file or directory\n")
    code, _, err = cli("context", "add", "x", "--url", "https://h:1", "--ca", "c", "--insecure")
    assert (code, err) == (1, "error: --ca and --insecure cannot be used together\n")
    assert not config.exists()

    assert cli("context", "list")[1].startswith("No contexts in ")
    code, _, err = cli("context", "use", "ghost")
    assert code == 1
    assert err == (
        "error: no context named 'ghost' (contexts: none; add one with 'connectrt context add')\n"
    )
    code, _, err = cli("connectors", "list", "--context", "ghost")
    assert code == 1 and err.startswith("error: no context named 'ghost'")

    # A password file that disappears after the context was added: named, not printed.
    pw = secret_file(tmp_path, "gone.pw", PASSWORD)
    assert cli("context", "add", "gone", "--url", "http://127.0.0.1:1", "--user", "bob",
               "--password-file", str(pw))[0] == 0  # fmt: skip
    pw.unlink()
    code, _, err = cli("connectors", "list")
    assert code == 1
    assert err == (
        f"error: cannot read the password (context gone) file {pw.resolve()}: "
        "No such file or directory\n"
    )

    # A damaged file is reported, not overwritten behind the user's back.
    config.write_text("{not json")
    code, _, err = cli("context", "list")
    assert code == 1 and err.startswith(f"error: {config} is not a connectrt context file")
    assert config.read_text() == "{not json"


def test_token_file_context_over_https_with_its_ca(
    cli: Run, broker: EmbeddedBroker, tmp_path: Path
):
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    tokens = tmp_path / "tokens"
    tokens.write_text(hash_token(TOKEN) + "\n")
    https = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.certificate.location": str(cert_file),
            "listeners.https.ssl.key.location": str(key_file),
            "rest.auth.type": "bearer",
            "rest.auth.tokens.file": str(tokens),
        },
    )
    try:
        token_file = secret_file(tmp_path, "token", TOKEN)
        code, _, err = cli(
            "context", "add", "tls", "--url", https.url, "--token-file", str(token_file),
            "--ca", str(ca_file),
        )  # fmt: skip
        assert (code, err) == (0, "")
        assert cli("connectors", "list", "--json") == (0, "{}\n", "")
        row = cli("context", "list")[1].splitlines()[1]
        assert row.split()[3:] == ["bearer", "token", "(file)", "CA", str(ca_file.resolve())]
        assert TOKEN not in (tmp_path / "config-home" / "connectrt" / "config.json").read_text()
        # A flag's token replaces the context's (and is refused here).
        code, _, err = cli("connectors", "list", "--token", "wrong")
        assert (code, err) == (1, "error: Unauthorized (HTTP 401)\n")
    finally:
        https.stop()


# -- connectors validate ------------------------------------------------------------------------
def test_validate_shows_per_field_errors_and_exits_non_zero(
    cli: Run, secured: RestWorker, tmp_path: Path
):
    password_file = secret_file(tmp_path, "alice.pw", PASSWORD)
    assert cli("context", "add", "prod", "--url", secured.url, "--user", "alice",
               "--password-file", str(password_file))[0] == 0  # fmt: skip

    good = tmp_path / "good.properties"
    good.write_text("name=v\nconnector.class=FileStreamSource\nfile=/tmp/x\ntopic=t\n")
    assert cli("connectors", "validate", "-f", str(good)) == (
        0,
        f"{good}: valid config for FileStreamSource\n",
        "",
    )

    bad = tmp_path / "bad.json"  # a config map without a name (which is one of its errors)
    bad.write_text(json.dumps({"connector.class": "FileStreamSource", "tasks.max": "many"}))
    code, out, err = cli("connectors", "validate", "-f", str(bad))
    assert code == 1
    rows = out.splitlines()
    assert rows[0].split() == ["FIELD", "VALUE", "ERROR"]
    fields = {row.split()[0]: row for row in rows[1:]}
    assert "topic" in fields and "(not set)" in fields["topic"]
    assert 'Missing required configuration "topic"' in fields["topic"]
    assert fields["tasks.max"].split()[1] == "many"
    assert "Invalid value many for configuration tasks.max" in fields["tasks.max"]
    assert set(fields) == {"name", "tasks.max", "topic"}
    assert err == f"error: {bad}: 3 invalid fields for FileStreamSource\n"

    code, out, err = cli("connectors", "validate", "-f", str(bad), "--json")
    assert code == 1 and json.loads(out)["error_count"] == 3

    nameless = tmp_path / "nameless.properties"
    nameless.write_text("file=/tmp/x\n")
    code, _, err = cli("connectors", "validate", "-f", str(nameless))
    assert (code, err) == (
        1,
        f"error: {nameless} has no connector.class: there is nothing to validate it against\n",
    )
    unknown = tmp_path / "unknown.properties"
    unknown.write_text("connector.class=NoSuchConnector\n")
    code, _, err = cli("connectors", "validate", "-f", str(unknown))
    assert (code, err) == (1, "error: Unknown plugin NoSuchConnector. (HTTP 404)\n")
    code, _, err = cli("connectors", "validate", "-f", str(tmp_path / "missing.properties"))
    assert (code, err) == (
        1,
        f"error: Connector config file not found: {tmp_path / 'missing.properties'}\n",
    )


# -- shell completion ---------------------------------------------------------------------------
def _complete(words: str, **env: str) -> list[str]:
    """What bash completion offers after ``words`` (click's bash_complete protocol)."""
    result = subprocess.run(
        [sys.executable, "-m", "connectrt.cli"],
        env={
            **os.environ,
            "_CONNECTRT_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split(" ")) - 1),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line]


def test_completion_scripts_and_dynamic_names(
    secured: RestWorker, tmp_path: Path, own_config_home: Path
):
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run(
            [sys.executable, "-m", "connectrt.cli", "completion", shell],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert script.returncode == 0, script.stderr
        assert "_CONNECTRT_COMPLETE" in script.stdout
    bash = shutil.which("bash")
    assert bash is not None
    loaded = subprocess.run(
        [
            bash,
            "-c",
            f'eval "$({sys.executable} -m connectrt.cli completion bash)"; complete -p connectrt',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "connectrt" in loaded.stdout and "-F" in loaded.stdout

    assert _complete("connectrt conn") == ["connectors"]
    assert set(_complete("connectrt connectors ")) >= {"list", "validate", "restart"}
    assert "--include-tasks" in _complete("connectrt connectors restart --")

    # Connector names come from the worker the command would talk to (here: a context).
    name = "completion-probe"
    response = secured.http.put(
        f"/connectors/{name}/config",
        json={"connector.class": "FileStreamSource", "file": str(tmp_path / "in"), "topic": name},
        auth=("alice", PASSWORD),
    )
    assert response.status_code in (200, 201), response.text
    try:
        password_file = secret_file(tmp_path, "alice.pw", PASSWORD)
        env = {"XDG_CONFIG_HOME": str(own_config_home)}
        main(["context", "add", "prod", "--url", secured.url, "--user", "alice",
              "--password-file", str(password_file)])  # fmt: skip
        assert _complete("connectrt connectors status comp", **env) == [name]
        assert _complete("connectrt connectors status --context pr", **env) == ["prod"]
        # A worker that cannot be reached, or a password that would have to be asked: nothing.
        assert _complete("connectrt connectors get --url http://127.0.0.1:1 c", **env) == []
        asked = {**env, "CONNECTRT_USER": "alice"}
        assert _complete(f"connectrt connectors get --url {secured.url} c", **asked) == []
    finally:
        secured.http.delete(f"/connectors/{name}", auth=("alice", PASSWORD))
