"""ASGI middleware that answers 401 unless a request carries accepted credentials.

:class:`AuthMiddleware` wraps a whole listener app (outside FastAPI's own middleware), so every
route of every listener that :class:`~connectrt.listener.security.ListenerSecurity` wraps is
covered, including ones added later. ``open_paths`` (exact paths, e.g. ``/health``) pass
without credentials. Lifespan messages pass through; websockets are refused unless
authenticated.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from connectrt.listener.auth import Authenticator
from connectrt.listener.responses import send_error

__all__ = ["AuthMiddleware"]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class AuthMiddleware:
    """Checks ``Authorization`` with ``auth`` before ``app`` sees the request.

    Runs on the listener's event loop; holds no state of its own.
    """

    def __init__(self, app: ASGIApp, auth: Authenticator, open_paths: Collection[str] = ()) -> None:
        self.app = app
        self.auth = auth
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or not self.auth.enabled:
            await self.app(scope, receive, send)
            return
        if kind == "http" and scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        if self.auth.check(_header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send_error(send, 401, "Unauthorized", {"WWW-Authenticate": self.auth.challenge})
