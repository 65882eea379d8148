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

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from connectrt.rest.bodies import read_json
from connectrt.runtime.dlq_replay.progress import ReplayStatus
from connectrt.runtime.dlq_replay.replays import replay_request
from connectrt.runtime.herder.herder import Herder

__all__ = ["dlq_router", "replay_status"]


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def replay_status(status: ReplayStatus) -> dict[str, Any]:
    """The JSON of one run's status."""
    request = status.request
    return {
        "id": status.id,
        "connector": status.connector,
        "type": status.connector_type,
        "state": status.state.value,
        "dlq_topic": status.dlq_topic,
        "group": status.group,
        "dry_run": request.dry_run,
        "from": _iso(request.from_ms),
        "to": _iso(request.to_ms),
        "max_replays": request.max_replays,
        "started": _iso(status.started_ms),
        "finished": _iso(status.finished_ms),
        "counts": {
            "read": status.read,
            "replayed": status.replayed,
            "skipped": status.skipped,
            "failed_again": status.failed_again,
        },
        "skipped_reasons": dict(status.skipped_reasons),
        "partitions": [
            {"partition": p.partition, "start": p.start, "end": p.end, "position": p.position}
            for p in status.partitions
        ],
        "sink_caught_up": status.sink_caught_up,
        "message": status.message,
    }


_TIMESTAMP = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "integer", "minimum": 0, "description": "epoch milliseconds"},
        {"type": "null"},
    ]
}
_REQUEST_SCHEMA = {
    "type": "object",
    "properties": {
        "from": _TIMESTAMP,
        "to": _TIMESTAMP,
        "dry_run": {"type": "boolean"},
        "max_replays": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    },
    "additionalProperties": False,
}


def _json(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(content, status_code, headers)


def dlq_router(herder: Herder) -> APIRouter:
    """The replay routes (the app's error handlers shape the errors)."""
    router = APIRouter()

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
                "content": {"application/json": {"schema": _REQUEST_SCHEMA}},
            }
        },
    )
    async def start_replay(connector: str, request: Request) -> Response:
        wanted = replay_request(await read_json(request, required=False))
        status = await run_in_threadpool(herder.dlq.start, connector, wanted)
        location = f"/connectors/{quote(connector, safe='')}/dlq/replay"
        return _json(replay_status(status), 202, {"Location": location})

    @router.get(
        "/connectors/{connector}/dlq/replay",
        summary="connectrt: progress of the latest dead letter queue replay",
    )
    def replay_progress(connector: str) -> Any:
        return replay_status(herder.dlq.status(connector))

    @router.delete(
        "/connectors/{connector}/dlq/replay",
        status_code=202,
        summary="connectrt: cancel the running dead letter queue replay",
    )
    def cancel_replay(connector: str) -> Response:
        return _json(replay_status(herder.dlq.cancel(connector)), 202)

    return router
