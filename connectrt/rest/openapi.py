"""The REST API's OpenAPI document: request bodies, response models and error statuses.

FastAPI derives the document from the routes, but the handlers read raw bodies (to answer
malformed JSON with Kafka Connect's error body and messages) and return plain JSON, so on its
own it knows neither the request bodies nor the response shapes, and it documents a ``422``
the API never sends (validation errors are answered ``400``). :func:`document_api` replaces
the app's ``openapi()`` with one that completes FastAPI's document from what each handler
declares with :func:`documented` (right under its route's decorator): for every operation,
the body it reads (required or not), each success status with its model
(:mod:`connectrt.rest.models`), and the error statuses it can answer, all with the
``{"error_code", "message"}`` body. Every route must be documented (a new route without it
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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.routing import Router

from connectrt.rest import models as m

__all__ = ["EVENT_STREAM", "TEXT", "Op", "document_api", "documented", "operations"]

_REF = "#/components/schemas/{model}"
TEXT = "text"  # a text/plain answer (the metrics exposition)
EVENT_STREAM = "event-stream"  # server-sent events (the record inspector's tap)

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
    no body, :data:`TEXT` for text); ``errors`` are its error statuses beyond the ones every
    operation has."""

    ok: dict[int, Any]
    body: Any = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    headers: dict[int, dict[str, str]] = field(default_factory=dict)
    error_bodies: dict[int, Any] = field(default_factory=dict)  # not the ErrorBody


F = TypeVar("F", bound=Callable[..., Any])
_DOC_ATTRIBUTE = "__rest_operation__"


def documented(
    ok: dict[int, Any],
    body: Any = None,
    *,
    errors: tuple[int, ...] = (),
    headers: dict[int, dict[str, str]] | None = None,
    error_bodies: dict[int, Any] | None = None,
) -> Callable[[F], F]:
    """Attach an operation's documentation (:class:`Op`) to its handler; put it under the
    route's decorator. ``body`` is the request model (:mod:`connectrt.rest.models`) whose
    ``read`` the handler calls."""
    op = Op(ok, body, errors=errors, headers=headers or {}, error_bodies=error_bodies or {})

    def attach(handler: F) -> F:
        setattr(handler, _DOC_ATTRIBUTE, op)
        return handler

    return attach


def operations(routers: Iterable[Router]) -> dict[tuple[str, str], Op]:
    """``(method, path) -> Op`` of every documented route of ``routers``."""
    found: dict[tuple[str, str], Op] = {}
    for router in routers:
        for route in router.routes:
            op = getattr(getattr(route, "endpoint", None), _DOC_ATTRIBUTE, None)
            if isinstance(route, APIRoute) and isinstance(op, Op):
                for method in route.methods or ():
                    found[(method.lower(), route.path)] = op
    return found


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
        if model == TEXT:
            response["content"] = {"text/plain": {"schema": {"type": "string"}}}
        elif model == EVENT_STREAM:
            response["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
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


def document_api(app: FastAPI, routers: Sequence[Router]) -> None:
    """Make ``app.openapi()`` return the completed document (built once, then cached), from
    the documentation on the handlers of ``routers`` (:func:`documented`)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        components = document.setdefault("components", {}).setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        schemas = _Schemas(components)
        documentation = operations(routers)
        for path, path_operations in document["paths"].items():
            for method, op in path_operations.items():
                doc = documentation.get((method, path))
                if doc is not None:  # a route without an entry keeps FastAPI's own document
                    _complete(path, method, op, doc, schemas)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
