"""The FastAPI application: Kafka Connect's REST API over a :class:`Herder`.

Every route calls one method, of the herder or of one of its collaborators (``herder.offsets``,
``.topics``, ``.plugins``, ``.loggers``, ``.overview``), and shapes its answer; no logic lives
here. Errors become Kafka's ``{"error_code": <status>, "message": "..."}`` bodies through one
set of exception handlers. Handlers are plain ``def`` functions: FastAPI runs them in its thread
pool, and the herder and its collaborators are thread-safe.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from connectrt import __version__
from connectrt.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    NotFoundError,
)
from connectrt.rest import wire
from connectrt.rest.bodies import read_json
from connectrt.rest.config_limits import MAX_NAME_LENGTH, ConfigLimits, ConfigTooLarge
from connectrt.rest.console import mount_console
from connectrt.rest.dlq_routes import add_dlq_routes
from connectrt.rest.methods import allowed_methods
from connectrt.rest.metrics import MetricsExposition
from connectrt.rest.openapi import document_api
from connectrt.rest.readiness import StartupGate
from connectrt.runtime.errors import BadRequestError, ConflictError, ForbiddenError
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.herder.loggers import MAX_NAME_LENGTH as MAX_LOGGER_NAME_LENGTH

log = logging.getLogger(__name__)

__all__ = ["create_app"]


class _JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


# Errors the herder raises and the HTTP status Kafka Connect answers them with.
_ERROR_STATUS: dict[type[Exception], int] = {
    NotFoundError: 404,
    AlreadyExistsError: 409,
    ConflictError: 409,
    ForbiddenError: 403,
    BadRequestError: 400,
    ConfigError: 400,
    ConfigTooLarge: 413,
}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return _JSON({"error_code": status, "message": message}, status_code=status, headers=headers)


def _string_map(value: Any, allow_null: bool = False) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequestError("Connector configuration must be a JSON object of strings")
    out: dict[str, Any] = {}
    for k, v in value.items():
        if v is None and allow_null:
            out[k] = None
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, str | int | float):
            out[k] = str(v)
        else:
            raise BadRequestError(f"Configuration value for '{k}' must be a string")
    return out


def _config_limits(herder: Herder) -> ConfigLimits:
    """Configs are bounded by what the config topic takes; without one (standalone mode, or
    no herder when the app is built only for its OpenAPI document) they are not."""
    from connectrt.storage.kafka_config import KafkaConfigStore

    store = getattr(herder, "config_store", None)
    if isinstance(store, KafkaConfigStore):
        return ConfigLimits.for_config_topic(herder.config.originals)
    return ConfigLimits()


def create_app(herder: Herder) -> FastAPI:
    """The REST API over ``herder``. Authentication is the listener's (serve the app with
    :class:`~connectrt.listener.server.HttpServer` and the worker's ``ListenerSecurity``)."""
    # /docs (Swagger UI) from the assets fastapi-offline ships, served under /docs/assets by
    # this app: no CDN, and behind the listener's authentication like the rest. No /redoc: its
    # page loads a logo from the ReDoc CDN.
    app = FastAPIOffline(
        redoc_url=None,
        title="connectrt",
        version=__version__,
        description="Kafka Connect-compatible REST API of a connectrt worker.",
        default_response_class=_JSON,
        static_url="/docs/assets",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from a validator
    )
    # Requests under /connectors get 503 + Retry-After until the herder is ready.
    app.add_middleware(StartupGate, ready=lambda: herder.ready)
    limits = _config_limits(herder)

    # -- errors -------------------------------------------------------------------------------
    # Every error body goes through the worker's one redaction function: no secret it knows
    # (a resolved value, a password) is ever quoted back.
    def redact(text: str) -> str:
        return herder.secrets.redact(text)  # looked up per error: the app may be built first

    def _handler(status: int) -> Any:
        def handle(request: Request, exc: Exception) -> Response:
            return _error(status, redact(str(exc)))

        return handle

    for error_type, status in _ERROR_STATUS.items():
        app.add_exception_handler(error_type, _handler(status))

    @app.exception_handler(ConnectError)
    def _connect_error(request: Request, exc: ConnectError) -> Response:
        log.warning("Request %s %s failed: %s", request.method, request.url.path, exc)
        return _error(500, redact(str(exc)))

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> Response:
        reason = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(app.router, request.scope))
        return _error(exc.status_code, f"HTTP {exc.status_code} {reason}", headers or None)

    @app.exception_handler(RequestValidationError)
    def _validation(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(400, f"Invalid request: {where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> Response:
        log.error("Unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return _error(500, redact(f"{type(exc).__name__}: {exc}"))

    # -- root ---------------------------------------------------------------------------------
    @app.get("/", summary="Worker version and Kafka cluster id")
    def root() -> Any:
        return herder.overview.server_info()

    @app.get("/health", summary="Worker health (KIP-1017)")
    def health() -> Response:
        report = herder.overview.health()  # 200 healthy, 503 starting, 500 unhealthy
        body = {"status": report.status, "message": report.message}
        return _JSON(body, status_code=report.http_status)

    exposition = MetricsExposition(lambda: herder.overview.metrics_snapshot())

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    def metrics(request: Request) -> Response:
        body, content_type = exposition.render(request.headers.get("accept"))
        return Response(body, media_type=content_type)

    # -- connectors ---------------------------------------------------------------------------
    @app.get("/connectors", summary="List connectors")
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

    @app.post("/connectors", status_code=201, summary="Create a connector")
    async def create_connector(request: Request) -> Response:
        body = await read_json(request)
        if not isinstance(body, dict):
            raise BadRequestError("Request body must be a JSON object")
        name = body.get("name")
        config = _string_map(body.get("config") or {})
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
        return _JSON(
            wire.connector_info(info),
            status_code=201,
            headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
        )

    @app.get("/connectors/{connector}", summary="Connector info")
    def get_connector(connector: str) -> Any:
        return wire.connector_info(herder.connector_info(connector))

    @app.delete("/connectors/{connector}", status_code=204, summary="Delete a connector")
    def delete_connector(connector: str) -> Response:
        herder.delete_connector(connector)
        return Response(status_code=204)

    @app.get("/connectors/{connector}/config", summary="Connector config (secrets hidden)")
    def get_config(connector: str) -> Any:
        return herder.connector_config(connector)

    @app.put("/connectors/{connector}/config", summary="Create or replace a connector config")
    async def put_config(
        connector: Annotated[str, Path(max_length=MAX_NAME_LENGTH)], request: Request
    ) -> Response:
        config = _string_map(await read_json(request))
        limits.check_config(connector, config)
        created, info = await run_in_threadpool(herder.put_connector_config, connector, config)
        if created:
            return _JSON(
                wire.connector_info(info),
                status_code=201,
                headers={"Location": f"/connectors/{quote(info.name, safe='')}"},
            )
        return _JSON(wire.connector_info(info))

    @app.patch("/connectors/{connector}/config", summary="Patch a connector config (KIP-477)")
    async def patch_config(connector: str, request: Request) -> Any:
        patch = _string_map(await read_json(request), allow_null=True)
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

    @app.get("/connectors/{connector}/status", summary="Connector and task states")
    def get_status(connector: str) -> Any:
        unknown(connector, f"No status found for connector {connector}")
        return wire.connector_state_info(herder.connector_status(connector))

    @app.get("/connectors/{connector}/tasks", summary="Task configs (secrets hidden)")
    def get_tasks(connector: str) -> Any:
        return [
            {"id": {"connector": connector, "task": t}, "config": config}
            for t, config in herder.task_configs(connector)
        ]

    @app.get("/connectors/{connector}/tasks-config", summary="Task configs (deprecated)")
    def get_tasks_config(connector: str) -> Any:
        return {f"{connector}-{t}": config for t, config in herder.task_configs(connector)}

    @app.get("/connectors/{connector}/tasks/{task}/status", summary="One task's state")
    def get_task_status(connector: str, task: int) -> Any:
        unknown(connector, f"No status found for task {connector}-{task}")
        return wire.task_state(task, herder.task_status(connector, task))

    @app.post("/connectors/{connector}/tasks/{task}/restart", status_code=204)
    def restart_task(connector: str, task: int) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        herder.restart_task(connector, task)
        return Response(status_code=204)

    @app.post("/connectors/{connector}/restart", summary="Restart (KIP-745 flags)")
    def restart_connector(
        connector: str,
        includeTasks: bool = False,
        onlyFailed: bool = False,
    ) -> Response:
        unknown(connector, f"Unknown connector: {connector}")
        plan = herder.restart_connector(connector, includeTasks, onlyFailed)
        if plan is None:
            return Response(status_code=204)
        return _JSON(wire.connector_state_info(plan), status_code=202)

    @app.put("/connectors/{connector}/pause", status_code=202)
    def pause(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.pause(connector)
        return Response(status_code=202)

    @app.put("/connectors/{connector}/resume", status_code=202)
    def resume(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.resume(connector)
        return Response(status_code=202)

    @app.put("/connectors/{connector}/stop", status_code=204)
    def stop(connector: str) -> Response:
        unknown(connector, f"Unknown connector {connector}")
        herder.stop_connector(connector)
        return Response(status_code=204)

    @app.get("/connectors/{connector}/topics", summary="Topics the connector used (KIP-558)")
    def topics(connector: str) -> Any:
        if connector not in herder.connectors():  # Kafka: an unknown connector used none
            return {connector: {"topics": []}}
        return {connector: {"topics": herder.topics.active(connector)}}

    @app.put("/connectors/{connector}/topics/reset", status_code=202)
    def reset_topics(connector: str) -> Response:
        if connector in herder.connectors():  # Kafka: 202 for an unknown one too
            herder.topics.reset(connector)
        return Response(status_code=202)

    # -- offsets ------------------------------------------------------------------------------
    @app.get("/connectors/{connector}/offsets", summary="Committed offsets (KIP-875)")
    def get_offsets(connector: str) -> Any:
        return {"offsets": herder.offsets.get(connector)}

    @app.patch("/connectors/{connector}/offsets", summary="Alter offsets (KIP-875)")
    async def alter_offsets(connector: str, request: Request) -> Any:
        body = await read_json(request, required=False)
        offsets = body.get("offsets") if isinstance(body, dict) else None
        message = await run_in_threadpool(herder.offsets.alter, connector, offsets)
        return {"message": message}

    @app.delete("/connectors/{connector}/offsets", summary="Reset offsets (KIP-875)")
    def delete_offsets(connector: str) -> Any:
        return {"message": herder.offsets.reset(connector)}

    @app.post(
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

    # -- control topic ------------------------------------------------------------------------
    @app.get("/control/events", summary="connectrt: outcomes of recent control-topic events")
    def control_events() -> Any:
        control = getattr(herder, "control", None)  # set when control.topic is configured
        return control.outcomes() if control is not None else []

    # -- plugins ------------------------------------------------------------------------------
    @app.get("/connector-plugins", summary="Installed plugins")
    def plugins(connectorsOnly: bool = True) -> Any:
        return [wire.plugin_info(p) for p in herder.plugins.list_plugins(connectorsOnly)]

    @app.get("/connector-plugins/{plugin}/config", summary="A plugin's config definition")
    def plugin_config(
        plugin: str, version: Annotated[str | None, Query(min_length=1)] = None
    ) -> Any:
        # ?version= (KIP-891): a version or range of the installed plugin; default the newest
        return [wire.config_key_info(k) for k in herder.plugins.plugin_config(plugin, version)]

    @app.put("/connector-plugins/{plugin}/config/validate", summary="Validate a config")
    async def validate(plugin: str, request: Request) -> Any:
        config = _string_map(await read_json(request), allow_null=True)
        result = await run_in_threadpool(herder.plugins.validate, plugin, config)
        definition = result.definition
        return wire.config_infos(result, lambda key: herder.masker.is_secret(key, definition))

    # -- loggers ------------------------------------------------------------------------------
    @app.get("/admin/loggers", summary="Log levels")
    def loggers() -> Any:
        return herder.loggers.all_levels()

    @app.get("/admin/loggers/{name}", summary="One logger's level")
    def logger(name: str) -> Any:
        return herder.loggers.level(name)

    @app.put("/admin/loggers/{name}", summary="Set a log level")
    async def set_logger(
        name: Annotated[str, Path(max_length=MAX_LOGGER_NAME_LENGTH)],
        request: Request,
        scope: str = "worker",
    ) -> Response:
        body = await read_json(request, required=False)
        level = body.get("level") if isinstance(body, dict) else None
        if not level or not isinstance(level, str):
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        changed = herder.loggers.set_level(name, level)
        if scope.lower() == "cluster":
            return Response(status_code=204)
        return _JSON(changed)

    add_dlq_routes(app, herder)  # connectrt: dead letter queue replay
    mount_console(app, herder)  # /ui: the web console (HTML; not in the OpenAPI document)
    document_api(app)  # request bodies, response models and error statuses (rest/openapi.py)
    return app
