"""``GET /control/events`` (connectrt): the outcomes of recent control-topic events, empty
when ``control.topic`` is not configured."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from connectrt.rest import models as m
from connectrt.rest.openapi import documented
from connectrt.runtime.herder.herder import Herder

__all__ = ["control_router"]


def control_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/control/events", summary="connectrt: outcomes of recent control-topic events")
    @documented({200: list[m.ControlEventOutcome]})
    def control_events() -> Any:
        control = getattr(herder, "control", None)  # set when control.topic is configured
        return control.outcomes() if control is not None else []

    return router
