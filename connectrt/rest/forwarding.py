"""A standby worker forwards connector requests to its cluster's leader.

In a standby cluster (``standby.enable=true``) only the leader runs connectors. A request under
``/connectors`` that reaches a standby is sent on to the leader, as Kafka Connect followers do,
and the leader's answer (status, body, ``Content-Type``, ``Retry-After``, ``Location``) is
returned as is:

* **Where to.** Only to the leader URL learned from the leadership group
  (:attr:`Leadership.leader_url`, the advertised URL of the member holding the leadership
  partition). Nothing of the request chooses the target (not its ``Host``, not a header, not a
  parameter): the standby is no open proxy.
* **Authentication.** The caller's ``Authorization`` header is forwarded, so the leader checks
  the same credentials (its listener's authentication applies). Credentials that are not a
  header (a TLS client certificate) cannot be forwarded: such clients must call the leader.
* **Reads from the topics.** ``GET /connectors`` (with ``expand=status``/``info``),
  ``GET /connectors/{name}``, ``.../config`` and ``.../status`` are answered by the standby
  itself from its copy of the config and status topics
  (:class:`~connectrt.runtime.herder.standby_reads.StandbyReads`), as Kafka Connect followers
  do, when it has one; they lag the leader by up to a second.
* **Hand-over.** With no leader known, an unreachable leader, or a request that was already
  forwarded once (header ``X-Connectrt-Forwarded``: it reached a worker that is no longer the
  leader), the answer is 409 with Kafka Connect's rebalance message; the client retries.

``GET /leader`` answers who leads (``role`` of this worker, ``worker_url``, ``leader_url``) on
every worker, standby cluster or not. ``GET /health`` on a standby answers 200 (it is healthy
and ready to take over) instead of the herder's "starting".

Stateless; runs on the listener's event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import parse_qs

import httpx
import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectrt.errors import NotFoundError
from connectrt.listener.asgi import request_header, send_error
from connectrt.rest import models as m
from connectrt.rest.readiness import gated
from connectrt.runtime.herder.standby_reads import StandbyReads

__all__ = [
    "FORWARDED_HEADER",
    "REBALANCE_MESSAGE",
    "LeaderForwarding",
    "LeadershipView",
    "local_read",
]

FORWARDED_HEADER = "X-Connectrt-Forwarded"
REBALANCE_MESSAGE = (
    "Cannot complete request because of a conflicting operation (e.g. worker rebalance): "
    "this worker is a standby and {why}; retry"
)
_PASSED_BACK = ("content-type", "retry-after", "location")
_FORWARD_TIMEOUT_S = 120.0


class LeadershipView(Protocol):
    """What forwarding reads of :class:`connectrt.runtime.herder.leadership.Leadership`."""

    role: str
    leader_url: str | None
    reads: StandbyReads | None

    def to_dict(self) -> dict[str, Any]: ...


class LeaderForwarding:
    """ASGI middleware; see the module docstring. ``leadership()`` returns None on a worker that
    is not part of a standby cluster (everything is then served locally)."""

    def __init__(self, app: ASGIApp, leadership: Callable[[], LeadershipView | None]) -> None:
        self.app = app
        self.leadership = leadership

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        leadership = self.leadership()
        path = scope["path"]
        if path == "/leader" and scope["method"] == "GET":
            body = leadership.to_dict() if leadership else {"role": "single", "leader_url": None}
            await _send_json(send, 200, body)
            return
        if leadership is None or leadership.role == "leader":
            await self.app(scope, receive, send)
            return
        if path == "/health" and scope["method"] == "GET" and leadership.role == "standby":
            message = f"Worker is a standby of leader {leadership.leader_url or '(electing)'}"
            await _send_json(send, 200, {"status": "healthy", "message": message})
            return
        if not gated(path):
            await self.app(scope, receive, send)
            return
        reads = leadership.reads
        if scope["method"] == "GET" and reads is not None and reads.started:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            try:
                answer = local_read(reads, path, query)
            except NotFoundError as exc:
                await send_error(send, 404, str(exc))
                return
            if answer is not None:
                await _send_json(send, 200, answer)
                return
        await self._forward(leadership, scope, receive, send)

    async def _forward(
        self, leadership: LeadershipView, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if request_header(scope, FORWARDED_HEADER.lower().encode()) is not None:
            await send_error(send, 409, REBALANCE_MESSAGE.format(why="leadership is changing"))
            return
        leader = leadership.leader_url
        if leader is None or leadership.role != "standby":
            await send_error(send, 409, REBALANCE_MESSAGE.format(why="no leader is known yet"))
            return
        body = await _read_body(receive)
        headers = {FORWARDED_HEADER: "1"}
        for name in ("authorization", "content-type", "accept"):
            value = request_header(scope, name.encode())
            if value is not None:
                headers[name] = value
        query = scope.get("query_string", b"").decode("latin-1")
        url = leader.rstrip("/") + scope["path"] + (f"?{query}" if query else "")
        try:
            # One client per request (forwarding is for administrative calls): nothing is left
            # open when the listener stops. No redirect is followed (the target is the leader,
            # never a place it points to); no proxy is taken from the environment.
            async with httpx.AsyncClient(
                timeout=_FORWARD_TIMEOUT_S, follow_redirects=False, trust_env=False
            ) as client:
                answer = await client.request(scope["method"], url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            why = f"the leader at {leader} could not be reached ({type(exc).__name__})"
            await send_error(send, 409, REBALANCE_MESSAGE.format(why=why))
            return
        raw = [(k.encode(), v.encode()) for k, v in answer.headers.items() if k in _PASSED_BACK]
        raw.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": raw})
        await send({"type": "http.response.body", "body": answer.content})


def local_read(reads: StandbyReads, path: str, query: dict[str, list[str]]) -> Any:
    """The answer to ``GET path`` from a standby's copy of the topics, or None when the path
    is not one a standby answers itself (it is then forwarded). Raises NotFoundError."""
    parts = path.strip("/").split("/")
    if parts == ["connectors"]:
        return m.connector_list(reads, query.get("expand", []))
    if len(parts) == 2:
        return m.ConnectorInfo.of(reads.connector_info(parts[1])).wire()
    if len(parts) == 3 and parts[2] == "config":
        return reads.connector_config(parts[1])
    if len(parts) == 3 and parts[2] == "status":
        return m.ConnectorStateInfo.of(reads.connector_status(parts[1])).wire()
    return None


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
