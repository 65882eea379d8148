"""The REST API's OpenAPI document: request bodies, response models and error statuses.

FastAPI derives the document from the routes, but the handlers read raw bodies (to answer
malformed JSON with Kafka Connect's error body and messages) and return plain JSON, so on its
own it knows neither the request bodies nor the response shapes, and it documents a ``422``
the API never sends (validation errors are answered ``400``). :func:`document_api` replaces
the app's ``openapi()`` with one that completes FastAPI's document from :data:`OPERATIONS`: for
every operation, the body it reads (required or not), each success status with its model
(:mod:`connectrt.rest.models`), and the error statuses it can answer, all with the
``{"error_code", "message"}`` body. Every route must have an entry (a new route without one
fails the unit test that checks the document), and the schemathesis run in the test suite
checks every answer against what is written here.

Error statuses: every operation may answer ``401`` (authentication is on and the request has
no valid credentials) and ``500``; every write (POST, PUT, PATCH, DELETE) ``403`` (a foreign
``Origin``: :mod:`connectrt.listener.cross_origin`); operations under ``/connectors`` answer
``503`` with ``Retry-After`` while the worker starts; an operation with a body answers ``400``
for a malformed or invalid one, ``408`` for one that does not arrive in time, ``413`` for one
over ``rest.request.max.bytes`` (or a connector config over what the config topic takes) and
``415`` for one that is not ``application/json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from connectrt.rest import models as m

__all__ = ["OPERATIONS", "Op", "document_api"]

_REF = "#/components/schemas/{model}"
_TEXT = "text"  # a text/plain answer (the metrics exposition)

_REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad request: malformed JSON, a wrong type, or an invalid config (the message says which)",
    401: "Authentication required (rest.auth.type is basic or bearer)",
    403: "Forbidden by the worker's configuration, or a write from a foreign origin",
    408: "The request body did not arrive within rest.request.body.timeout.ms",
    404: "No such connector, task, plugin or logger",
    409: "Conflict: the connector already exists, or the operation is already under way",
    413: "Request body larger than rest.request.max.bytes, or a connector config larger than "
    "the config topic takes",
    415: "The request body is not application/json",
    500: "Unexpected error in the worker",
    503: "The worker is starting or stopping; retry after Retry-After seconds",
}


@dataclass(frozen=True)
class Op:
    """One operation's documentation: ``ok`` maps each success status to its model (None for
    no body, :data:`_TEXT` for text); ``errors`` are its error statuses beyond the ones every
    operation has."""

    ok: dict[int, Any]
    body: Any = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    headers: dict[int, dict[str, str]] = field(default_factory=dict)
    error_bodies: dict[int, Any] = field(default_factory=dict)  # not the ErrorBody


_C = (404,)  # a {connector} path
_LOCATION = {201: {"Location": "The new connector's URL"}}

OPERATIONS: dict[tuple[str, str], Op] = {
    ("get", "/"): Op({200: m.ServerInfo}),
    # KIP-1017: 503 starting, 500 unhealthy, both with the health body.
    ("get", "/health"): Op(
        {200: m.Health}, errors=(503,), error_bodies={500: m.Health, 503: m.Health}
    ),
    ("get", "/metrics"): Op({200: _TEXT}),
    ("get", "/connectors"): Op({200: list[str] | m.ExpandedConnectors}),
    ("post", "/connectors"): Op(
        {201: m.ConnectorInfo}, m.CreateConnectorRequest, errors=(409,), headers=_LOCATION
    ),
    ("get", "/connectors/{connector}"): Op({200: m.ConnectorInfo}, errors=_C),
    ("delete", "/connectors/{connector}"): Op({204: None}, errors=_C),
    ("get", "/connectors/{connector}/config"): Op({200: dict[str, str]}, errors=_C),
    ("put", "/connectors/{connector}/config"): Op(
        {200: m.ConnectorInfo, 201: m.ConnectorInfo},
        m.ConnectorConfigRequest,
        errors=(409,),
        headers=_LOCATION,
    ),
    ("patch", "/connectors/{connector}/config"): Op(
        {200: m.ConnectorInfo}, m.PatchConfigRequest, errors=_C
    ),
    ("get", "/connectors/{connector}/status"): Op({200: m.ConnectorStateInfo}, errors=_C),
    ("get", "/connectors/{connector}/tasks"): Op({200: list[m.TaskConfig]}, errors=_C),
    ("get", "/connectors/{connector}/tasks-config"): Op(
        {200: dict[str, dict[str, str]]}, errors=_C
    ),
    ("get", "/connectors/{connector}/tasks/{task}/status"): Op(
        {200: m.TaskState}, errors=(400, 404)
    ),
    ("post", "/connectors/{connector}/tasks/{task}/restart"): Op({204: None}, errors=(400, 404)),
    ("post", "/connectors/{connector}/restart"): Op(
        {202: m.ConnectorStateInfo, 204: None}, errors=(400, 404)
    ),
    ("put", "/connectors/{connector}/pause"): Op({202: None}, errors=_C),
    ("put", "/connectors/{connector}/resume"): Op({202: None}, errors=_C),
    ("put", "/connectors/{connector}/stop"): Op({204: None}, errors=_C),
    ("get", "/connectors/{connector}/topics"): Op({200: m.ConnectorTopics}, errors=(403, 404)),
    ("put", "/connectors/{connector}/topics/reset"): Op({202: None}, errors=(403, 404)),
    ("get", "/connectors/{connector}/offsets"): Op({200: m.ConnectorOffsets}, errors=_C),
    ("patch", "/connectors/{connector}/offsets"): Op(
        {200: m.OffsetsMessage}, m.AlterOffsetsRequest, errors=_C
    ),
    ("delete", "/connectors/{connector}/offsets"): Op({200: m.OffsetsMessage}, errors=(400, 404)),
    ("post", "/connectors/{connector}/offsets/reset"): Op(
        {200: m.ConnectorOffsets}, m.RewindRequest, errors=_C
    ),
    # Dead letter queue replay: the POST body's schema is the route's own (openapi_extra).
    ("post", "/connectors/{connector}/dlq/replay"): Op(
        {202: m.ReplayStatus},
        errors=(400, 404, 409, 413),
        headers={202: {"Location": "Where to follow the run"}},
    ),
    ("get", "/connectors/{connector}/dlq/replay"): Op({200: m.ReplayStatus}, errors=_C),
    ("delete", "/connectors/{connector}/dlq/replay"): Op({202: m.ReplayStatus}, errors=(404, 409)),
    ("get", "/control/events"): Op({200: list[m.ControlEventOutcome]}),
    ("get", "/connector-plugins"): Op({200: list[m.PluginInfo]}, errors=(400,)),
    ("get", "/connector-plugins/{plugin}/config"): Op(
        {200: list[m.ConfigKeyInfo]}, errors=(400, 404)
    ),
    ("put", "/connector-plugins/{plugin}/config/validate"): Op(
        {200: m.ConfigInfos}, m.PatchConfigRequest, errors=(404,)
    ),
    ("get", "/admin/loggers"): Op({200: dict[str, m.LoggerLevel]}),
    ("get", "/admin/loggers/{name}"): Op({200: m.LoggerLevel}, errors=(404,)),
    ("put", "/admin/loggers/{name}"): Op(
        {200: list[str], 204: None},
        m.LoggerLevelRequest,
        errors=(404,),
    ),
}


class _Schemas:
    """JSON schemas of the models, collected into ``components.schemas``."""

    def __init__(self, components: dict[str, Any]) -> None:
        self.components = components

    def ref(self, model: Any, mode: JsonSchemaMode) -> dict[str, Any]:
        if isinstance(model, type) and issubclass(model, BaseModel):
            _, top = models_json_schema([(model, mode)], ref_template=_REF)
            self.components.update(top.get("$defs", {}))
            return {"$ref": _REF.format(model=model.__name__)}
        schema = TypeAdapter(model).json_schema(ref_template=_REF, mode=mode)
        self.components.update(schema.pop("$defs", {}))
        return schema


def _error_response(schemas: _Schemas, status: int, body: Any = None) -> dict[str, Any]:
    model = body or m.ErrorBody
    response: dict[str, Any] = {
        "description": _REASONS[status],
        "content": {"application/json": {"schema": schemas.ref(model, "serialization")}},
    }
    if status == 503:
        response["headers"] = {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
        }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {"description": "The scheme to use", "schema": {"type": "string"}}
        }
    return response


def _complete(path: str, method: str, op: dict[str, Any], doc: Op, schemas: _Schemas) -> None:
    responses: dict[str, Any] = {}
    for status, model in doc.ok.items():
        response: dict[str, Any] = {"description": _REASONS[status]}
        if model == _TEXT:
            response["content"] = {"text/plain": {"schema": {"type": "string"}}}
        elif model is not None:
            schema = schemas.ref(model, "serialization")
            response["content"] = {"application/json": {"schema": schema}}
        headers = doc.headers.get(status)
        if headers:
            response["headers"] = {
                name: {"description": text, "required": True, "schema": {"type": "string"}}
                for name, text in headers.items()
            }
        responses[str(status)] = response
    errors = {401, 500, *doc.errors}
    if path.startswith("/connectors"):
        errors.add(503)
    if method in ("post", "put", "patch", "delete"):
        errors.add(403)
    if doc.body is not None:
        errors.update((400, 408, 413, 415))
    for status in sorted(errors):
        responses[str(status)] = _error_response(schemas, status, doc.error_bodies.get(status))
    op["responses"] = responses
    if doc.body is not None:
        op["requestBody"] = {
            "required": doc.body_required,
            "content": {"application/json": {"schema": schemas.ref(doc.body, "validation")}},
        }


def document_api(app: FastAPI) -> None:
    """Make ``app.openapi()`` return the completed document (built once, then cached)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        components = document.setdefault("components", {}).setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        schemas = _Schemas(components)
        for path, operations in document["paths"].items():
            for method, op in operations.items():
                doc = OPERATIONS.get((method, path))
                if doc is not None:  # a route without an entry keeps FastAPI's own document
                    _complete(path, method, op, doc, schemas)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
