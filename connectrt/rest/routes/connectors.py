"""``/connectors``: listing, creating and deleting connectors, their configs (PUT, PATCH
KIP-477), status, task configs, restarts (KIP-745), pause/resume/stop and topics (KIP-558).

Requests here are gated by :class:`~connectrt.rest.readiness.StartupGate` until the herder
is ready. A config is checked against :class:`~connectrt.rest.config_limits.ConfigLimits`
before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, cast
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from connectrt.errors import NotFoundError
from connectrt.rest import models as m
from connectrt.rest.bodies import read_json
from connectrt.rest.config_limits import MAX_NAME_LENGTH, ConfigLimits
from connectrt.rest.openapi import documented
from connectrt.rest.responses import JSON
from connectrt.runtime.herder.herder import Herder

__all__ = ["connectors_router"]

_C = (404,)  # a {connector} path
_LOCATION = {201: {"Location": "The new connector's URL"}}


def connectors_router(herder: Herder, limits: ConfigLimits) -> APIRouter:
    router = APIRouter()

    @router.get("/connectors", summary="List connectors")
    @documented({200: list[str] | m.ExpandedConnectors})
    def list_connectors(expand: list[str] = Query(default=[])) -> Any:  # noqa: B008
        return m.connector_list(herder, expand)

    @router.post("/connectors", status_code=201, summary="Create a connector")
    @documented({201: m.ConnectorInfo}, m.CreateConnectorRequest, errors=(409,), headers=_LOCATION)
    async def create_connector(request: Request) -> Response:
        body = m.CreateConnectorRequest.read(await read_json(request), limits)
        info = await run_in_threadpool(
            herder.create_connector,
            body.name,
            cast(dict[str, str], body.config),  # read() made every value a string
            body.initial_state,
            body.initial_offsets,
        )
        return JSON(
            m.ConnectorInfo.of(info).wire(),
            status_code=201,
            headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
        )

    @router.get("/connectors/{connector}", summary="Connector info")
    @documented({200: m.ConnectorInfo}, errors=_C)
    def get_connector(connector: str) -> Any:
        return m.ConnectorInfo.of(herder.connector_info(connector)).wire()

    @router.delete("/connectors/{connector}", status_code=204, summary="Delete a connector")
    @documented({204: None}, errors=_C)
    def delete_connector(connector: str) -> Response:
        herder.delete_connector(connector)
        return Response(status_code=204)

    @router.get("/connectors/{connector}/config", summary="Connector config (secrets hidden)")
    @documented({200: dict[str, str]}, errors=_C)
    def get_config(connector: str) -> Any:
        return herder.connector_config(connector)

    @router.put("/connectors/{connector}/config", summary="Create or replace a connector config")
    @documented(
        {200: m.ConnectorInfo, 201: m.ConnectorInfo},
        m.ConnectorConfigRequest,
        errors=(409,),
        headers=_LOCATION,
    )
    async def put_config(
        connector: Annotated[str, Path(max_length=MAX_NAME_LENGTH)], request: Request
    ) -> Response:
        config = m.ConnectorConfigRequest.read(await read_json(request))
        limits.check_config(connector, config)
        created, info = await run_in_threadpool(herder.put_connector_config, connector, config)
        if created:
            return JSON(
                m.ConnectorInfo.of(info).wire(),
                status_code=201,
                headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
            )
        return JSON(m.ConnectorInfo.of(info).wire())

    @router.patch("/connectors/{connector}/config", summary="Patch a connector config (KIP-477)")
    @documented({200: m.ConnectorInfo}, m.PatchConfigRequest, errors=_C)
    async def patch_config(connector: str, request: Request) -> Any:
        patch = m.PatchConfigRequest.read(await read_json(request))
        if limits.max_config_bytes is not None:  # the size once merged (secrets as [hidden])
            merged = {**herder.connector_config(connector), **patch}
            limits.check_config(connector, {k: v for k, v in merged.items() if v is not None})
        info = await run_in_threadpool(herder.patch_connector_config, connector, patch)
        return m.ConnectorInfo.of(info).wire()

    def unknown(connector: str, message: str) -> None:
        """Kafka Connect's own 404 text for the route, when ``connector`` does not exist
        (each of its routes words it differently)."""
        if connector not in herder.connectors():
            raise NotFoundError(message)

    @router.get("/connectors/{connector}/status", summary="Connector and task states")
    @documented({200: m.ConnectorStateInfo}, errors=_C)
    def get_status(connector: str) -> Any:
        unknown(connector, f"No status found for connector {connector}")
        return m.ConnectorStateInfo.of(herder.connector_status(connector)).wire()

    @router.get("/connectors/{connector}/tasks", summary="Task configs (secrets hidden)")
    @documented({200: list[m.TaskConfig]}, errors=_C)
    def get_tasks(connector: str) -> Any:
        return [
            m.TaskConfig.of(connector, t, config).wire()
            for t, config in herder.task_configs(connector)
        ]

    @router.get("/connectors/{connector}/tasks-config", summary="Task configs (deprecated)")
    @documented({200: dict[str, dict[str, str]]}, errors=_C)
    def get_tasks_config(connector: str) -> Any:
        return {f"{connector}-{t}": config for t, config in herder.task_configs(connector)}

    @router.get("/connectors/{connector}/tasks/{task}/status", summary="One task's state")
    @documented({200: m.TaskState}, errors=(400, 404))
    def get_task_status(connector: str, task: int) -> Any:
        unknown(connector, f"No status found for task {connector}-{task}")
        return m.TaskState.of(task, herder.task_status(connector, task)).wire()

    @router.post("/connectors/{connector}/tasks/{task}/restart", status_code=204)
    @documented({204: None}, errors=(400, 404))
    def restart_task(connector: str, task: int) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        herder.restart_task(connector, task)
        return Response(status_code=204)

    @router.post("/connectors/{connector}/restart", summary="Restart (KIP-745 flags)")
    @documented({202: m.ConnectorStateInfo, 204: None}, errors=(400, 404))
    def restart_connector(
        connector: str,
        includeTasks: bool = False,
        onlyFailed: bool = False,
    ) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        plan = herder.restart_connector(connector, includeTasks, onlyFailed)
        if plan is None:
            return Response(status_code=204)
        return JSON(m.ConnectorStateInfo.of(plan).wire(), status_code=202)

    def state_change(action: str, change: Callable[[str], None], status: int) -> None:
        # PUT /connectors/{connector}/<action> (route name <action>): change(connector) on a
        # known connector, answered with `status` and no body. (No docstring on the handler:
        # it would become the operation's description.)
        @router.put(f"/connectors/{{connector}}/{action}", status_code=status, name=action)
        @documented({status: None}, errors=_C)
        def handler(connector: str) -> Response:
            unknown(connector, f"Unknown connector {connector}")
            change(connector)
            return Response(status_code=status)

    state_change("pause", lambda connector: herder.pause(connector), 202)
    state_change("resume", lambda connector: herder.resume(connector), 202)
    state_change("stop", lambda connector: herder.stop_connector(connector), 204)

    @router.get("/connectors/{connector}/topics", summary="Topics the connector used (KIP-558)")
    @documented({200: m.ConnectorTopics}, errors=(403, 404))
    def topics(connector: str) -> Any:
        if connector not in herder.connectors():  # Kafka: an unknown connector used none
            return m.ConnectorTopics.of(connector, []).wire()
        return m.ConnectorTopics.of(connector, herder.topics.active(connector)).wire()

    @router.put("/connectors/{connector}/topics/reset", status_code=202)
    @documented({202: None}, errors=(403, 404))
    def reset_topics(connector: str) -> Response:
        if connector in herder.connectors():  # Kafka: 202 for an unknown one too
            herder.topics.reset(connector)
        return Response(status_code=202)

    return router
