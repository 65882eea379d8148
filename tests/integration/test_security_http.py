"""The REST listener as an attack surface, over real HTTP against running workers.

Two workers on the session broker: one with the default settings (REST auth off; a short body
timeout, 1 s, so a stalled body is seen quickly) and one with Basic auth on and
``access.control.allow.origin`` listing one origin. What is checked:

* request bodies must be ``application/json``: ``text/plain``, form and multipart bodies, and
  bodies without a type, get Kafka Connect's 415 on every route that reads a body, and change
  nothing; body-less writes (pause, restart...) sent without a type keep working;
* a write whose ``Origin`` is foreign gets 403 (also with auth on, before the credentials),
  ``Sec-Fetch-Site: cross-site`` likewise; the worker's own origin and a listed origin pass,
  the latter only with the methods ``access.control.allow.methods`` lists, with CORS headers;
* a body that does not arrive gets 408 after ``rest.request.body.timeout.ms``;
* logger names created through ``PUT /admin/loggers`` are bounded in length and number;
* a config the config topic cannot take gets 413, a 1 MiB name 400, each with the limit;
* a plugin whose ``config_def()`` or ``validate()`` raises gets 400 with the reason;
* after 300 wrong passwords, the right one is answered at normal speed, and the wrong ones
  are still slowed.
"""

from __future__ import annotations

import base64
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import median
from typing import Any

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.runtime.herder.loggers import MAX_CREATED
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

ALLOWED_ORIGIN = "http://console.example:9000"
USER = ("ops", "s3cret")
UNSUPPORTED = {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}
PACKAGE = f"raising_{uuid.uuid4().hex[:8]}"

_RAISING_PLUGINS = """
from connectrt.api import ConfigDef, SourceConnector, SourceTask


class _Base(SourceConnector):
    def version(self):
        return "1.0"

    def start(self, config):
        pass

    def stop(self):
        pass

    def task_class(self):
        return SourceTask

    def task_configs(self, max_tasks):
        return []

    def config_def(self):
        return ConfigDef()


class RaisingDefSource(_Base):
    def config_def(self):
        raise RuntimeError("config_def exploded")


class RaisingValidateSource(_Base):
    def validate(self, config):
        raise ValueError("validate exploded")
"""


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    plugins = tmp_path_factory.mktemp("plugins")
    (plugins / PACKAGE).mkdir()
    (plugins / PACKAGE / "__init__.py").write_text(_RAISING_PLUGINS)
    w = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.request.body.timeout.ms": "1000", "plugin.path": str(plugins)},
    )
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(scope="module")
def secured(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    credentials = tmp_path_factory.mktemp("auth") / "users"
    credentials.write_text(f"{USER[0]}:{hash_password(USER[1])}\n")  # the default cost
    w = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "rest.auth.type": "basic",
            "rest.auth.credentials.file": str(credentials),
            "access.control.allow.origin": ALLOWED_ORIGIN,
        },
    )
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(autouse=True)
def remove_connectors(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _source(tmp: Path, topic: str = "sec-topic") -> dict[str, str]:
    return {"connector.class": "FileStreamSource", "file": str(tmp / "in.txt"), "topic": topic}


def _create(w: RestWorker, name: str, config: dict[str, str], **kw: Any) -> None:
    response = w.http.post("/connectors", json={"name": name, "config": config}, **kw)
    assert response.status_code == 201, response.text


def _body_routes(name: str) -> list[tuple[str, str, dict[str, Any] | list[Any]]]:
    """Every route that reads a body, with a valid JSON body for it."""
    return [
        ("POST", "/connectors", {"name": f"{name}-new", "config": {"connector.class": "X"}}),
        ("PUT", f"/connectors/{name}/config", {"connector.class": "FileStreamSource"}),
        ("PATCH", f"/connectors/{name}/config", {"topic": "changed"}),
        ("PATCH", f"/connectors/{name}/offsets", {"offsets": []}),
        ("POST", f"/connectors/{name}/offsets/reset", {"to": "earliest"}),
        ("POST", f"/connectors/{name}/dlq/replay", {"dry_run": True}),
        ("PUT", "/connector-plugins/FileStreamSource/config/validate", {"topic": "t"}),
        ("PUT", "/admin/loggers/connectrt.sec_test", {"level": "ERROR"}),
    ]


def _bodyless_writes(name: str) -> list[tuple[str, str]]:
    return [
        ("PUT", f"/connectors/{name}/pause"),
        ("PUT", f"/connectors/{name}/resume"),
        ("PUT", f"/connectors/{name}/stop"),
        ("POST", f"/connectors/{name}/restart"),
        ("POST", f"/connectors/{name}/tasks/0/restart"),
        ("PUT", f"/connectors/{name}/topics/reset"),
        ("DELETE", f"/connectors/{name}/offsets"),
        ("DELETE", f"/connectors/{name}/dlq/replay"),
        ("DELETE", f"/connectors/{name}"),
    ]


def _unchanged(w: RestWorker, name: str, config: dict[str, str]) -> None:
    assert w.http.get("/connectors").json() == [name]
    assert w.http.get(f"/connectors/{name}/config").json() == {**config, "name": name}
    assert w.http.get("/admin/loggers/connectrt.sec_test").status_code == 404  # never created


# -- 415 ---------------------------------------------------------------------------------------
def test_non_json_bodies_get_415_on_every_route_that_reads_one(
    worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    name = unique_name("sec-415")
    config = _source(tmp_path)
    _create(worker, name, config)
    for method, path, body in _body_routes(name):
        raw = httpx.Request("POST", "http://x", json=body).content
        for headers, content in (
            ({"content-type": "text/plain"}, raw),
            ({"content-type": "text/plain;charset=UTF-8"}, raw),
            ({"content-type": "application/x-www-form-urlencoded"}, b"name=x&config=y"),
            ({"content-type": "multipart/form-data; boundary=b"}, b"--b--\r\n"),
            ({"content-type": "application/jsonp"}, raw),
            ({}, raw),  # no type at all (a browser's untyped Blob)
        ):
            response = worker.http.request(method, path, content=content, headers=headers)
            assert response.status_code == 415, (method, path, headers, response.text)
            assert response.json() == UNSUPPORTED
    _unchanged(worker, name, config)
    # The same bodies declared as JSON are served (checked on a harmless one).
    response = worker.http.put(
        "/connector-plugins/FileStreamSource/config/validate",
        content=b'{"topic": "t"}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200, response.text


def test_bodyless_writes_without_a_type_keep_working(
    worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    """As Kafka Connect's clients send them: no body, no Content-Type (or a form type with an
    empty body, as curl -d '' and htmx send them)."""
    name = unique_name("sec-bodyless")
    _create(worker, name, _source(tmp_path))
    assert worker.http.put(f"/connectors/{name}/pause").status_code == 202
    response = worker.http.put(
        f"/connectors/{name}/resume",
        content=b"",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 202
    assert worker.http.post(f"/connectors/{name}/restart").status_code in (202, 204)
    assert worker.http.delete(f"/connectors/{name}").status_code == 204


# -- 403 ---------------------------------------------------------------------------------------
def test_writes_from_a_foreign_origin_get_403_and_change_nothing(
    worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    name = unique_name("sec-403")
    config = _source(tmp_path)
    _create(worker, name, config)
    foreign = [
        {"origin": "http://evil.example"},
        {"origin": "null"},  # a sandboxed frame, a file:// page
        {"origin": worker.url.replace("127.0.0.1", "localhost")},  # another host name
        {"origin": "http://127.0.0.1:1"},  # another port
        {"sec-fetch-site": "cross-site"},  # a browser that sent no Origin
    ]
    for headers in foreign:
        for method, path, body in _body_routes(name):
            response = worker.http.request(method, path, json=body, headers=headers)
            assert response.status_code == 403, (method, path, headers, response.text)
            assert response.json()["error_code"] == 403
        for method, path in _bodyless_writes(name):
            response = worker.http.request(method, path, headers=headers)
            assert response.status_code == 403, (method, path, headers, response.text)
    _unchanged(worker, name, config)
    state = worker.http.get(f"/connectors/{name}/status").json()["connector"]["state"]
    assert state not in ("PAUSED", "STOPPED")
    # Reads are answered (a foreign page cannot read them), without CORS headers.
    response = worker.http.get("/connectors", headers={"origin": "http://evil.example"})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers
    # The worker's own origin is a browser on the console: it may write.
    own = {"origin": worker.url, "sec-fetch-site": "same-origin"}
    assert worker.http.put(f"/connectors/{name}/pause", headers=own).status_code == 202
    response = worker.http.put(f"/connectors/{name}/config", json=config, headers=own)
    assert response.status_code == 200, response.text


def test_listed_origins_may_use_the_api_with_the_listed_methods(
    secured: RestWorker, tmp_path: Path
) -> None:
    """``access.control.allow.origin`` as Kafka Connect applies it (Jetty's CrossOriginFilter,
    methods GET, POST, HEAD by default); auth still applies to the listed origin."""
    http = httpx.Client(base_url=secured.url, timeout=60)
    auth = httpx.BasicAuth(*USER)
    name = f"sec-cors-{uuid.uuid4().hex[:6]}"
    try:
        # The preflight carries no credentials and is answered before authentication.
        preflight = http.options(
            "/connectors",
            headers={
                "origin": ALLOWED_ORIGIN,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, authorization",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
        assert preflight.headers["access-control-allow-methods"] == "GET,POST,HEAD"
        assert preflight.headers["access-control-allow-credentials"] == "true"
        denied = http.options(
            "/connectors",
            headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
        )
        assert "access-control-allow-origin" not in denied.headers
        listed = {"origin": ALLOWED_ORIGIN}
        response = http.post(
            "/connectors", json={"name": name, "config": _source(tmp_path)}, headers=listed
        )
        assert response.status_code == 401  # a listed origin still needs credentials
        response = http.post(
            "/connectors",
            json={"name": name, "config": _source(tmp_path)},
            headers=listed,
            auth=auth,
        )
        assert response.status_code == 201, response.text
        assert response.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
        assert response.headers["vary"] == "Origin"
        # DELETE is not in access.control.allow.methods: refused for that origin.
        response = http.delete(f"/connectors/{name}", headers=listed, auth=auth)
        assert response.status_code == 403, response.text
        # A foreign origin is refused before its credentials are even checked.
        response = http.post(
            "/connectors",
            json={"name": "evil", "config": _source(tmp_path)},
            headers={"origin": "http://evil.example"},
        )
        assert response.status_code == 403
        assert http.get("/connectors", auth=auth).json() == [name]
    finally:
        http.delete(f"/connectors/{name}", auth=auth)
        http.close()


# -- 408 ---------------------------------------------------------------------------------------
def test_a_body_shorter_than_declared_gets_408(worker: RestWorker) -> None:
    host, port = worker.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(
            b"POST /connectors HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name": '
        )
        start = time.monotonic()
        received = b""
        while True:  # until the worker closes the connection
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        waited = time.monotonic() - start
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), received
    assert b"rest.request.body.timeout.ms" in body
    assert 0.9 <= waited < 30  # the 1 s timeout, not the client's patience
    assert worker.http.get("/connectors").json() == []


# -- loggers -----------------------------------------------------------------------------------
def test_logger_names_created_through_the_api_are_bounded(worker: RestWorker) -> None:
    response = worker.http.put(f"/admin/loggers/{'x' * 300}", json={"level": "INFO"})
    assert response.status_code == 400 and "256" in response.json()["message"]
    prefix = f"sec_cap_{uuid.uuid4().hex[:6]}"
    refused = None
    for i in range(MAX_CREATED + 1):
        response = worker.http.put(f"/admin/loggers/{prefix}.n{i}", json={"level": "INFO"})
        if response.status_code != 200:
            refused = (i, response)
            break
    assert refused is not None, "no bound on new logger names"
    count, response = refused
    assert count < MAX_CREATED
    assert response.status_code == 400
    assert f"{MAX_CREATED} this API may create" in response.json()["message"]
    # Existing loggers can still be set, and the listing stays small.
    assert worker.http.put(f"/admin/loggers/{prefix}.n0", json={"level": "WARN"}).status_code == 200
    listing = worker.http.get("/admin/loggers")
    assert listing.status_code == 200 and len(listing.content) < 1024 * 1024


# -- sizes -------------------------------------------------------------------------------------
def test_configs_and_names_the_config_topic_cannot_take_get_4xx(
    worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    big = {**_source(tmp_path), "pad": "x" * 1_500_000}  # under the 4 MiB request bound
    name = unique_name("sec-big")
    response = worker.http.post("/connectors", json={"name": name, "config": big})
    assert response.status_code == 413, response.text
    assert "at most 900000 bytes" in response.json()["message"]
    response = worker.http.put(f"/connectors/{name}/config", json=big)
    assert response.status_code == 413, response.text
    response = worker.http.post("/connectors", json={"name": "n" * 1024 * 1024, "config": {}})
    assert response.status_code == 400
    assert "at most 1024" in response.json()["message"]
    response = worker.http.put(f"/connectors/{'n' * 2000}/config", json=_source(tmp_path))
    assert response.status_code == 400 and "1024" in response.json()["message"]
    _create(worker, name, _source(tmp_path))
    response = worker.http.patch(f"/connectors/{name}/config", json={"pad": "x" * 1_500_000})
    assert response.status_code == 413, response.text
    assert worker.http.get(f"/connectors/{name}/config").json().get("pad") is None
    assert worker.http.get("/connectors").json() == [name]


# -- plugin code that raises -------------------------------------------------------------------
def test_plugin_config_code_that_raises_gets_400_with_the_reason(
    worker: RestWorker, tmp_path: Path
) -> None:
    cases = {
        f"{PACKAGE}.RaisingDefSource": "config_def exploded",
        f"{PACKAGE}.RaisingValidateSource": "validate exploded",
    }
    for cls, reason in cases.items():
        config = {"connector.class": cls, "topic": "t"}
        answers = [
            worker.http.post("/connectors", json={"name": "raising", "config": config}),
            worker.http.put("/connectors/raising/config", json=config),
            worker.http.put(f"/connector-plugins/{cls}/config/validate", json=config),
        ]
        if "Def" in cls:
            answers.append(worker.http.get(f"/connector-plugins/{cls}/config"))
        for response in answers:
            assert response.status_code == 400, (cls, response.request.url, response.text)
            assert reason in response.json()["message"]
    assert worker.http.get("/connectors").json() == []


# -- login back-off ----------------------------------------------------------------------------
def _basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"authorization": f"Basic {token}"}


def test_a_correct_password_is_answered_at_once_after_300_wrong_ones(secured: RestWorker) -> None:
    guard = secured.process.security.guard
    with httpx.Client(base_url=secured.url, timeout=120) as http:
        http.get("/health")

        def wrong(i: int) -> float:
            start = time.perf_counter()
            response = http.get("/connectors", headers=_basic(USER[0], f"guess-{i}"))
            assert response.status_code == 401
            return time.perf_counter() - start

        with ThreadPoolExecutor(32) as pool:  # from this one address, as behind a NAT
            durations = list(pool.map(wrong, range(300)))
        # The wrong ones were slowed: most waited the full 2 s bound.
        assert median(durations) >= 1.5, median(durations)
        assert guard.delay_for(f"user:{USER[0]}") == 2.0
        start = time.perf_counter()
        response = http.get("/connectors", headers=_basic(*USER))
        seconds = time.perf_counter() - start
        print(f"\nwrong: median {median(durations):.2f} s; right after 300 wrong: {seconds:.3f} s")
        assert response.status_code == 200
        # One PBKDF2 check (tens of ms on a quiet machine; 0.83 s was seen under load), not the
        # 2 s back-off: anything under three quarters of it did not wait for it.
        assert seconds < 1.5
        # ... and the account is still protected: the next wrong guess waits the bound.
        assert wrong(300) >= 2.0
    wait_for(lambda: guard.tracked >= 1, 5, "the failures to stay on record")
