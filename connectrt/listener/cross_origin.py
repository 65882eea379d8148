"""Cross-origin requests: Kafka Connect's CORS settings, and no state change from a foreign page.

A web page the user opens can send requests to a worker on their machine (``127.0.0.1:8083``):
the browser does not let the page read the answers, but a POST, PUT or DELETE still reaches the
worker. :class:`CrossOriginMiddleware` refuses such writes, and answers CORS as Kafka Connect's
REST server does (Jetty's ``CrossOriginFilter``, installed when ``access.control.allow.origin``
is set):

* ``access.control.allow.origin``: a comma-separated list of origins (``scheme://host[:port]``)
  allowed to use the API from a browser; ``*`` allows any, and ``*`` inside an entry matches
  any characters (``https://*.example.com``). Empty (the default): only the worker's own origin.
* ``access.control.allow.methods``: the methods allowed cross-origin (default ``GET,POST,HEAD``,
  Jetty's default).

For a request whose ``Origin`` is allowed, answers carry ``Access-Control-Allow-Origin`` (the
origin), ``Access-Control-Allow-Credentials: true`` and ``Vary: Origin``; a preflight
(``OPTIONS`` with ``Access-Control-Request-Method``) from an allowed origin for an allowed method
is answered 200 with ``Access-Control-Allow-Methods``, ``-Headers`` and ``-Max-Age`` (1800 s),
before authentication (a browser sends a preflight without credentials). Beyond Kafka Connect,
which only adds headers, a state-changing request (POST, PUT, PATCH, DELETE) is refused with
403 and Kafka Connect's error body when

* its ``Origin`` is present and is neither the worker's own origin (the request's scheme and
  ``Host``) nor an allowed one, or the method is not an allowed one; or
* it has no ``Origin`` but ``Sec-Fetch-Site: cross-site`` (a browser sent it from another site).

Clients that are not browsers (curl, the CLI, other workers) send neither header and are not
affected. Reads are never refused here: a foreign page cannot read their answers.

Immutable after construction; one instance may serve several event loops at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectrt.listener.asgi import request_header, send_error

__all__ = ["CrossOriginMiddleware", "CrossOriginPolicy"]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_ALLOWED_METHODS = ("GET", "POST", "HEAD")
# Jetty's CrossOriginFilter defaults, and Authorization for a worker with rest.auth.type set.
ALLOWED_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin", "Authorization")
PREFLIGHT_MAX_AGE = "1800"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _normalize(origin: str) -> str:
    """``Scheme://host:port`` in lower case with the default port made explicit, so that
    ``http://Example.com`` and ``http://example.com:80`` compare equal."""
    scheme, sep, rest = origin.strip().partition("://")
    if not sep:
        return origin.strip().lower()
    scheme, rest = scheme.lower(), rest.lower().rstrip("/")
    if rest.startswith("["):  # an IPv6 literal: [::1]:8083
        host, _, tail = rest.partition("]")
        host += "]"
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = rest.partition(":")
    if not port and scheme in _DEFAULT_PORTS:
        port = str(_DEFAULT_PORTS[scheme])
    return f"{scheme}://{host}:{port}" if port else f"{scheme}://{host}"


@dataclass(frozen=True)
class CrossOriginPolicy:
    """Which foreign origins may use the API and with which methods (see the module doc)."""

    allowed_origins: tuple[str, ...] = ()
    allowed_methods: tuple[str, ...] = DEFAULT_ALLOWED_METHODS

    @classmethod
    def from_settings(cls, origins: str | None, methods: str | None) -> CrossOriginPolicy:
        """From ``access.control.allow.origin`` and ``access.control.allow.methods``."""
        listed = tuple(o.strip() for o in (origins or "").split(",") if o.strip())
        verbs = tuple(m.strip().upper() for m in (methods or "").split(",") if m.strip())
        return cls(listed, verbs or DEFAULT_ALLOWED_METHODS)

    @property
    def any_origin(self) -> bool:
        return "*" in self.allowed_origins

    def allows_origin(self, origin: str) -> bool:
        """Whether ``origin`` is listed in ``access.control.allow.origin``."""
        if self.any_origin:
            return True
        wanted = _normalize(origin)
        for entry in self.allowed_origins:
            if "*" in entry:
                pattern = ".*".join(re.escape(part) for part in entry.lower().split("*"))
                if re.fullmatch(pattern, origin.strip().lower()):
                    return True
            elif _normalize(entry) == wanted:
                return True
        return False

    def allows_method(self, method: str) -> bool:
        return method.upper() in self.allowed_methods


def own_origin(scope: Scope) -> str | None:
    """The origin the request was addressed to: its scheme and ``Host`` header."""
    host = request_header(scope, b"host")
    if not host:
        return None
    return _normalize(f"{scope.get('scheme', 'http')}://{host.strip()}")


class CrossOriginMiddleware:
    """Puts ``policy`` in front of ``app``; see the module docstring."""

    def __init__(self, app: ASGIApp, policy: CrossOriginPolicy | None = None) -> None:
        self.app = app
        self.policy = policy or CrossOriginPolicy()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"].upper()
        origin = request_header(scope, b"origin")
        same = origin is not None and _normalize(origin) == own_origin(scope)
        listed = origin is not None and not same and self.policy.allows_origin(origin)
        preflight = method == "OPTIONS" and request_header(scope, b"access-control-request-method")
        if listed and preflight:
            assert origin is not None
            await self._preflight(scope, origin, send)
            return
        if method in WRITE_METHODS:
            refusal = self._refusal(scope, method, origin, same, listed)
            if refusal is not None:
                await send_error(send, 403, refusal)
                return
        if not listed:
            await self.app(scope, receive, send)
            return
        assert origin is not None
        headers = self._cors_headers(origin)

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *headers]}
            await send(message)

        await self.app(scope, receive, with_cors)

    def _refusal(
        self, scope: Scope, method: str, origin: str | None, same: bool, listed: bool
    ) -> str | None:
        """Why a write is refused, or None to serve it."""
        if origin is None:
            if request_header(scope, b"sec-fetch-site") == "cross-site":
                return "Cross-site request refused: a browser sent it from another site"
            return None
        if same:
            return None
        if not listed:
            return (
                f"Cross-origin request from {origin} refused: only the worker's own origin and "
                "the origins in access.control.allow.origin may change anything"
            )
        if not self.policy.allows_method(method):
            return (
                f"Cross-origin {method} from {origin} refused: the method is not in "
                "access.control.allow.methods"
            )
        return None

    def _cors_headers(self, origin: str) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-credentials", b"true"),
        ]
        if not self.policy.any_origin:
            headers.append((b"vary", b"Origin"))
        return headers

    async def _preflight(self, scope: Scope, origin: str, send: Send) -> None:
        requested = (request_header(scope, b"access-control-request-method") or "").strip()
        asked = request_header(scope, b"access-control-request-headers") or ""
        allowed_headers = {h.lower() for h in ALLOWED_HEADERS}
        wanted = [h.strip() for h in asked.split(",") if h.strip()]
        headers: list[tuple[bytes, bytes]] = []
        if self.policy.allows_method(requested) and all(
            h.lower() in allowed_headers for h in wanted
        ):
            headers = [
                *self._cors_headers(origin),
                (b"access-control-max-age", PREFLIGHT_MAX_AGE.encode()),
                (b"access-control-allow-methods", ",".join(self.policy.allowed_methods).encode()),
                (b"access-control-allow-headers", ",".join(ALLOWED_HEADERS).encode()),
            ]
        # Without the headers the browser refuses the actual request (Jetty answers the same).
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*headers, (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})
