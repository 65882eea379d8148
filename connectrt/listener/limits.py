"""A bound on request bodies: HTTP 413 with Kafka Connect's error body, before the app sees it.

:class:`BodyLimitMiddleware` refuses a request whose ``Content-Length`` exceeds the bound
without reading it, and counts the bytes of a body sent without ``Content-Length`` (chunked)
as the app receives them: once past the bound, the app's ``receive`` raises
:class:`BodyTooLarge` (an ``HTTPException(413)``, so FastAPI treats it as a client error, not
a crash), whatever the app answers is dropped, and the middleware answers 413 itself. Nothing
is buffered here; the app reads the body as it would without the limit.

Stateless between requests; one instance serves a listener's event loop.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectrt.listener.asgi import request_header, send_error

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyLimitMiddleware", "BodyTooLarge"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` once a streamed body passes the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _message(limit))


def _message(limit: int) -> str:
    return f"Request body is larger than {limit} bytes (rest.request.max.bytes)"


class BodyLimitMiddleware:
    """Answers 413 to requests whose body exceeds ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = (request_header(scope, b"content-length") or "").strip()
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_error(send, 413, _message(self.max_bytes))
            return
        received = 0
        exceeded = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded and not started:
                return  # the app's answer to the overflow; ours replaces it
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not exceeded or started:
                raise
        if exceeded and not started:
            await send_error(send, 413, _message(self.max_bytes))
