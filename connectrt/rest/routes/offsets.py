"""``/connectors/{connector}/offsets``: a connector's committed offsets, read, altered and
reset (KIP-875), and connectrt's rewind (``POST .../offsets/reset``: stop, move, resume)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from connectrt.rest.bodies import read_json
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.herder import Herder

__all__ = ["offsets_router"]


def offsets_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/connectors/{connector}/offsets", summary="Committed offsets (KIP-875)")
    def get_offsets(connector: str) -> Any:
        return {"offsets": herder.offsets.get(connector)}

    @router.patch("/connectors/{connector}/offsets", summary="Alter offsets (KIP-875)")
    async def alter_offsets(connector: str, request: Request) -> Any:
        body = await read_json(request, required=False)
        offsets = body.get("offsets") if isinstance(body, dict) else None
        message = await run_in_threadpool(herder.offsets.alter, connector, offsets)
        return {"message": message}

    @router.delete("/connectors/{connector}/offsets", summary="Reset offsets (KIP-875)")
    def delete_offsets(connector: str) -> Any:
        return {"message": herder.offsets.reset(connector)}

    @router.post(
        "/connectors/{connector}/offsets/reset",
        summary="connectrt: rewind a connector (stop, move offsets, resume)",
        description=(
            'Body: `{"to": "earliest"|"latest"|"timestamp"|"offset", "timestamp": '
            'ISO-8601, "offset": N, "topic": optional}`. Sinks move their consumer group; '
            "sources support `earliest` (delete their offsets)."
        ),
    )
    async def rewind(connector: str, request: Request) -> Any:
        body = await read_json(request)
        if not isinstance(body, dict) or not isinstance(body.get("to"), str):
            raise BadRequestError("Body must be a JSON object with a 'to' string")
        when = None
        if body.get("timestamp") is not None:
            try:
                when = datetime.fromisoformat(str(body["timestamp"]).replace("Z", "+00:00"))
            except ValueError:
                raise BadRequestError(f"Invalid ISO-8601 timestamp {body['timestamp']}") from None
            if when.timestamp() < 0:  # Kafka's offsets for times start at the epoch
                raise BadRequestError(f"Timestamp {body['timestamp']} is before 1970-01-01")
        offset = body.get("offset")
        if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
            raise BadRequestError("'offset' must be an integer")
        topic = body.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise BadRequestError("'topic' must be a string")
        return await run_in_threadpool(
            herder.offsets.rewind, connector, body["to"], when, offset, topic
        )

    return router
