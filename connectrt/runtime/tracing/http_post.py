"""A kept-alive HTTP/1.1 connection that POSTs bodies and reads the answers: the transport of
the OTLP/HTTP sender (:mod:`connectrt.runtime.tracing.otlp_sender`).

Why not the standard library's ``http.client``: per request it makes a response object, a
buffered reader over the socket and an ``email`` message of the answer's headers. Measured
2026-11-30 (the exporter's requests of a sink tracing 1% of its records, about 700 KB each,
replayed to a receiver on loopback): sending through ``http.client`` cost 0.65-0.70 µs of CPU
per traced record, through this connection 0.32-0.35; that was a quarter of the exporter
process's work. What it does is the little an exporter needs: ``POST`` with a
``Content-Length`` over one connection (TLS when given a context), and an answer read by its
status line and headers, its body by ``Content-Length``, chunked, or up to the end of the
connection (closed then; as after ``Connection: close`` or an HTTP/1.0 answer without
keep-alive). An informational (1xx)
answer is skipped. A malformed answer, a closed connection or a timeout raises
:class:`OSError` and closes the connection; the next :meth:`PostConnection.post` opens a new one.

Header names and values are checked when the connection is made: one with a control character
(a CR or LF would let a value add headers of its own) is refused with :class:`ValueError`.

Used by one thread (the exporter process's main thread).
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Mapping

__all__ = ["MAX_ANSWER_BYTES", "HttpAnswerError", "PostConnection", "carriable"]

MAX_ANSWER_BYTES = 1 << 20
"""An answer's head or body past this size is refused (an OTLP answer is a few bytes)."""

_TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # a header name (RFC 9110 token)
_FIELD_VALUE = re.compile(rb"^[^\x00-\x08\x0a-\x1f\x7f]*$")  # no control but tab


class HttpAnswerError(OSError):
    """The server's answer is not HTTP this connection reads."""


def carriable(name: str, value: str) -> bool:
    """Whether an HTTP/1.1 request can carry the header ``name: value`` as it is (a token for
    its name; Latin-1 without control characters but tab for its value)."""
    try:
        raw_name, raw_value = name.encode("latin-1"), value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return bool(_TOKEN.match(raw_name) and _FIELD_VALUE.match(raw_value))


def _header_lines(headers: Mapping[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if not carriable(name, value):
            raise ValueError(f"an HTTP header {name!r} with a character it cannot carry")
        lines.append(name.encode("latin-1") + b": " + value.encode("latin-1") + b"\r\n")
    return b"".join(lines)


class PostConnection:
    """POSTs to one server over one kept-alive connection (see the module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        headers: Mapping[str, str],
        timeout: float,
        context: ssl.SSLContext | None = None,
    ) -> None:
        """``headers``: sent with every request (besides Host and Content-Length); ``timeout``:
        seconds for connecting and for each read or write; ``context``: TLS."""
        self._sock: socket.socket | None = None
        self._rest = b""
        self._address = (host, port)
        self._timeout = timeout
        self._context = context
        host_header = host if ":" not in host else f"[{host}]"  # an IPv6 literal
        default_port = 443 if context is not None else 80
        if port != default_port:
            host_header += f":{port}"
        self._head_fields = _header_lines({"Host": host_header, **headers})

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the next post opens a new one)."""
        sock, self._sock, self._rest = self._sock, None, b""
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` to ``path``: the answer's status and body. Raises :class:`OSError`
        (the connection is closed then)."""
        try:
            sock = self._sock or self._connect()
            head = b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n" % (
                path.encode("ascii"),
                self._head_fields,
                len(body),
            )
            if len(body) <= 16384:  # one write: no wait between a small head and its body
                sock.sendall(head + body)
            else:  # two writes: the body is not copied once more
                sock.sendall(head)
                sock.sendall(body)
            status, answer, keep = self._answer(sock)
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()
        return status, answer

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self._address, timeout=self._timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self._address[0])
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        return sock

    # -- the answer ----------------------------------------------------------------------------
    def _fill(self, sock: socket.socket, data: bytes) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            raise HttpAnswerError("the server closed the connection mid-answer")
        return data + chunk

    def _answer(self, sock: socket.socket) -> tuple[int, bytes, bool]:
        """(status, body, whether the connection stays open) of the next final answer."""
        while True:
            data = self._rest
            while b"\r\n\r\n" not in data:
                if len(data) > MAX_ANSWER_BYTES:
                    raise HttpAnswerError("an answer's head is over 1 MiB")
                data = self._fill(sock, data)
            head, _, data = data.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            parts = lines[0].split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise HttpAnswerError(f"not an HTTP answer: {lines[0][:80]!r}")
            status = int(parts[1])
            fields: dict[bytes, bytes] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(b":")
                if not sep:
                    raise HttpAnswerError(f"a malformed header line: {line[:80]!r}")
                fields[name.strip().lower()] = value.strip()
            self._rest = data
            if 100 <= status < 200:
                continue  # informational: the final answer follows
            connection = fields.get(b"connection", b"").lower()
            keep = (
                connection != b"close" if parts[0] == b"HTTP/1.1" else connection == b"keep-alive"
            )
            if status in (204, 304):
                return status, b"", keep
            if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
                return status, self._chunked(sock), keep
            length = fields.get(b"content-length")
            if length is not None:
                if not length.isdigit() or int(length) > MAX_ANSWER_BYTES:
                    raise HttpAnswerError(f"an answer's Content-Length of {length[:20]!r}")
                return status, self._exactly(sock, int(length)), keep
            return status, self._to_the_end(sock), False

    def _exactly(self, sock: socket.socket, n: int) -> bytes:
        data = self._rest
        while len(data) < n:
            data = self._fill(sock, data)
        self._rest = data[n:]
        return data[:n]

    def _line(self, sock: socket.socket) -> bytes:
        data = self._rest
        while b"\r\n" not in data:
            if len(data) > MAX_ANSWER_BYTES:
                raise HttpAnswerError("a chunk's size line is over 1 MiB")
            data = self._fill(sock, data)
        line, _, self._rest = data.partition(b"\r\n")
        return line

    def _chunked(self, sock: socket.socket) -> bytes:
        body = b""
        while True:
            size_text = self._line(sock).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpAnswerError(f"a chunk size of {size_text[:20]!r}") from None
            if size == 0:
                while self._line(sock):  # trailer fields, up to the empty line
                    pass
                return body
            if len(body) + size > MAX_ANSWER_BYTES:
                raise HttpAnswerError("a chunked answer over 1 MiB")
            body += self._exactly(sock, size)
            if self._line(sock):
                raise HttpAnswerError("a chunk not followed by its line end")

    def _to_the_end(self, sock: socket.socket) -> bytes:
        data = self._rest
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                self._rest = b""
                return data
            data += chunk
            if len(data) > MAX_ANSWER_BYTES:
                raise HttpAnswerError("an answer's body is over 1 MiB")
