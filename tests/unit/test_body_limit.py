"""BodyLimitMiddleware at its exact bound, over real HTTP (a registry app on a memory store)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectrt.listener.security import ListenerSecurity
from connectrt.listener.server import HttpServer
from connectrt.schema_registry.app import create_registry_app
from connectrt.schema_registry.store import MemorySchemaStore

LIMIT = 1000


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = create_registry_app(MemorySchemaStore())
    server = HttpServer(app, "http://127.0.0.1:0", security=ListenerSecurity(max_body_bytes=LIMIT))
    server.start()
    yield server.url
    server.stop()


def schema_body(size: int) -> bytes:
    """``{"schema": "\\"string\\"", "pad": "xx..."}`` of exactly ``size`` bytes."""
    head = b'{"schema": "\\"string\\"", "pad": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), 100):
        yield body[start : start + 100]


@pytest.mark.parametrize("stream", [False, True], ids=["content-length", "chunked"])
def test_the_bound_is_exact(url: str, stream: bool):
    at, over = schema_body(LIMIT), schema_body(LIMIT + 1)
    ok = httpx.post(f"{url}/subjects/s/versions", content=chunks(at) if stream else at)
    assert ok.status_code == 200, ok.text
    refused = httpx.post(f"{url}/subjects/s/versions", content=chunks(over) if stream else over)
    assert refused.status_code == 413
    assert refused.json() == {
        "error_code": 413,
        "message": f"Request body is larger than {LIMIT} bytes (rest.request.max.bytes)",
    }


def test_requests_without_a_body_are_untouched(url: str):
    assert httpx.get(f"{url}/subjects").status_code == 200


def _echo_length_answers(body: bytes) -> list[Message]:
    answer = str(len(body)).encode()
    length = [(b"content-length", str(len(answer)).encode())]
    return [
        {"type": "http.response.start", "status": 200, "headers": length},
        {"type": "http.response.body", "body": answer},
    ]


class _LateReader:
    """An ASGI app whose first ``receive`` comes after ``delay`` seconds of a blocked event
    loop (what a loaded machine does to a listener), then echoes the body's length."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        time.sleep(self.delay)  # blocks the loop: the deadline passes before the app reads
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        for answer in _echo_length_answers(body):
            await send(answer)


class _StalledWhileWaiting:
    """An ASGI app that asks for the body at once, after scheduling a callback that blocks the
    event loop for ``stall`` seconds: the body arrives in the socket while the loop is
    blocked, so when the loop runs again the body and the deadline are due together."""

    def __init__(self, stall: float) -> None:
        self.stall = stall

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        asyncio.get_running_loop().call_soon(time.sleep, self.stall)
        message = await receive()
        for answer in _echo_length_answers(message.get("body", b"")):
            await send(answer)


def _put_to(app: ASGIApp, body_after: float | None) -> bytes:
    """The raw answer of a listener running ``app`` (body timeout 0.2 s) to a PUT of a 17-byte
    body, sent with the headers (``body_after`` None) or that many seconds after them."""
    server = HttpServer(app, "http://127.0.0.1:0", security=ListenerSecurity(body_timeout=0.2))
    server.start()
    body = b'{"level": "INFO"}'
    head = (
        f"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        with socket.create_connection((server.host, server.port), timeout=30) as sock:
            if body_after is None:
                sock.sendall(head + body)
            else:
                sock.sendall(head)
                time.sleep(body_after)
                sock.sendall(body)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer
    finally:
        server.stop()


@pytest.mark.parametrize("split", [False, True], ids=["one-write", "body-after-headers"])
def test_a_body_that_arrived_is_served_when_the_app_reads_it_after_the_deadline(split: bool):
    """A complete body is not refused because a busy loop reached the app's first
    ``receive`` after ``rest.request.body.timeout.ms`` (a 408 seen under load): neither when
    the server read it with the headers, nor when it is still unread in the socket (sent
    after the headers, while the loop was blocked)."""
    # split: the server reads the headers, then the app blocks its loop for 0.6 s
    answer = _put_to(_LateReader(0.6), 0.3 if split else None)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert answer.endswith(b"\r\n\r\n17"), answer


def test_a_body_due_with_the_deadline_is_served():
    """A body that reached the socket before the deadline is read, even when a blocked loop
    sees it in the same turn as the deadline (timers ran first: a 408 in a loaded CI)."""
    # the app asks for the body and the loop blocks; the body is in the socket at 0.1 s,
    # before the deadline (0.2 s), and the loop runs again at 0.8 s
    answer = _put_to(_StalledWhileWaiting(0.8), 0.1)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert answer.endswith(b"\r\n\r\n17"), answer
