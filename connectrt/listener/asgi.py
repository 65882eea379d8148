"""Raw ASGI helpers for middleware that reads headers and answers by itself.

Error bodies are Kafka Connect's ``{"error_code": <status>, "message": "..."}`` (Confluent's
schema registry uses the same shape for 401 and 413). Stateless; safe from any event loop.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from starlette.types import Scope, Send

__all__ = ["request_header", "send_error"]


def request_header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case) of an HTTP/websocket ``scope``."""
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def send_error(
    send: Send, status: int, message: str, headers: Mapping[str, str] | None = None
) -> None:
    """Send a complete JSON error response (``status`` doubles as the ``error_code``)."""
    body = orjson.dumps({"error_code": status, "message": message})
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})
