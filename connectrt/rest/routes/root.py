"""The worker's own resources: ``GET /`` (version and cluster id), ``GET /health`` (KIP-1017)
and ``GET /metrics`` (Prometheus exposition). Always served, also while the herder starts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from connectrt.rest.metrics import MetricsExposition
from connectrt.rest.responses import JSON
from connectrt.runtime.herder.herder import Herder

__all__ = ["root_router"]


def root_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/", summary="Worker version and Kafka cluster id")
    def root() -> Any:
        return herder.overview.server_info()

    @router.get("/health", summary="Worker health (KIP-1017)")
    def health() -> Response:
        report = herder.overview.health()  # 200 healthy, 503 starting, 500 unhealthy
        body = {"status": report.status, "message": report.message}
        return JSON(body, status_code=report.http_status)

    exposition = MetricsExposition(lambda: herder.overview.metrics_snapshot())

    @router.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    def metrics(request: Request) -> Response:
        body, content_type = exposition.render(request.headers.get("accept"))
        return Response(body, media_type=content_type)

    return router
