"""Serving an ASGI app with uvicorn on a background thread (``listeners``).

Every app is served behind a :class:`~connectrt.listener.security.ListenerSecurity`, so the
worker's authentication covers each listener it opens.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

import uvicorn
from starlette.types import ASGIApp

from connectrt.errors import ConfigError, ConnectError
from connectrt.listener.security import ListenerSecurity

log = logging.getLogger(__name__)

__all__ = ["KEEP_ALIVE_S", "HttpServer", "parse_listener", "sibling_listener"]

KEEP_ALIVE_S = 30
"""How long an idle keep-alive connection is kept open (Kafka Connect's Jetty: 30 s). Longer
than clients keep theirs (httpx: 5 s): with uvicorn's default of 5 s both ends dropped a
connection at the same moment, and a client that sent a request on it just then got
"connection reset" (seen on a loaded machine)."""


def parse_listener(listener: str) -> tuple[str, str, int]:
    """``http://:8083`` -> ("http", "0.0.0.0", 8083); an empty host means all interfaces."""
    parts = urlsplit(listener.strip())
    if parts.scheme not in ("http", "https"):
        raise ConfigError(
            f"Invalid listener {listener}: the protocol must be http or https", "listeners"
        )
    try:
        port = parts.port if parts.port is not None else 8083
    except ValueError:
        raise ConfigError(f"Invalid listener {listener}: bad port", "listeners") from None
    return parts.scheme, parts.hostname or "0.0.0.0", port


def sibling_listener(listener: str, port: int) -> str:
    """The same protocol and host as ``listener`` on ``port``: ``http://:8083`` -> ``http://:8081``
    (an empty host stays empty: all interfaces, as for ``listener``)."""
    scheme, _, _ = parse_listener(listener)
    host = urlsplit(listener.strip()).hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


class HttpServer:
    """Runs ``app`` on ``listener`` behind ``security`` (default: no authentication), with
    ``open_paths`` served without credentials. ``start`` returns once the socket is bound (or
    raises ConnectError); ``stop`` shuts down gracefully. Not restartable."""

    def __init__(
        self,
        app: ASGIApp,
        listener: str,
        ssl: Mapping[str, str] | None = None,
        *,
        security: ListenerSecurity | None = None,
        open_paths: Collection[str] = (),
    ):
        self.scheme, self.host, self.port = parse_listener(listener)
        self.security = security or ListenerSecurity()
        ssl = ssl or {}
        if self.scheme == "https" and not (ssl.get("certfile") and ssl.get("keyfile")):
            raise ConfigError(
                "An https listener needs listeners.https.ssl.certificate.location and "
                "listeners.https.ssl.key.location",
                "listeners",
            )
        self._config = uvicorn.Config(
            self.security.wrap(app, open_paths),
            host=self.host,
            port=self.port,
            log_level="warning",
            access_log=False,
            ssl_certfile=ssl.get("certfile") if self.scheme == "https" else None,
            ssl_keyfile=ssl.get("keyfile") if self.scheme == "https" else None,
            timeout_graceful_shutdown=5,
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        self._server = uvicorn.Server(self._config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self, timeout: float = 15.0) -> None:
        self._thread = threading.Thread(target=self._server.run, name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise ConnectError(
                    f"The REST API could not listen on {self.host}:{self.port} (is the port in "
                    "use? set listeners=http://host:port)"
                )
            if time.monotonic() > deadline:
                raise ConnectError(f"The REST API did not start on {self.host}:{self.port}")
            time.sleep(0.02)
        if self.port == 0:  # an ephemeral port was asked for: report the one bound
            for server in self._server.servers:
                for sock in server.sockets:
                    self.port = sock.getsockname()[1]
        log.info("REST API listening on %s", self.url)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
