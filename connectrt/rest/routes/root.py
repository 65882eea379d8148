"""The worker's own resources: ``GET /`` (version and cluster id), ``GET /health`` (KIP-1017)
and ``GET /metrics`` (Prometheus exposition). Always served, also while the herder starts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from connectrt.rest import models as m
from connectrt.rest.metrics import MetricsExposition
from connectrt.rest.openapi import TEXT, documented
from connectrt.rest.responses import JSON
from connectrt.runtime.herder.herder import Herder

__all__ = ["root_router"]


def root_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/", summary="Worker version and Kafka cluster id")
    @documented({200: m.ServerInfo})
    def root() -> Any:
        return herder.overview.server_info()

    # KIP-1017: 503 starting, 500 unhealthy, both with the health body.
    @router.get("/health", summary="Worker health (KIP-1017)")
    @documented({200: m.Health}, errors=(503,), error_bodies={500: m.Health, 503: m.Health})
    def health() -> Response:
        report = herder.overview.health()  # 200 healthy, 503 starting, 500 unhealthy
        body = m.Health.of(report.status, report.message).wire()
        return JSON(body, status_code=report.http_status)

    exposition = MetricsExposition(lambda: herder.overview.metrics_snapshot())

    @router.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    @documented({200: TEXT})
    def metrics(request: Request) -> Response:
        body, content_type = exposition.render(request.headers.get("accept"))
        return Response(body, media_type=content_type)

    return router
