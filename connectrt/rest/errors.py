"""The REST app's exception handlers: every error answered with Kafka Connect's body
``{"error_code": <status>, "message": "..."}``.

The herder's errors map to Kafka Connect's statuses (:data:`ERROR_STATUS`); any other
:class:`ConnectError` is a 500, and so is an unexpected exception (logged with its traceback).
Starlette's own 404/405 are worded as Jersey words them (``HTTP 404 Not Found``), a 405 with
the ``Allow`` header; FastAPI's validation of path and query parameters answers 400 (never
422). Every message goes through the worker's one redaction function first: no secret it knows
(a resolved value, a password) is ever quoted back. Handlers are stateless and run on the
listener's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Router

from connectrt.errors import AlreadyExistsError, ConfigError, ConnectError, NotFoundError
from connectrt.rest.config_limits import ConfigTooLarge
from connectrt.rest.methods import allowed_methods
from connectrt.rest.responses import error_response
from connectrt.runtime.errors import BadRequestError, ConflictError, ForbiddenError

__all__ = ["ERROR_STATUS", "install_error_handlers"]

log = logging.getLogger("connectrt.rest.app")  # the logger these messages always had

# Errors the herder raises and the HTTP status Kafka Connect answers them with.
ERROR_STATUS: dict[type[Exception], int] = {
    NotFoundError: 404,
    AlreadyExistsError: 409,
    ConflictError: 409,
    ForbiddenError: 403,
    BadRequestError: 400,
    ConfigError: 400,
    ConfigTooLarge: 413,
}


def install_error_handlers(
    app: FastAPI, redact: Callable[[str], str], routers: Sequence[Router]
) -> None:
    """Add the handlers to ``app``. ``redact`` is applied to every message; ``routers`` are
    all the app's routers (for a 405's ``Allow`` header)."""

    def _handler(status: int) -> Any:
        def handle(request: Request, exc: Exception) -> Response:
            return error_response(status, redact(str(exc)))

        return handle

    for error_type, status in ERROR_STATUS.items():
        app.add_exception_handler(error_type, _handler(status))

    @app.exception_handler(ConnectError)
    def _connect_error(request: Request, exc: ConnectError) -> Response:
        log.warning("Request %s %s failed: %s", request.method, request.url.path, exc)
        return error_response(500, redact(str(exc)))

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> Response:
        reason = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(routers, request.scope))
        return error_response(exc.status_code, f"HTTP {exc.status_code} {reason}", headers or None)

    @app.exception_handler(RequestValidationError)
    def _validation(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(400, f"Invalid request: {where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> Response:
        log.error("Unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, redact(f"{type(exc).__name__}: {exc}"))
