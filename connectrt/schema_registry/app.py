"""A Confluent Schema Registry-compatible REST API over a :class:`SchemaStore`: Avro, JSON
Schema and Protobuf schemas (``schemaType``), with ``references`` to other subjects' versions.

Requests may use ``application/vnd.schemaregistry.v1+json``, ``application/json`` or no
content type (the body is parsed as JSON regardless); answers are
``application/vnd.schemaregistry.v1+json``. Errors use Confluent's bodies:
``{"error_code": 40401, "message": "Subject 'x' not found."}``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from connectrt.schema_registry.protobuf_schema import version_answer
from connectrt.schema_registry.schema_records import Reference
from connectrt.schema_registry.schema_types import SCHEMA_TYPES
from connectrt.schema_registry.store import RegistryError, SchemaStore, SchemaVersion

log = logging.getLogger(__name__)

__all__ = ["CONTENT_TYPE", "create_registry_app"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
T = TypeVar("T")


class _Response(JSONResponse):
    media_type = CONTENT_TYPE


def _error(status: int, error_code: int, message: str) -> Response:
    return _Response({"error_code": error_code, "message": message}, status_code=status)


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes")


def _version_body(sv: SchemaVersion) -> dict[str, Any]:
    return sv.body()


def _schema_body(sv: SchemaVersion) -> dict[str, Any]:
    """``GET /schemas/ids/{id}``'s answer: the schema, its type (unless Avro), references."""
    body = {k: v for k, v in sv.body().items() if k in ("schemaType", "references")}
    body["schema"] = sv.schema
    return body


class SchemaRequest:
    """The body of a register, lookup or compatibility request."""

    def __init__(self, schema: str, schema_type: str, references: tuple[Reference, ...]) -> None:
        self.schema = schema
        self.schema_type = schema_type
        self.references = references


async def _schema_request(request: Request) -> SchemaRequest:
    """A ``{"schema": "...", "schemaType": "JSON", "references": [...]}`` body."""
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError as exc:
        raise RegistryError(400, 400, f"Invalid JSON in request body: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
        raise RegistryError(422, 42201, "Invalid schema: the body needs a string 'schema'")
    schema_type = str(body.get("schemaType") or "AVRO").upper()
    if schema_type not in SCHEMA_TYPES:
        raise RegistryError(422, 42201, f"Invalid schema type {body.get('schemaType')}")
    try:
        references = tuple(Reference.from_json(r) for r in body.get("references") or ())
    except ValueError as exc:
        raise RegistryError(422, 42201, f"Invalid schema: {exc}") from None
    return SchemaRequest(str(body["schema"]), schema_type, references)


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise RegistryError(400, 400, f"Invalid JSON in request body: {exc}") from None


def create_registry_app(store: SchemaStore) -> FastAPI:
    """The registry's FastAPI app. ``store`` must be started; the app never stops it."""
    app = FastAPI(
        title="connectrt schema registry",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=_Response,
    )

    async def call(fn: Callable[..., T], *args: Any) -> T:
        return await run_in_threadpool(fn, *args)

    @app.exception_handler(RegistryError)
    async def _registry_error(_request: Request, exc: RegistryError) -> Response:
        return _error(exc.status, exc.error_code, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        return _error(exc.status_code, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> Response:
        return _error(422, 422, f"Invalid request: {exc.errors()}")

    @app.exception_handler(Exception)
    async def _internal_error(_request: Request, exc: Exception) -> Response:
        log.exception("Schema registry request failed")
        return _error(500, 50001, f"Error in the backend data store: {exc}")

    @app.get("/")
    async def root() -> dict[str, Any]:
        return {}

    @app.get("/schemas/types")
    async def schema_types() -> list[str]:
        return [t for t in ("JSON", "PROTOBUF", "AVRO") if t in SCHEMA_TYPES]

    @app.get("/subjects")
    async def list_subjects(request: Request) -> list[str]:
        query = request.query_params
        deleted_only = _flag(query.get("deleted_only"))
        names = await call(store.subjects, deleted_only or _flag(query.get("deleted")))
        if deleted_only:
            live = set(await call(store.subjects, False))
            names = [n for n in names if n not in live]
        prefix = query.get("subjectPrefix") or query.get("subject") or ""
        return _page([n for n in names if n.startswith(prefix)], request)

    @app.get("/subjects/{subject}/versions")
    async def list_versions(subject: str, request: Request) -> list[int]:
        query = request.query_params
        deleted_only = _flag(query.get("deleted_only"))
        versions = await call(store.versions, subject, deleted_only or _flag(query.get("deleted")))
        if deleted_only:
            live = set(await call(_live_versions, store, subject))
            versions = [v for v in versions if v not in live]
        return _page(versions, request)

    @app.get("/mode")
    async def get_mode() -> dict[str, Any]:
        return {"mode": "READWRITE"}

    @app.get("/mode/{subject}")
    async def get_subject_mode(subject: str) -> dict[str, Any]:
        return {"mode": "READWRITE"}

    @app.post("/subjects/{subject}/versions")
    async def register(subject: str, request: Request) -> dict[str, Any]:
        req = await _schema_request(request)
        sv = await call(store.register, subject, req.schema, req.schema_type, req.references)
        return {"id": sv.id}

    @app.get("/subjects/{subject}/versions/{version}/referencedby")
    async def referenced_by(subject: str, version: str) -> list[int]:
        return await call(store.referenced_by, subject, version)

    def formatted(sv: SchemaVersion, fmt: str | None) -> dict[str, Any]:
        """``sv``'s body with a PROTOBUF schema in the asked ``format`` (``serialized``:
        base64 descriptor; else ``.proto`` text)."""
        body = sv.body()
        if sv.schema_type == "PROTOBUF":
            body["schema"] = version_answer(sv, fmt, store.get_version)
        return body

    @app.get("/subjects/{subject}/versions/{version}")
    async def get_version(
        subject: str, version: str, deleted: str | None = None, format: str | None = None
    ) -> Any:
        sv = await call(store.get_version, subject, version, _flag(deleted))
        return await call(formatted, sv, format)

    @app.get("/subjects/{subject}/versions/{version}/schema")
    async def get_version_schema(subject: str, version: str, deleted: str | None = None) -> Any:
        sv = await call(store.get_version, subject, version, _flag(deleted))
        return Response(sv.schema, media_type=CONTENT_TYPE)

    @app.post("/subjects/{subject}")
    async def lookup(subject: str, request: Request, deleted: str | None = None) -> Any:
        req = await _schema_request(request)
        sv = await call(
            store.lookup, subject, req.schema, _flag(deleted), req.schema_type, req.references
        )
        return _version_body(sv)

    @app.delete("/subjects/{subject}")
    async def delete_subject(subject: str, permanent: str | None = None) -> list[int]:
        return await call(store.delete_subject, subject, _flag(permanent))

    @app.delete("/subjects/{subject}/versions/{version}")
    async def delete_version(subject: str, version: str, permanent: str | None = None) -> int:
        return await call(store.delete_version, subject, version, _flag(permanent))

    @app.get("/schemas/ids/{schema_id}")
    async def schema_by_id(schema_id: int, format: str | None = None) -> dict[str, Any]:
        sv = await call(store.schema_version_by_id, schema_id)
        body = _schema_body(sv)
        if sv.schema_type == "PROTOBUF":
            body["schema"] = (await call(formatted, sv, format))["schema"]
        return body

    @app.get("/schemas/ids/{schema_id}/schema")
    async def raw_schema_by_id(schema_id: int) -> Response:
        return Response(await call(store.schema_by_id, schema_id), media_type=CONTENT_TYPE)

    @app.get("/schemas/ids/{schema_id}/versions")
    async def versions_by_id(schema_id: int, deleted: str | None = None) -> list[Any]:
        svs = await call(store.versions_by_id, schema_id, _flag(deleted))
        return [{"subject": sv.subject, "version": sv.version} for sv in svs]

    @app.get("/schemas/ids/{schema_id}/subjects")
    async def subjects_by_id(schema_id: int, deleted: str | None = None) -> list[str]:
        svs = await call(store.versions_by_id, schema_id, _flag(deleted))
        return sorted({sv.subject for sv in svs})

    @app.get("/config")
    async def get_global_config() -> dict[str, Any]:
        return {"compatibilityLevel": await call(store.get_compatibility, None, True)}

    @app.put("/config")
    async def put_global_config(request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        level = body.get("compatibility") if isinstance(body, dict) else None
        return {"compatibility": await call(store.set_compatibility, None, level)}

    @app.delete("/config")
    async def delete_global_config() -> dict[str, Any]:
        return {"compatibilityLevel": await call(store.delete_compatibility, None)}

    @app.get("/config/{subject}")
    async def get_subject_config(subject: str, request: Request) -> Any:
        to_global = _flag(request.query_params.get("defaultToGlobal"))
        level = await call(store.get_compatibility, subject, to_global)
        return {"compatibilityLevel": level}

    @app.put("/config/{subject}")
    async def put_subject_config(subject: str, request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        level = body.get("compatibility") if isinstance(body, dict) else None
        return {"compatibility": await call(store.set_compatibility, subject, level)}

    @app.delete("/config/{subject}")
    async def delete_subject_config(subject: str) -> dict[str, Any]:
        return {"compatibilityLevel": await call(store.delete_compatibility, subject)}

    @app.post("/compatibility/subjects/{subject}/versions/{version}")
    async def check_version(subject: str, version: str, request: Request) -> Any:
        req = await _schema_request(request)
        messages = await call(
            store.test_compatibility,
            subject,
            req.schema,
            version,
            req.schema_type,
            req.references,
        )
        return _compat_body(messages, request)

    @app.post("/compatibility/subjects/{subject}/versions")
    async def check_all(subject: str, request: Request) -> Any:
        req = await _schema_request(request)
        messages = await call(
            store.test_compatibility, subject, req.schema, None, req.schema_type, req.references
        )
        return _compat_body(messages, request)

    return app


def _live_versions(store: SchemaStore, subject: str) -> list[int]:
    try:
        return store.versions(subject, False)
    except RegistryError:
        return []


def _page(items: list[T], request: Request) -> list[T]:
    """Confluent's ``offset`` / ``limit`` pagination (a negative limit means all)."""
    try:
        offset = max(0, int(request.query_params.get("offset", 0)))
        limit = int(request.query_params.get("limit", -1))
    except ValueError:
        raise RegistryError(422, 422, "offset and limit must be integers") from None
    items = items[offset:]
    return items if limit < 0 else items[:limit]


def _compat_body(messages: list[str], request: Request) -> dict[str, Any]:
    body: dict[str, Any] = {"is_compatible": not messages}
    if _flag(request.query_params.get("verbose")):
        body["messages"] = messages
    return body
