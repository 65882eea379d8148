"""connectrt's dead letter queue replay endpoints (an extension; Kafka Connect has none).

* ``POST /connectors/{name}/dlq/replay`` with an optional JSON body ``{"from", "to",
  "dry_run", "max_replays"}`` starts a run: ``202`` with its status and a ``Location``;
* ``GET /connectors/{name}/dlq/replay``: the latest run's status (its progress);
* ``DELETE /connectors/{name}/dlq/replay``: cancel the running replay (``202``, status).

Each route calls the herder's :class:`~connectrt.runtime.dlq_replay.replays.DlqReplays`; errors are
the app's ``{"error_code", "message"}`` bodies (404 unknown connector or no run, 400 bad
request or no dead letter queue, 409 a run already going or none to cancel).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from connectrt.rest import models as m
from connectrt.rest.bodies import read_json
from connectrt.rest.openapi import documented
from connectrt.runtime.dlq_replay.replays import replay_request
from connectrt.runtime.herder.herder import Herder

__all__ = ["dlq_router"]


def _json(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(content, status_code, headers)


def dlq_router(herder: Herder) -> APIRouter:
    """The replay routes (the app's error handlers shape the errors)."""
    router = APIRouter()

    # The POST body's schema is the route's own (openapi_extra).
    @router.post(
        "/connectors/{connector}/dlq/replay",
        status_code=202,
        summary="connectrt: replay the connector's dead letter queue",
        description=(
            'Body (optional): `{"from": T, "to": T, "dry_run": false, "max_replays": N}`; T is '
            "ISO-8601 or epoch milliseconds, selecting `from <= timestamp < to`. Starts a run "
            "and answers with its status; follow it with GET."
        ),
        openapi_extra={
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": m.REPLAY_REQUEST_SCHEMA}},
            }
        },
    )
    @documented(
        {202: m.ReplayStatus},
        errors=(400, 404, 409, 413),
        headers={202: {"Location": "Where to follow the run"}},
    )
    async def start_replay(connector: str, request: Request) -> Response:
        wanted = replay_request(await read_json(request, required=False))
        status = await run_in_threadpool(herder.dlq.start, connector, wanted)
        location = f"/connectors/{quote(connector, safe='')}/dlq/replay"
        return _json(m.ReplayStatus.of(status).wire(), 202, {"Location": location})

    @router.get(
        "/connectors/{connector}/dlq/replay",
        summary="connectrt: progress of the latest dead letter queue replay",
    )
    @documented({200: m.ReplayStatus}, errors=(404,))
    def replay_progress(connector: str) -> Any:
        return m.ReplayStatus.of(herder.dlq.status(connector)).wire()

    @router.delete(
        "/connectors/{connector}/dlq/replay",
        status_code=202,
        summary="connectrt: cancel the running dead letter queue replay",
    )
    @documented({202: m.ReplayStatus}, errors=(404, 409))
    def cancel_replay(connector: str) -> Response:
        return _json(m.ReplayStatus.of(herder.dlq.cancel(connector)).wire(), 202)

    return router
