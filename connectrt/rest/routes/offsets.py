"""``/connectors/{connector}/offsets``: a connector's committed offsets, read, altered and
reset (KIP-875), and connectrt's rewind (``POST .../offsets/reset``: stop, move, resume)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from connectrt.rest import models as m
from connectrt.rest.bodies import read_json
from connectrt.rest.openapi import documented
from connectrt.runtime.herder.herder import Herder

__all__ = ["offsets_router"]

_C = (404,)  # a {connector} path


def offsets_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/connectors/{connector}/offsets", summary="Committed offsets (KIP-875)")
    @documented({200: m.ConnectorOffsets}, errors=_C)
    def get_offsets(connector: str) -> Any:
        return {"offsets": herder.offsets.get(connector)}

    @router.patch("/connectors/{connector}/offsets", summary="Alter offsets (KIP-875)")
    @documented({200: m.OffsetsMessage}, m.AlterOffsetsRequest, errors=_C)
    async def alter_offsets(connector: str, request: Request) -> Any:
        offsets = m.AlterOffsetsRequest.read(await read_json(request, required=False))
        message = await run_in_threadpool(herder.offsets.alter, connector, offsets)
        return m.OffsetsMessage.of(message).wire()

    @router.delete("/connectors/{connector}/offsets", summary="Reset offsets (KIP-875)")
    @documented({200: m.OffsetsMessage}, errors=(400, 404))
    def delete_offsets(connector: str) -> Any:
        return m.OffsetsMessage.of(herder.offsets.reset(connector)).wire()

    @router.post(
        "/connectors/{connector}/offsets/reset",
        summary="connectrt: rewind a connector (stop, move offsets, resume)",
        description=(
            'Body: `{"to": "earliest"|"latest"|"timestamp"|"offset", "timestamp": '
            'ISO-8601, "offset": N, "topic": optional}`. Sinks move their consumer group; '
            "sources support `earliest` (delete their offsets)."
        ),
    )
    @documented({200: m.ConnectorOffsets}, m.RewindRequest, errors=_C)
    async def rewind(connector: str, request: Request) -> Any:
        body = m.RewindRequest.read(await read_json(request))
        return await run_in_threadpool(
            herder.offsets.rewind, connector, body.to, body.timestamp, body.offset, body.topic
        )

    return router
