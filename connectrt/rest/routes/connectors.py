"""``/connectors``: listing, creating and deleting connectors, their configs (PUT, PATCH
KIP-477), status, task configs, restarts (KIP-745), pause/resume/stop and topics (KIP-558).

Requests here are gated by :class:`~connectrt.rest.readiness.StartupGate` until the herder
is ready. A config is checked against :class:`~connectrt.rest.config_limits.ConfigLimits`
before anything is written.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from connectrt.errors import NotFoundError
from connectrt.rest import wire
from connectrt.rest.bodies import read_json, string_map
from connectrt.rest.config_limits import MAX_NAME_LENGTH, ConfigLimits
from connectrt.rest.responses import JSON
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.herder import Herder

__all__ = ["connectors_router"]


def connectors_router(herder: Herder, limits: ConfigLimits) -> APIRouter:
    router = APIRouter()

    @router.get("/connectors", summary="List connectors")
    def list_connectors(expand: list[str] = Query(default=[])) -> Any:  # noqa: B008
        names = herder.connectors()
        wanted = {e for e in expand if e in ("status", "info")}
        if not wanted:
            return names
        out: dict[str, Any] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                if "status" in wanted:
                    entry["status"] = wire.connector_state_info(herder.connector_status(name))
                if "info" in wanted:
                    entry["info"] = wire.connector_info(herder.connector_info(name))
            except NotFoundError:
                continue  # deleted during the lookup
            out[name] = entry
        return out

    @router.post("/connectors", status_code=201, summary="Create a connector")
    async def create_connector(request: Request) -> Response:
        body = await read_json(request)
        if not isinstance(body, dict):
            raise BadRequestError("Request body must be a JSON object")
        name = body.get("name")
        config = string_map(body.get("config") or {})
        if not isinstance(name, str) or not name.strip():
            name = config.get("name")
        if not isinstance(name, str) or not name.strip():
            raise BadRequestError("Connector name is required")
        limits.check_name(name.strip())
        limits.check_config(name.strip(), config)
        initial = body.get("initial_state")
        if initial is not None and not isinstance(initial, str):
            raise BadRequestError("initial_state must be a string")
        offsets = body.get("initial_offsets")  # KIP-995; checked like a KIP-875 PATCH body
        info = await run_in_threadpool(
            herder.create_connector, name.strip(), config, initial, offsets
        )
        return JSON(
            wire.connector_info(info),
            status_code=201,
            headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
        )

    @router.get("/connectors/{connector}", summary="Connector info")
    def get_connector(connector: str) -> Any:
        return wire.connector_info(herder.connector_info(connector))

    @router.delete("/connectors/{connector}", status_code=204, summary="Delete a connector")
    def delete_connector(connector: str) -> Response:
        herder.delete_connector(connector)
        return Response(status_code=204)

    @router.get("/connectors/{connector}/config", summary="Connector config (secrets hidden)")
    def get_config(connector: str) -> Any:
        return herder.connector_config(connector)

    @router.put("/connectors/{connector}/config", summary="Create or replace a connector config")
    async def put_config(
        connector: Annotated[str, Path(max_length=MAX_NAME_LENGTH)], request: Request
    ) -> Response:
        config = string_map(await read_json(request))
        limits.check_config(connector, config)
        created, info = await run_in_threadpool(herder.put_connector_config, connector, config)
        if created:
            return JSON(
                wire.connector_info(info),
                status_code=201,
                headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
            )
        return JSON(wire.connector_info(info))

    @router.patch("/connectors/{connector}/config", summary="Patch a connector config (KIP-477)")
    async def patch_config(connector: str, request: Request) -> Any:
        patch = string_map(await read_json(request), allow_null=True)
        if limits.max_config_bytes is not None:  # the size once merged (secrets as [hidden])
            merged = {**herder.connector_config(connector), **patch}
            limits.check_config(connector, {k: v for k, v in merged.items() if v is not None})
        info = await run_in_threadpool(herder.patch_connector_config, connector, patch)
        return wire.connector_info(info)

    def unknown(connector: str, message: str) -> None:
        """Kafka Connect's own 404 text for the route, when ``connector`` does not exist
        (each of its routes words it differently)."""
        if connector not in herder.connectors():
            raise NotFoundError(message)

    @router.get("/connectors/{connector}/status", summary="Connector and task states")
    def get_status(connector: str) -> Any:
        unknown(connector, f"No status found for connector {connector}")
        return wire.connector_state_info(herder.connector_status(connector))

    @router.get("/connectors/{connector}/tasks", summary="Task configs (secrets hidden)")
    def get_tasks(connector: str) -> Any:
        return [
            {"id": {"connector": connector, "task": t}, "config": config}
            for t, config in herder.task_configs(connector)
        ]

    @router.get("/connectors/{connector}/tasks-config", summary="Task configs (deprecated)")
    def get_tasks_config(connector: str) -> Any:
        return {f"{connector}-{t}": config for t, config in herder.task_configs(connector)}

    @router.get("/connectors/{connector}/tasks/{task}/status", summary="One task's state")
    def get_task_status(connector: str, task: int) -> Any:
        unknown(connector, f"No status found for task {connector}-{task}")
        return wire.task_state(task, herder.task_status(connector, task))

    @router.post("/connectors/{connector}/tasks/{task}/restart", status_code=204)
    def restart_task(connector: str, task: int) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        herder.restart_task(connector, task)
        return Response(status_code=204)

    @router.post("/connectors/{connector}/restart", summary="Restart (KIP-745 flags)")
    def restart_connector(
        connector: str,
        includeTasks: bool = False,
        onlyFailed: bool = False,
    ) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        plan = herder.restart_connector(connector, includeTasks, onlyFailed)
        if plan is None:
            return Response(status_code=204)
        return JSON(wire.connector_state_info(plan), status_code=202)

    @router.put("/connectors/{connector}/pause", status_code=202)
    def pause(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.pause(connector)
        return Response(status_code=202)

    @router.put("/connectors/{connector}/resume", status_code=202)
    def resume(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.resume(connector)
        return Response(status_code=202)

    @router.put("/connectors/{connector}/stop", status_code=204)
    def stop(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.stop_connector(connector)
        return Response(status_code=204)

    @router.get("/connectors/{connector}/topics", summary="Topics the connector used (KIP-558)")
    def topics(connector: str) -> Any:
        if connector not in herder.connectors():  # Kafka: an unknown connector used none
            return {connector: {"topics": []}}
        return {connector: {"topics": herder.topics.active(connector)}}

    @router.put("/connectors/{connector}/topics/reset", status_code=202)
    def reset_topics(connector: str) -> Response:
        if connector in herder.connectors():  # Kafka: 202 for an unknown one too
            herder.topics.reset(connector)
        return Response(status_code=202)

    return router
