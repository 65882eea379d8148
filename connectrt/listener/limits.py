"""Bounds on request bodies, in size and in time, answered before the app sees a body.

:class:`BodyLimitMiddleware` enforces two bounds:

* size: a request whose ``Content-Length`` exceeds ``max_bytes`` is refused with 413 without
  being read; the bytes of a body sent without ``Content-Length`` (chunked) are counted as the
  app receives them, and once past the bound the app's ``receive`` raises
  :class:`BodyTooLarge`;
* time: the whole body must arrive within ``timeout`` seconds of the request's start
  (``rest.request.body.timeout.ms``); when the app asks for it after that (a loaded
  machine's busy event loop), what the client sent is still read, within
  :data:`LATE_GRACE_S`; a body the server has read when the deadline falls due is served
  (a blocked loop may see both in one turn); a client that declares a longer body than it
  sends, or trickles it, gets 408 once the time is up: the app's ``receive`` raises
  :class:`BodyTimedOut`, and the answer carries ``Connection: close`` so the server drops the
  half-read connection instead of waiting for the rest.

Both refusals are ``HTTPException`` subclasses, so FastAPI treats them as client errors, not
crashes; whatever the app answers is dropped, and the middleware answers with Kafka Connect's
error body itself. Once the body is complete, ``receive`` is passed through untouched (an app
may wait on it for the client's disconnect). Nothing is buffered here.

Stateless between requests; one instance serves a listener's event loop.
"""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectrt.listener.asgi import request_header, send_error

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "LATE_GRACE_S",
    "BodyLimitMiddleware",
    "BodyTimedOut",
    "BodyTooLarge",
]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_BODY_TIMEOUT = 30.0
LATE_GRACE_S = 0.5
"""When the app first asks for the body after the deadline, the time it is given from then."""


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` once a streamed body passes the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


class BodyTimedOut(HTTPException):
    """Raised from ``receive`` when the body has not arrived in time."""

    def __init__(self, timeout: float) -> None:
        super().__init__(408, _timed_out(timeout), {"Connection": "close"})


def _too_large(limit: int) -> str:
    return f"Request body is larger than {limit} bytes (rest.request.max.bytes)"


def _timed_out(timeout: float) -> str:
    return (
        f"The request body did not arrive within {timeout * 1000:.0f} ms "
        "(rest.request.body.timeout.ms)"
    )


async def _if_already_arrived(receive: Receive) -> Message | None:
    """The next message if the server has it already, else None (the pending call cancelled).

    The deadline and the body can fall due in the same turn of a blocked event loop: the loop
    reads the socket first, but the body's wake-up is queued behind the deadline's, which
    cancels the wait. The server keeps what it read (a cancelled ``receive`` consumes
    nothing), so one more call returns it without waiting: it is given one turn of the loop.
    """
    attempt = asyncio.ensure_future(receive())
    await asyncio.sleep(0)
    if attempt.done() and not attempt.cancelled():
        return attempt.result()
    attempt.cancel()  # ends on its own; awaiting it here could swallow this task's own cancel
    return None


class BodyLimitMiddleware:
    """Answers 413 to requests whose body exceeds ``max_bytes`` and 408 to requests whose body
    takes longer than ``timeout`` seconds to arrive (``None``: no time bound)."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = DEFAULT_MAX_BODY_BYTES,
        timeout: float | None = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = (request_header(scope, b"content-length") or "").strip()
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_error(send, 413, _too_large(self.max_bytes))
            return
        deadline_s = self.timeout or 0.0
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout is None else loop.time() + self.timeout
        received = 0
        complete = False
        refusal: HTTPException | None = None
        started = False
        late = False  # the deadline was moved once: the server, not the client, was late

        async def bounded_receive() -> Message:
            nonlocal received, complete, refusal, deadline, late
            if complete:
                return await receive()
            if deadline is None:
                message = await receive()
            else:
                if not late and loop.time() >= deadline:
                    # The app asks after the deadline (a busy loop): what the client sent may
                    # still be in the socket, unread by the server. It gets LATE_GRACE_S more,
                    # once: a client trickling its body gains at most that.
                    late = True
                    deadline = loop.time() + LATE_GRACE_S
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await receive()
                except TimeoutError:
                    arrived = await _if_already_arrived(receive)
                    if arrived is None:
                        refusal = BodyTimedOut(deadline_s)
                        raise refusal from None
                    message = arrived
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if received > self.max_bytes:
                    refusal = BodyTooLarge(self.max_bytes)
                    raise refusal
            else:
                complete = True  # a disconnect: nothing more will come
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refusal is not None and not started:
                return  # the app's answer to the refusal; ours replaces it
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, guarded_send)
        except Exception:
            if refusal is None or started:
                raise
        if refusal is not None and not started:
            await send_error(send, refusal.status_code, refusal.detail, refusal.headers)
