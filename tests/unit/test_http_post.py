"""The OTLP/HTTP transport (connectrt.runtime.tracing.http_post) against servers on loopback that
answer as HTTP servers may: kept-alive, chunked, informational answers first, HTTP/1.0 closing,
a body up to the end of the connection, TLS, and malformed answers."""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest

from connectrt.runtime.tracing.http_post import HttpAnswerError, PostConnection
from connectrt.runtime.tracing.otlp_sender import otlp_sender


class ScriptedServer:
    """Answers each request it reads (head and Content-Length body) with the next scripted
    answer (bytes; after one ending in ``CLOSE`` it closes the connection). Records the
    requests and counts the connections."""

    CLOSE = b"<close>"

    def __init__(self, answers: list[bytes], context: ssl.SSLContext | None = None) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self._context = context
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            if self._context is not None:
                try:
                    conn = self._context.wrap_socket(conn, server_side=True)
                except (OSError, ssl.SSLError):
                    conn.close()
                    continue
            with conn:
                self._one_connection(conn)

    def _one_connection(self, conn: socket.socket) -> None:
        data = b""
        while self.answers:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, data = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(data) < length:
                data += conn.recv(65536)
            self.requests.append((head, data[:length]))
            data = data[length:]
            answer = self.answers.pop(0)
            closing = answer.endswith(self.CLOSE)
            conn.sendall(answer.removesuffix(self.CLOSE))
            if closing:
                return

    def close(self) -> None:
        self._server.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture
def scripted() -> Any:
    servers: list[ScriptedServer] = []

    def make(answers: list[bytes], context: ssl.SSLContext | None = None) -> ScriptedServer:
        servers.append(ScriptedServer(answers, context))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_posts_go_over_one_kept_alive_connection_with_their_headers(scripted: Any) -> None:
    server = scripted([OK, OK, OK])
    connection = PostConnection("127.0.0.1", server.port, {"X-Key": "v"}, 10)
    big = bytes(range(256)) * 400  # over the one-write size: head and body written apart
    assert connection.post("/v1/traces", b"abc") == (200, b"ok")
    assert connection.post("/v1/traces", big) == (200, b"ok")
    assert connection.post("/v1/traces", b"") == (200, b"ok")
    connection.close()
    assert server.connections == 1
    head, body = server.requests[0]
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/traces HTTP/1.1"
    assert b"X-Key: v" in lines and f"Host: 127.0.0.1:{server.port}".encode() in lines
    assert b"Content-Length: 3" in lines and body == b"abc"
    assert server.requests[1][1] == big and server.requests[2][1] == b""


@pytest.mark.parametrize(
    ("answer", "status", "body", "connections"),
    [
        (b"HTTP/1.1 100 Continue\r\n\r\n" + OK, 200, b"ok", 1),  # informational first
        (  # chunked, with an extension and a trailer
            b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;x=y\r\nbus\r\n1\r\ny\r\n0\r\nTrailer: t\r\n\r\n",
            503,
            b"busy",
            1,
        ),
        (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", 1),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, b"x", 2),  # 1.0: closes
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 200, b"x", 2),
        (b"HTTP/1.1 400 Bad\r\n\r\nto the end" + ScriptedServer.CLOSE, 400, b"to the end", 2),
    ],
)
def test_answers_are_read_as_http_servers_write_them(
    scripted: Any, answer: bytes, status: int, body: bytes, connections: int
) -> None:
    server = scripted([answer, OK])
    connection = PostConnection("127.0.0.1", server.port, {}, 10)
    assert connection.post("/p", b"1") == (status, body)
    assert connection.post("/p", b"2") == (200, b"ok")  # the next answer, read whole
    connection.close()
    assert server.connections == connections


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # closed mid-body
        b"HTTP/1.1 200 OK\r\n",  # closed before the head ends
    ],
)
def test_a_malformed_answer_is_an_oserror_and_the_next_post_connects_again(
    scripted: Any, answer: bytes
) -> None:
    server = scripted([answer + ScriptedServer.CLOSE, OK])
    connection = PostConnection("127.0.0.1", server.port, {}, 10)
    with pytest.raises(HttpAnswerError):
        connection.post("/p", b"1")
    assert connection.post("/p", b"2") == (200, b"ok")
    connection.close()
    assert server.connections == 2


def test_a_header_http_cannot_carry_is_refused_and_the_sender_leaves_it_out(
    scripted: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ValueError):
        PostConnection("127.0.0.1", 1, {"X-Key": "v\r\nInjected: yes"}, 10)
    with pytest.raises(ValueError):
        PostConnection("127.0.0.1", 1, {"X Key": "v"}, 10)
    server = scripted([OK])
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "good=1,evil=s3cret%0D%0AInjected: yes"}
    with caplog.at_level(logging.WARNING):
        send = otlp_sender(f"http://127.0.0.1:{server.port}", "http/protobuf", env)
    assert send(b"body")
    head = server.requests[0][0]
    assert b"good: 1" in head and b"Injected" not in head and b"evil" not in head
    assert "evil" in caplog.text and "s3cret" not in caplog.text


def test_the_sender_posts_over_tls_to_a_server_its_ca_signed(scripted: Any, tmp_path: Path) -> None:
    from connectrt.testing.certs import make_pki

    pki = make_pki(tmp_path / "pki")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.folder / "server.crt", pki.folder / "server.key")
    server = scripted([OK, OK], context)
    env = {"OTEL_EXPORTER_OTLP_CERTIFICATE": str(pki.ca)}
    assert otlp_sender(f"https://localhost:{server.port}", "http/protobuf", env)(b"sealed")
    assert server.requests[0][1] == b"sealed"
    wrong = {"OTEL_EXPORTER_OTLP_CERTIFICATE": str(pki.other_ca), "OTEL_EXPORTER_OTLP_TIMEOUT": "5"}
    assert not otlp_sender(f"https://localhost:{server.port}", "http/protobuf", wrong)(b"x")
    assert len(server.requests) == 1  # a server another CA signed got nothing
