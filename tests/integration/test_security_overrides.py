"""Client overrides that would make the worker run, load, fetch or read, over real HTTP.

A running worker with the default override policy (``All``), its REST API without
authentication (and, in one test, with basic authentication: the rules bind authenticated
callers too). Each dangerous librdkafka key, given as ``producer.override.``,
``consumer.override.`` and ``admin.override.``, is refused with 400 by create, update and (per
field) by validate, naming the key and never its value, and nothing happens: a kinit command or
a shared library that would create a marker file never runs (the library is real: loaded here
outside the worker, it does create its marker), an OIDC token endpoint served by a local HTTP
server is never requested (while the one URL the worker lists is), a FIFO named as a CA file is
never opened (while one inside the listed directory is).
"""

from __future__ import annotations

import errno
import http.server
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing.rest import RestWorker, running_rest_worker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

DATAGEN = "io.confluent.kafka.connect.datagen.DatagenConnector"
PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")


class _CountingServer:
    """A local HTTP server counting the requests per path (any method); answers 500."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def _count(self) -> None:
                hits[self.path] += 1
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = _count

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def token_server() -> Iterator[_CountingServer]:
    server = _CountingServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def allowed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("client-tls")


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, token_server: _CountingServer, allowed_dir: Path
) -> Iterator[RestWorker]:
    # The default override policy (All); one URL and one directory listed, so that the tests
    # can show what an allowed override does, which the refused ones never do.
    with running_rest_worker(
        broker.bootstrap_servers,
        **{
            "connector.client.config.override.allowed.urls": f"{token_server.url}/allowed",
            "connector.client.config.override.allowed.directories": str(allowed_dir),
        },
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "worker" in request.fixturenames:
        request.getfixturevalue("worker").delete_connectors()


def _datagen(topic: str, **overrides: str) -> dict[str, str]:
    return {
        "connector.class": DATAGEN,
        "kafka.topic": topic,
        "quickstart": "orders",
        "iterations": "1",
        "max.interval": "1000",
        "tasks.max": "1",
        **overrides,
    }


def _assert_refused_everywhere(
    worker: RestWorker, name: str, config: dict[str, str], key: str, secrets: tuple[str, ...]
) -> None:
    """``key`` of ``config`` is refused by create, update and validate; no error message quotes
    any of ``secrets`` (validate lists each value as written, as Kafka's does, but its errors do
    not quote them); nothing is stored."""
    created = worker.http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 400, created.text
    assert key in created.json()["message"], created.text
    validated = worker.http.put(
        f"/connector-plugins/{DATAGEN}/config/validate", json={**config, "name": name}
    )
    assert validated.status_code == 200, validated.text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated.json()["configs"]}
    assert errors[key] and all(key.split(".override.", 1)[1] in e for e in errors[key]), errors
    updated = worker.http.put(f"/connectors/{name}/config", json=config)
    assert updated.status_code == 400, updated.text
    assert worker.http.get(f"/connectors/{name}").status_code == 404
    for answer in (created.text, updated.text, str(errors)):
        for secret in secrets:
            assert secret not in answer


def _compile_marker_library(directory: Path, marker: Path) -> Path | None:
    """A shared library whose constructor creates ``marker``; None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    source = directory / f"{marker.stem}.c"
    source.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void touch_marker(void) {\n"
        f'  FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n'
        "}\n"
    )
    library = directory / f"{marker.stem}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


# --- commands, libraries, callbacks --------------------------------------------------------


def test_command_and_library_keys_are_refused_and_never_run(
    worker: RestWorker, tmp_path: Path, unique_name, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)
    marker = tmp_path / "ran-in-worker"
    library = _compile_marker_library(tmp_path, marker)
    if library is not None:
        # The library does what it says when something loads it (here, outside the worker).
        control = tmp_path / "control"
        control_library = _compile_marker_library(tmp_path, control)
        assert control_library is not None
        subprocess.run(
            [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(control_library)!r})"],
            check=True,
        )
        assert control.exists()
    so_path = str(library or tmp_path / "missing.so")
    touch = f"touch {marker}"
    gssapi = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}
    cases: list[tuple[str, str, dict[str, str]]] = [
        ("sasl.kerberos.kinit.cmd", touch, gssapi),
        ("sasl.kerberos.principal", f"x; {touch}", gssapi),
        ("plugin.library.paths", so_path, {}),
        ("ssl.engine.location", so_path, {"security.protocol": "SSL"}),
        ("ssl.providers", so_path, {"security.protocol": "SSL"}),
        ("oauth_cb", "os.system", {}),
        ("error_cb", "os.system", {}),
    ]
    for prefix in PREFIXES:
        for key, value, companions in cases:
            config = _datagen(
                unique_name("t"),
                **{prefix + key: value},
                **{prefix + k: v for k, v in companions.items()},
            )
            _assert_refused_everywhere(worker, unique_name("c"), config, prefix + key, (touch,))
    time.sleep(2)  # anything started asynchronously would have run by now
    assert not marker.exists()
    assert touch not in caplog.text


# --- URLs -----------------------------------------------------------------------------------


def _oidc(prefix: str, url: str) -> dict[str, str]:
    return {
        prefix + "security.protocol": "SASL_PLAINTEXT",
        prefix + "sasl.mechanism": "OAUTHBEARER",
        prefix + "sasl.oauthbearer.method": "oidc",
        prefix + "sasl.oauthbearer.client.id": "connector",
        prefix + "sasl.oauthbearer.client.secret": "client-secret",
        prefix + "sasl.oauthbearer.token.endpoint.url": url,
    }


def test_a_token_endpoint_url_is_never_fetched_unless_the_worker_lists_it(
    worker: RestWorker,
    token_server: _CountingServer,
    unique_name,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO)
    # Credentials in the URL, as a URL may hold: never echoed.
    forbidden = token_server.url.replace("http://", "http://user:pw-in-url@") + "/forbidden"
    for prefix in PREFIXES:
        key = prefix + "sasl.oauthbearer.token.endpoint.url"
        config = _datagen(unique_name("t"), **_oidc(prefix, forbidden))
        _assert_refused_everywhere(
            worker, unique_name("c"), config, key, ("pw-in-url", "/forbidden")
        )
        imds = _datagen(
            unique_name("t"),
            **{prefix + "sasl.oauthbearer.metadata.authentication.type": "azure_imds"},
        )
        _assert_refused_everywhere(
            worker,
            unique_name("c"),
            imds,
            prefix + "sasl.oauthbearer.metadata.authentication.type",
            (),
        )
    time.sleep(2)
    assert token_server.hits["/forbidden"] == 0
    assert "pw-in-url" not in caplog.text

    # The listed URL is accepted, and the task's producer does fetch it: the server would have
    # counted a forbidden fetch the same way.
    name = unique_name("c")
    config = _datagen(
        unique_name("t"), **_oidc("producer.override.", f"{token_server.url}/allowed")
    )
    created = worker.http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    wait_for(
        lambda: token_server.hits["/allowed"] > 0,
        90,
        "the task's producer to request the allowed token endpoint",
    )
    assert token_server.hits["/forbidden"] == 0


# --- files ----------------------------------------------------------------------------------


def _reader_opened(fifo: Path) -> bool:
    """Whether something has ``fifo`` open for reading (or is blocked opening it); if so, it is
    given an invalid certificate and end of file, so it fails instead of waiting."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return False
        raise
    try:
        os.write(fd, b"not a certificate\n")
    finally:
        os.close(fd)
    return True


FILE_CASES = (
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.keystore.location",
    "ssl.crl.location",
    "https.ca.location",
    "sasl.kerberos.keytab",
    "sasl.oauthbearer.assertion.private.key.file",
)


def test_files_outside_the_listed_directory_are_refused_and_never_opened(
    worker: RestWorker, allowed_dir: Path, tmp_path: Path, unique_name
):
    outside = tmp_path / "not-listed"
    outside.mkdir()
    fifo = outside / "ca.pem"
    os.mkfifo(fifo)
    escape = allowed_dir / "escape.pem"
    if not escape.exists():
        os.symlink(fifo, escape)
    for prefix in PREFIXES:
        for key in FILE_CASES:
            dot_dot = allowed_dir / os.path.relpath(fifo, allowed_dir)
            for path in (fifo, escape, dot_dot):
                config = _datagen(
                    unique_name("t"),
                    **{prefix + "security.protocol": "SSL", prefix + key: str(path)},
                )
                _assert_refused_everywhere(
                    worker, unique_name("c"), config, prefix + key, (str(path),)
                )
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert not _reader_opened(fifo), "the worker opened a file it was refused"
        time.sleep(0.2)

    # Inside the listed directory the same override is accepted, and the task's producer does
    # open the file: the FIFO would have shown a refused read the same way. librdkafka opens it
    # holding the GIL, so the in-process worker (and this test) wait until a writer comes: the
    # writer is a separate process.
    inside = allowed_dir / "listed-ca.pem"
    os.mkfifo(inside)
    opened = tmp_path / "opened"
    writer = subprocess.Popen([sys.executable, "-c", _FIFO_WRITER, str(inside), str(opened)])
    try:
        name = unique_name("c")
        config = _datagen(
            unique_name("t"),
            **{
                "producer.override.security.protocol": "SSL",
                "producer.override.ssl.ca.location": str(inside),
            },
        )
        created = worker.http.post("/connectors", json={"name": name, "config": config})
        assert created.status_code == 201, created.text
        wait_for(opened.exists, 90, "the task's producer to open the listed CA file")
    finally:
        writer.kill()
        writer.wait(30)
        inside.unlink()


_FIFO_WRITER = """
import errno, os, sys, time
fifo, opened = sys.argv[1], sys.argv[2]
while True:  # answers every reader with an invalid certificate and end of file, until killed
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno != errno.ENXIO:
            raise
        time.sleep(0.05)
        continue
    os.write(fd, b"not a certificate\\n")
    os.close(fd)
    open(opened, "a").close()
"""


# --- with REST authentication --------------------------------------------------------------


def test_authenticated_callers_are_refused_the_same(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    credentials = tmp_path / "users"
    credentials.write_text(f"admin:{hash_password('pw', iterations=1000)}\n")
    marker = tmp_path / "marker"
    secured = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)},
    )
    try:
        secured.http.auth = ("admin", "pw")
        config = _datagen(
            unique_name("t"),
            **{
                "consumer.override.sasl.kerberos.kinit.cmd": f"touch {marker}",
                "admin.override.ssl.key.location": "/etc/hostname",
            },
        )
        name = unique_name("c")
        r = secured.http.post("/connectors", json={"name": name, "config": config})
        assert r.status_code == 400, r.text
        message = r.json()["message"]
        assert "2 error(s)" in message
        assert "consumer.override.sasl.kerberos.kinit.cmd" in message
        assert "admin.override.ssl.key.location" in message
        assert str(marker) not in message and "/etc/hostname" not in message
        assert secured.http.get(f"/connectors/{name}").status_code == 404
        assert not marker.exists()
    finally:
        secured.stop()
