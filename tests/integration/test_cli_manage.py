"""The management CLI (``connectrt connectors|offsets|auth ...``) against a real worker.

Commands run in-process through ``connectrt.cli.main`` (output via capsys); two run as
``python -m connectrt.cli`` subprocesses to prove the entry point.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.listener.auth import Authenticator, _check_password, hash_password, hash_token
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.rest import RestWorker, running_rest_worker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(broker.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def no_user_contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands never see the developer's own contexts (``connectrt context``)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.delenv("CONNECTRT_CONTEXT", raising=False)


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    """Whatever a test asserted, the connectors it created are gone afterwards, so their
    tasks and consumer groups cannot slow down or disturb the next tests."""
    yield
    worker.delete_connectors()


@pytest.fixture
def cli(worker: RestWorker, capsys: pytest.CaptureFixture[str]) -> Run:
    """``cli("connectors", "list", ...)`` -> (exit status, stdout, stderr) against ``worker``."""

    def run(*args: str, url: str | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*args, "--url", url or worker.url])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def state(worker: RestWorker, name: str) -> str:
    r = worker.http.get(f"/connectors/{name}/status")
    return r.json()["connector"]["state"] if r.status_code == 200 else f"HTTP {r.status_code}"


def task_states(worker: RestWorker, name: str) -> list[str]:
    r = worker.http.get(f"/connectors/{name}/status")
    return [t["state"] for t in r.json()["tasks"]] if r.status_code == 200 else []


def source_properties(tmp: Path, name: str, topic: str, lines: int = 5) -> Path:
    data = tmp / f"{name}.txt"
    data.write_text("".join(f"line {i}\n" for i in range(lines)))
    props = tmp / f"{name}.properties"
    props.write_text(
        f"# a FileStreamSource\nname={name}\nconnector.class=FileStreamSource\n"
        f"file={data}\ntopic={topic}\ntasks.max=1\n"
    )
    return props


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- create, list, get, status, tasks, offsets ------------------------------------------------
def test_create_from_properties_then_inspect(
    cli: Run, worker: RestWorker, tmp_path: Path, unique_name
):
    name, topic = unique_name("src"), unique_name("topic")
    props = source_properties(tmp_path, name, topic)
    code, out, err = cli("connectors", "create", "-f", str(props))
    assert (code, err) == (0, "")
    assert out == f"Created connector {name} (source)\n"
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the task RUNNING")

    code, out, _ = cli("connectors", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "STATE", "TASKS"]
    row = next(line for line in lines if line.startswith(name + " "))
    assert row.split() == [name, "source", "RUNNING", "1/1", "running"]

    code, out, _ = cli("connectors", "list", "--json")
    listing = json.loads(out)
    assert listing[name]["info"]["config"]["topic"] == topic
    assert listing[name]["status"]["connector"]["state"] == "RUNNING"

    code, out, _ = cli("connectors", "get", name)
    assert code == 0
    assert "Type:   source" in out and f"  topic = {topic}" in out
    assert json.loads(cli("connectors", "get", name, "--json")[1])["tasks"] == [
        {"connector": name, "task": 0}
    ]

    code, out, _ = cli("connectors", "status", name)
    assert code == 0
    connector_line, task_line = out.splitlines()
    assert connector_line.split()[:4] == ["connector", name, "source", "RUNNING"]
    assert task_line.split()[:3] == ["task", "0", "RUNNING"]

    code, out, _ = cli("connectors", "tasks", name, "--json")
    tasks = json.loads(out)
    assert [t["id"] for t in tasks] == [{"connector": name, "task": 0}]
    assert tasks[0]["config"]["topic"] == topic
    assert f"  topic = {topic}" in cli("connectors", "tasks", name)[1]

    data = tmp_path / f"{name}.txt"
    end = len(data.read_bytes())
    expected = [{"partition": {"filename": str(data)}, "offset": {"position": end}}]
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/offsets").json()["offsets"] == expected,
        60,
        "the source offsets committed",
    )
    code, out, _ = cli("connectors", "offsets", name)
    assert code == 0
    assert out.splitlines()[0].split() == ["PARTITION", "OFFSET"]
    assert out.splitlines()[1].split() == [
        json.dumps({"filename": str(data)}, separators=(",", ":")),
        f'{{"position":{end}}}',
    ]
    assert json.loads(cli("connectors", "offsets", name, "--json")[1]) == {"offsets": expected}


def test_create_from_json_request_and_update(
    cli: Run, worker: RestWorker, tmp_path: Path, unique_name
):
    name, topic = unique_name("sink"), unique_name("topic")
    out_file = tmp_path / "out.txt"
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "name": name,
                "config": {
                    "connector.class": "FileStreamSink",
                    "file": str(out_file),
                    "topics": topic,
                    "tasks.max": 1,
                },
                "initial_state": "STOPPED",
            }
        )
    )
    code, out, err = cli("connectors", "create", "-f", str(request), "--json")
    assert (code, err) == (0, "")
    info = json.loads(out)
    assert info["name"] == name and info["type"] == "sink"
    assert info["config"]["tasks.max"] == "1"  # the JSON number became a string
    wait_for(lambda: state(worker, name) == "STOPPED", 60, "the connector created STOPPED")

    # Creating it again is a 409 with the server's message.
    code, out, err = cli("connectors", "create", "-f", str(request))
    assert (code, out) == (1, "")
    assert err == f"error: Connector {name} already exists (HTTP 409)\n"

    # update: a .properties file without a name; the name comes from the command line.
    update = tmp_path / "update.properties"
    update.write_text(f"connector.class=FileStreamSink\nfile={out_file}\ntopics={topic},other\n")
    code, out, err = cli("connectors", "update", name, "-f", str(update))
    assert (code, err) == (0, "")
    assert out == f"Updated connector {name} (sink)\n"
    assert worker.http.get(f"/connectors/{name}/config").json()["topics"] == f"{topic},other"

    # A file naming another connector is refused before anything is sent.
    code, _, err = cli("connectors", "update", "someone-else", "-f", str(request))
    assert code == 1
    assert err == f"error: {request} configures connector '{name}', not 'someone-else'\n"
    assert worker.http.get("/connectors/someone-else").status_code == 404

    # update of a missing connector creates it (PUT semantics).
    other = unique_name("sink2")
    code, out, _ = cli("connectors", "update", other, "-f", str(update))
    assert (code, out) == (0, f"Created connector {other} (sink)\n")
    assert worker.http.get(f"/connectors/{other}/config").json()["name"] == other


# -- pause, resume, stop, restart -------------------------------------------------------------
def test_pause_resume_stop_restart(cli: Run, worker: RestWorker, tmp_path: Path, unique_name):
    name, topic = unique_name("src"), unique_name("topic")
    assert cli("connectors", "create", "-f", str(source_properties(tmp_path, name, topic)))[0] == 0
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the task RUNNING")

    assert cli("connectors", "pause", name) == (0, f"Pausing connector {name}\n", "")
    wait_for(lambda: task_states(worker, name) == ["PAUSED"], 60, "the task PAUSED")
    assert json.loads(cli("connectors", "status", name, "--json")[1])["connector"]["state"] == (
        "PAUSED"
    )
    assert cli("connectors", "resume", name) == (0, f"Resuming connector {name}\n", "")
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the task resumed")

    assert cli("connectors", "restart", name) == (0, f"Restarted connector {name}\n", "")
    wait_for(lambda: state(worker, name) == "RUNNING", 60, "the connector restarted")

    # --only-failed with nothing failed: the plan restarts nothing.
    code, out, _ = cli("connectors", "restart", name, "--include-tasks", "--only-failed", "--json")
    plan = json.loads(out)
    assert code == 0
    assert plan["connector"]["state"] != "RESTARTING"
    assert [t["state"] for t in plan["tasks"]] != ["RESTARTING"]
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the task still RUNNING")

    code, out, _ = cli("connectors", "restart", name, "--include-tasks")
    assert code == 0
    connector_line, task_line = out.splitlines()
    assert connector_line.split()[:4] == ["connector", name, "source", "RESTARTING"]
    assert task_line.split()[:3] == ["task", "0", "RESTARTING"]
    wait_for(
        lambda: task_states(worker, name) == ["RUNNING"], 60, "the task RUNNING after its restart"
    )

    assert cli("connectors", "stop", name) == (0, f"Stopped connector {name}\n", "")
    wait_for(lambda: state(worker, name) == "STOPPED", 60, "the connector STOPPED")
    assert json.loads(cli("connectors", "status", name, "--json")[1])["tasks"] == []
    assert cli("connectors", "tasks", name)[1] == f"Connector {name} has no tasks\n"
    assert cli("connectors", "resume", name)[0] == 0
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the task resumed from STOPPED")


# -- offsets reset ----------------------------------------------------------------------------
def test_offsets_reset_rewinds_a_sink(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    name, topic = unique_name("sink"), unique_name("topic")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    produce(
        broker.bootstrap_servers,
        topic,
        (b'{"schema":{"type":"string","optional":false},"payload":"v%d"}' % i for i in range(5)),
    )
    out_file = tmp_path / "sink.txt"
    props = tmp_path / "sink.properties"
    props.write_text(
        f"name={name}\nconnector.class=FileStreamSink\nfile={out_file}\ntopics={topic}\n"
    )
    assert cli("connectors", "create", "-f", str(props))[0] == 0
    values = [f"v{i}" for i in range(5)]
    wait_for(
        lambda: out_file.exists() and out_file.read_text().splitlines() == values,
        60,
        "the sink to write v0..v4 (its group join included)",
    )
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
            == [{"partition": partition, "offset": {"kafka_offset": 5}}]
        ),
        60,
        "the sink offsets committed at 5",
    )

    code, out, err = cli("offsets", "reset", name, "--to-earliest")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"Reset connector {name} to earliest"
    assert lines[1].split() == ["PARTITION", "OFFSET"]
    assert lines[2].split()[1] == '{"kafka_offset":0}'
    # The connector was resumed and writes everything again.
    wait_for(
        lambda: out_file.read_text().splitlines() == values + values,
        60,
        "v0..v4 written again after the reset (the sink's group rejoin included)",
    )
    assert state(worker, name) == "RUNNING"

    code, out, _ = cli("offsets", "reset", name, "--to-latest", "--topic", topic, "--json")
    assert code == 0
    assert json.loads(out) == {"offsets": [{"partition": partition, "offset": {"kafka_offset": 5}}]}

    # Errors: a bad date is refused locally, a topic the sink does not read by the server.
    code, _, err = cli("offsets", "reset", name, "--to-datetime", "yesterday")
    assert code == 1 and err == "error: --to-datetime 'yesterday' is not an ISO-8601 date-time\n"
    code, _, err = cli("offsets", "reset", name, "--to-earliest", "--topic", "nope")
    assert code == 1
    assert err == f"error: Connector {name} does not consume topic nope (HTTP 400)\n"
    with pytest.raises(SystemExit) as exited:  # argparse: exactly one target is required
        cli("offsets", "reset", name)
    assert exited.value.code == 2


# -- delete and errors ------------------------------------------------------------------------
def test_delete_and_errors(cli: Run, worker: RestWorker, tmp_path: Path, unique_name):
    name, topic = unique_name("src"), unique_name("topic")
    assert cli("connectors", "create", "-f", str(source_properties(tmp_path, name, topic)))[0] == 0
    assert cli("connectors", "delete", name) == (0, f"Deleted connector {name}\n", "")
    wait_for(lambda: name not in worker.http.get("/connectors").json(), 60, "the connector deleted")

    code, out, err = cli("connectors", "get", name)
    assert (code, out) == (1, "")
    assert err == f"error: Connector {name} not found (HTTP 404)\n"
    code, _, err = cli("connectors", "status", name)
    assert (code, err) == (1, f"error: No status found for connector {name} (HTTP 404)\n")
    code, _, err = cli("connectors", "delete", name)
    assert (code, err) == (1, f"error: Connector {name} not found (HTTP 404)\n")

    missing = tmp_path / "missing.properties"
    code, _, err = cli("connectors", "create", "-f", str(missing))
    assert (code, err) == (1, f"error: Connector config file not found: {missing}\n")

    # An invalid config: the server's first line, the rest indented.
    bad = tmp_path / "bad.properties"
    bad.write_text(f"name={unique_name('bad')}\nconnector.class=NoSuchConnector\n")
    code, _, err = cli("connectors", "create", "-f", str(bad))
    assert code == 1
    assert err.startswith("error: ") and "(HTTP 400)" in err.splitlines()[0]

    url = closed_port_url()
    code, out, err = cli("connectors", "list", url=url)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: cannot reach {url}: ")
    assert len(err.splitlines()) == 1


# -- the installed entry point ----------------------------------------------------------------
def test_entry_point_as_a_subprocess(worker: RestWorker, tmp_path: Path, unique_name):
    name, topic = unique_name("src"), unique_name("topic")
    props = source_properties(tmp_path, name, topic)
    env = {**os.environ, "CONNECTRT_URL": worker.url}
    created = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "connectors", "create", "-f", str(props)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout == f"Created connector {name} (source)\n"
    listed = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "connectors", "get", "nope-" + name],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 1
    assert listed.stderr == f"error: Connector nope-{name} not found (HTTP 404)\n"
    assert worker.http.get(f"/connectors/{name}").status_code == 200


# -- authentication ---------------------------------------------------------------------------
def test_basic_auth(
    broker: EmbeddedBroker,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    credentials = tmp_path / "credentials"
    credentials.write_text(f"alice:{hash_password('s3cret', iterations=1000)}\n")
    secured = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)},
    )
    try:
        monkeypatch.delenv("CONNECTRT_USER", raising=False)
        monkeypatch.delenv("CONNECTRT_TOKEN", raising=False)

        def run(*args: str) -> tuple[int, str, str]:
            capsys.readouterr()
            code = main(["connectors", "list", "--json", "--url", secured.url, *args])
            out, err = capsys.readouterr()
            return code, out, err

        assert run() == (1, "", "error: Unauthorized (HTTP 401)\n")
        assert run("--user", "alice:wrong") == (1, "", "error: Unauthorized (HTTP 401)\n")
        assert run("--user", "alice:s3cret") == (0, "{}\n", "")
        monkeypatch.setenv("CONNECTRT_USER", "alice:s3cret")
        assert run() == (0, "{}\n", "")
        monkeypatch.setenv("CONNECTRT_URL", secured.url)  # --url from the environment too
        capsys.readouterr()
        assert main(["connectors", "list"]) == 0
        assert capsys.readouterr().out.split() == ["NAME", "TYPE", "STATE", "TASKS"]
    finally:
        secured.stop()


def test_bearer_token_over_https(
    broker: EmbeddedBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    tokens = tmp_path / "tokens"
    tokens.write_text(hash_token("t0ken-abc") + "\n")
    secured = start_rest_worker(
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

        def run(*args: str) -> tuple[int, str, str]:
            capsys.readouterr()
            code = main(["connectors", "list", "--json", "--url", secured.url, *args])
            out, err = capsys.readouterr()
            return code, out, err

        ok = (0, "{}\n", "")
        assert run("--cacert", str(ca_file), "--token", "t0ken-abc") == ok
        assert run("--insecure", "--token", "t0ken-abc") == ok
        assert run("--cacert", str(ca_file), "--token", "wrong") == (
            1,
            "",
            "error: Unauthorized (HTTP 401)\n",
        )
        code, _, err = run("--token", "t0ken-abc")  # the system CAs do not trust it
        assert code == 1 and err.startswith(f"error: cannot reach {secured.url}: ")
        assert "CERTIFICATE_VERIFY_FAILED" in err
        code, _, err = run("--cacert", str(tmp_path / "none.pem"))
        assert code == 1 and err.startswith(f"error: cannot use CA file {tmp_path / 'none.pem'}")
    finally:
        secured.stop()


def test_auth_hash_password_and_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    def run(*args: str, stdin: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))  # not a terminal
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = run("auth", "hash-password", "alice", "--iterations", "1000", stdin="pa ss\n")
    assert (code, err) == (0, "")
    user, _, stored = out.strip().partition(":")
    assert user == "alice"
    scheme, iterations, salt, _digest = stored.split("$")
    assert (scheme, iterations, len(base64.b64decode(salt))) == ("pbkdf2_sha256", "1000", 16)
    assert _check_password("pa ss", stored)  # the trailing newline is not part of it
    assert not _check_password("pa ss\n", stored)
    authenticator = Authenticator("basic", users={"alice": stored})
    assert authenticator.check("Basic " + base64.b64encode(b"alice:pa ss").decode())
    assert not authenticator.check("Basic " + base64.b64encode(b"alice:pass").decode())

    code, out, _ = run("auth", "hash-password", stdin="pw\n")  # no user: the bare hash
    assert code == 0 and out.startswith("pbkdf2_sha256$200000$")
    assert _check_password("pw", out.strip())

    assert run("auth", "hash-password", "bob", stdin="\n") == (1, "", "error: Empty password\n")
    code, _, err = run("auth", "hash-password", "a:b", stdin="pw\n")
    assert code == 1 and "without ':'" in err

    code, out, _ = run("auth", "hash-token", stdin="t0ken-abc\n")
    assert code == 0
    assert out == hash_token("t0ken-abc") + "\n"
    assert out == "sha256:" + hashlib.sha256(b"t0ken-abc").hexdigest() + "\n"
    assert Authenticator("bearer", token_hashes={out.strip()}).check("Bearer t0ken-abc")
