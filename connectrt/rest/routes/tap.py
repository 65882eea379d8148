"""connectrt's record inspector: ``GET /connectors/{name}/tap`` (an extension; Kafka Connect has
none).

A stream of server-sent events (``text/event-stream``): first one ``tap`` event (the
connector, the stage, the connector's stages and the rate granted), then one ``record`` event
per sampled record, as one line of JSON each (topic, partition, offset, timestamp, key, value,
headers, schemas; bytes as base64, large values cut with a marker, every secret the worker
knows hidden), a ``dropped`` event when records were dropped because the watcher lagged, and a
comment line every 15 s while nothing comes (so proxies keep the stream open). The stream ends
when the client goes, or after ``limit`` records.

Query parameters: ``stage`` (``read``, ``converted``, ``transform:<index or alias>``,
``written``; default ``read``), ``rate`` (records a second, at most 20; default 1), ``task``
(one task; default every task of the connector on this worker), ``limit`` (end after that many
records). Errors come before the stream starts, as the app's JSON bodies: 404 unknown
connector or task, 400 unknown stage or bad rate, 409 tasks that run outside this process
(``task.executor=processes``, Spark) or on another worker.

The route holds no thread between events (it sleeps on the event loop while the queue is
empty); rendering runs on the thread pool.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from connectrt.rest.openapi import EVENT_STREAM, documented
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.herder.taps import ConnectorTap, open_tap
from connectrt.runtime.tasks.tap import DEFAULT_RATE, MAX_RATE, stage_names

__all__ = ["tap_router"]

KEEPALIVE_S = 15.0
_IDLE_S = 0.05  # the pause between looks at an empty queue
_SYNC_S = 1.0  # how often the tap looks for the connector's current tasks


def _sse(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


async def _events(
    tap: ConnectorTap, request: Request, stages: list[str], limit: int | None
) -> AsyncIterator[bytes]:
    """The stream: waits by sleeping on the event loop (no thread is held between events; the
    thread pool serves every other route), renders each event on the thread pool."""
    try:
        sub = tap.subscription
        head = {"connector": tap.connector, "stage": sub.label, "stages": stages, "rate": sub.rate}
        yield _sse("tap", json.dumps(head))
        sent = 0
        dropped = 0
        quiet_since = synced = time.monotonic()
        while limit is None or sent < limit:
            if await request.is_disconnected():
                return
            now = time.monotonic()
            if now - synced >= _SYNC_S:
                # A restarted task is a new runner. On the pool: it takes the worker's lock.
                await run_in_threadpool(tap.sync)
                synced = now
            event = tap.poll()
            if event is not None:
                yield _sse("record", await run_in_threadpool(tap.render, event))
                sent += 1
                quiet_since = time.monotonic()
                continue
            if now - quiet_since >= KEEPALIVE_S:
                yield b": waiting for records\n\n"
                quiet_since = now
            if sub.dropped != dropped:
                dropped = sub.dropped
                yield _sse("dropped", json.dumps({"dropped": dropped}))
            await asyncio.sleep(_IDLE_S)
    finally:
        tap.close()


def tap_router(herder: Herder) -> APIRouter:
    """The tap route (the app's error handlers shape the errors)."""
    router = APIRouter()

    @router.get(
        "/connectors/{connector}/tap",
        summary="connectrt: a live sample of the connector's records after one stage",
        description=(
            "Server-sent events (`text/event-stream`): a `tap` event, then one `record` event "
            "per sampled record (JSON: topic, partition, offset, timestamp, key, value, "
            "headers, schemas; bytes as base64, secrets hidden). `stage`: `read`, `converted`, "
            "`transform:<index or alias>` or `written`; `rate`: records a second (at most "
            f"{MAX_RATE:g}); `task`: one task only; `limit`: end after that many records. "
            "Tasks must run in the worker's process (`task.executor=threads`)."
        ),
        response_class=StreamingResponse,
    )
    @documented({200: EVENT_STREAM}, errors=(400, 404, 409))
    async def tap(
        connector: str,
        request: Request,
        stage: str = Query("read"),
        rate: float = Query(DEFAULT_RATE),
        task: int | None = Query(None, ge=0),
        limit: int | None = Query(None, ge=1),
    ) -> StreamingResponse:
        opened = await run_in_threadpool(
            open_tap, herder.worker, herder.secrets.redactor, connector, stage, rate, task
        )
        worker = herder.worker
        stages = stage_names(worker.connector_type(connector), opened.aliases)
        return StreamingResponse(
            _events(opened, request, stages, limit),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router
