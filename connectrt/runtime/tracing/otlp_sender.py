"""OTLP requests, already encoded, sent to the receiver over HTTP or gRPC.

The exporter process (:mod:`connectrt.runtime.tracing.exporter`) encodes its requests itself
(:mod:`connectrt.runtime.tracing.otlp_encoding`), so it sends bytes rather than SDK spans:
``POST <endpoint>/v1/traces`` with ``application/x-protobuf`` over one kept-alive connection
(:class:`~connectrt.runtime.tracing.http_post.PostConnection`: the standard library's
``http.client`` cost twice its CPU per request), or the gRPC method
``opentelemetry.proto.collector.trace.v1.TraceService/Export`` with the bytes as its message.
The standard variables apply as they do to the SDK's exporters: headers
(``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, else ``OTEL_EXPORTER_OTLP_HEADERS``), ``gzip``
compression (``..._COMPRESSION``), timeout in seconds (``..._TIMEOUT``, default 10) and a CA
certificate for HTTPS (``..._CERTIFICATE``). A request failing with a retryable status (HTTP 429,
502, 503, 504; gRPC UNAVAILABLE, RESOURCE_EXHAUSTED) or a connection error is tried up to three
times with a growing pause; a request that still fails is dropped and logged (at most once a
minute). A header the variables give that HTTP cannot carry (a control character in its name
or value) is left out, with a warning naming it (never its value).

A sender is used by one thread (the exporter process's main thread).
"""

from __future__ import annotations

import gzip
import logging
import os
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from connectrt.runtime.tracing.http_post import PostConnection, carriable

__all__ = ["otlp_sender"]

log = logging.getLogger(__name__)

_TRIES = 3
_GRPC_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _env(name: str, env: Mapping[str, str]) -> str:
    """``OTEL_EXPORTER_OTLP_TRACES_<name>``, else ``OTEL_EXPORTER_OTLP_<name>``, else ''."""
    return (
        env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}") or env.get(f"OTEL_EXPORTER_OTLP_{name}") or ""
    ).strip()


def _headers(env: Mapping[str, str]) -> dict[str, str]:
    """``k1=v1,k2=v2`` (values URL-encoded), as the OpenTelemetry variables give headers."""
    headers = {}
    for pair in _env("HEADERS", env).split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            name, text = key.strip().lower(), urllib.parse.unquote(value.strip())
            if not carriable(name, text):
                log.warning("OTLP header %r left out: HTTP cannot carry its name or value", name)
                continue
            headers[name] = text
    return headers


class _Failures:
    """Logs failed requests, at most once a minute."""

    def __init__(self) -> None:
        self.count = 0
        self._next = 0.0

    def failed(self, what: str) -> None:
        self.count += 1
        if time.monotonic() >= self._next:
            log.warning("OTLP export failed (%s); %d request(s) dropped so far", what, self.count)
            self._next = time.monotonic() + 60


class _Failed(NamedTuple):
    """One attempt the receiver did not take: why, and whether trying again may help."""

    what: str
    retryable: bool


class _Receiver(NamedTuple):
    """Where and how requests go, whatever the transport."""

    url: urllib.parse.SplitResult  # the OTLP base URL
    headers: dict[str, str]
    gzipped: bool
    timeout: float
    certificate: str  # a CA certificate file for HTTPS; '': the system's


_Attempt = Callable[[bytes], _Failed | None]  # one request; None: the receiver took it


def otlp_sender(
    endpoint: str, protocol: str, env: Mapping[str, str] | None = None
) -> Callable[[bytes], bool]:
    """A function sending one encoded ``ExportTraceServiceRequest`` to ``endpoint`` (the OTLP
    base URL) over ``protocol`` (``grpc`` or ``http/protobuf``); it returns whether the receiver
    took it."""
    env = os.environ if env is None else env
    receiver = _Receiver(
        urllib.parse.urlsplit(endpoint if "://" in endpoint else "http://" + endpoint),
        _headers(env),
        _env("COMPRESSION", env).lower() == "gzip",
        float(_env("TIMEOUT", env) or 10),
        _env("CERTIFICATE", env),
    )
    transport = _grpc_attempt if protocol == "grpc" else _http_attempt
    return _with_retries(transport(receiver), _Failures())


def _with_retries(attempt: _Attempt, failures: _Failures) -> Callable[[bytes], bool]:
    """A ``send`` making up to ``_TRIES`` ``attempt``s with a growing pause between them,
    stopping at the first one not worth retrying; a request that still fails is counted in
    ``failures``."""

    def send(body: bytes) -> bool:
        for n in range(_TRIES):
            failed = attempt(body)
            if failed is None:
                return True
            if not failed.retryable or n + 1 == _TRIES:
                failures.failed(failed.what)
                break
            time.sleep(0.5 * 2**n)
        return False

    return send


def _http_attempt(receiver: _Receiver) -> _Attempt:
    """``POST <base>/v1/traces`` over one kept-alive connection (a new one after an error)."""
    path = receiver.url.path.rstrip("/") + "/v1/traces"
    request_headers = {"Content-Type": "application/x-protobuf", **receiver.headers}
    if receiver.gzipped:
        request_headers["Content-Encoding"] = "gzip"
    context = None
    if receiver.url.scheme == "https":
        context = ssl.create_default_context(cafile=receiver.certificate or None)
    port = receiver.url.port or (443 if context is not None else 80)
    connection = PostConnection(
        receiver.url.hostname or "localhost", port, request_headers, receiver.timeout, context
    )

    def attempt(body: bytes) -> _Failed | None:
        try:
            status, text = connection.post(path, gzip.compress(body) if receiver.gzipped else body)
        except OSError as e:
            return _Failed(f"{type(e).__name__}: {e}", retryable=True)
        if 200 <= status < 300:
            return None
        return _Failed(f"HTTP {status}: {text[:200]!r}", retryable=status in (429, 502, 503, 504))

    return attempt


def _grpc_attempt(receiver: _Receiver) -> _Attempt:
    """The ``TraceService/Export`` method on one channel, the bytes as its message."""
    import grpc

    target = receiver.url.netloc
    if receiver.url.scheme == "https":
        root = Path(receiver.certificate).read_bytes() if receiver.certificate else None
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root))
    else:
        channel = grpc.insecure_channel(target)
    export = channel.unary_unary(_GRPC_METHOD)  # bytes in, bytes out: no (de)serializer
    metadata = list(receiver.headers.items())
    compression = grpc.Compression.Gzip if receiver.gzipped else None
    retryable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)

    def attempt(body: bytes) -> _Failed | None:
        try:
            export(body, timeout=receiver.timeout, metadata=metadata, compression=compression)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            return _Failed(f"gRPC {code}", retryable=code in retryable)
        return None

    return attempt
