"""The request body bound (rest.request.max.bytes, 4 MiB by default) on both listeners of a
running worker, over real HTTP: 413 with Kafka Connect's error body, whether the body declares
its Content-Length or streams without one."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import httpx
import orjson
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing.rest import RestWorker, start_rest_worker

pytestmark = pytest.mark.integration

USER = ("admin", "pw")
TOO_LARGE = {
    "error_code": 413,
    "message": "Request body is larger than 4194304 bytes (rest.request.max.bytes)",
}
MB20 = 20 * 1024 * 1024


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    credentials = tmp_path_factory.mktemp("limits") / "users"
    credentials.write_text(f"admin:{hash_password('pw', iterations=1000)}\n")
    running = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "rest.auth.type": "basic",
            "rest.auth.credentials.file": str(credentials),
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": f"schemas-{uuid.uuid4().hex[:8]}",
        },
    )
    running.http.auth = USER
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def no_connector_left(worker: RestWorker) -> Iterator[None]:
    """Whatever a test asserted, no connector outlives it: a refused body that was not refused
    (PUT /connectors/big/config) would otherwise run under the next tests."""
    yield
    worker.delete_connectors()


JSON = {"content-type": "application/json"}


def json_of_size(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes: {"connector.class": ..., "pad": "xxx..."}."""
    head = b'{"connector.class":"FileStreamSource","pad":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def streamed(body: bytes, chunk: int = 64 * 1024) -> Iterator[bytes]:
    """The body as a generator: httpx sends it chunked, without Content-Length."""
    for start in range(0, len(body), chunk):
        yield body[start : start + chunk]


def targets(w: RestWorker) -> list[tuple[str, str]]:
    registry = w.process.registry.url
    return [
        ("POST", f"{w.url}/connectors"),
        ("PUT", f"{w.url}/connectors/big/config"),
        ("PUT", f"{w.url}/connector-plugins/FileStreamSource/config/validate"),
        ("POST", f"{registry}/subjects/big-value/versions"),
        ("PUT", f"{registry}/config"),
    ]


def test_a_declared_body_over_the_bound_gets_413(worker: RestWorker):
    body = json_of_size(MB20)
    with httpx.Client(timeout=60, auth=USER) as http:
        for method, url in targets(worker):
            response = http.request(method, url, content=body, headers=JSON)
            assert response.status_code == 413, (url, response.text)
            assert response.json() == TOO_LARGE
        assert http.get(f"{worker.url}/connectors").json() == []  # the connection still serves


def test_a_streamed_body_over_the_bound_gets_413(
    worker: RestWorker, caplog: pytest.LogCaptureFixture
):
    body = json_of_size(MB20)
    with httpx.Client(timeout=60, auth=USER) as http:
        for method, url in targets(worker):
            response = http.request(method, url, content=streamed(body), headers=JSON)
            assert "content-length" not in response.request.headers
            assert response.request.headers["transfer-encoding"] == "chunked"
            assert response.status_code == 413, (url, response.text)
            assert response.json() == TOO_LARGE
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # a refusal, no crash


def test_a_body_under_the_bound_is_served(worker: RestWorker):
    body = json_of_size(3 * 1024 * 1024)
    url = f"{worker.url}/connector-plugins/FileStreamSource/config/validate"
    for content in (body, streamed(body)):
        response = worker.http.put(url, content=content, headers=JSON)
        assert response.status_code == 200, response.text
        assert orjson.loads(response.content)["name"] == "FileStreamSource"


def test_credentials_come_before_the_body(worker: RestWorker):
    body = json_of_size(MB20)
    for url in (f"{worker.url}/connectors", f"{worker.process.registry.url}/subjects/x/versions"):
        response = httpx.post(url, content=body, headers=JSON, timeout=60)
        assert response.status_code == 401
        assert response.json() == {"error_code": 401, "message": "Unauthorized"}
