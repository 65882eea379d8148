"""``/admin/loggers``: log levels, read and set (KIP-495; ``?scope=cluster`` answers 204 as
Kafka Connect does). Always served, also while the herder starts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from connectrt.rest import models as m
from connectrt.rest.bodies import read_json
from connectrt.rest.openapi import documented
from connectrt.rest.responses import JSON
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.herder.loggers import MAX_NAME_LENGTH as MAX_LOGGER_NAME_LENGTH

__all__ = ["loggers_router"]


def loggers_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/admin/loggers", summary="Log levels")
    @documented({200: dict[str, m.LoggerLevel]})
    def loggers() -> Any:
        return herder.loggers.all_levels()

    @router.get("/admin/loggers/{name}", summary="One logger's level")
    @documented({200: m.LoggerLevel}, errors=(404,))
    def logger(name: str) -> Any:
        return herder.loggers.level(name)

    @router.put("/admin/loggers/{name}", summary="Set a log level")
    @documented({200: list[str], 204: None}, m.LoggerLevelRequest, errors=(404,))
    async def set_logger(
        name: Annotated[str, Path(max_length=MAX_LOGGER_NAME_LENGTH)],
        request: Request,
        scope: str = "worker",
    ) -> Response:
        level = m.LoggerLevelRequest.read(await read_json(request, required=False))
        changed = herder.loggers.set_level(name, level)
        if scope.lower() == "cluster":
            return Response(status_code=204)
        return JSON(changed)

    return router
