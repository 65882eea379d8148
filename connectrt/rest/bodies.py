"""Reading a request's JSON body as Kafka Connect's JAX-RS layer does: JSON only.

Kafka Connect's resources consume ``application/json``: a request with a body of any other
media type gets ``415`` (``{"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}``).
That is also what keeps a web page from driving the API: a page can send ``text/plain``,
``application/x-www-form-urlencoded`` or ``multipart/form-data`` (or no type at all) to another
origin without asking first, but never ``application/json``. :func:`read_json` is what every
route that reads a body calls; routes without a body (pause, resume, restart...) ignore the
header, as Kafka Connect does, so clients that send an empty body with some type keep working.

The rule: a ``Content-Type`` that is not ``application/json`` (parameters such as ``charset``
allowed) is refused with 415, whatever the body; a request without ``Content-Type`` is refused
only if it has a body. Stateless; called on the listener's event loop.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from starlette.exceptions import HTTPException

from connectrt.runtime.errors import BadRequestError

__all__ = ["UNSUPPORTED_MEDIA_TYPE", "is_json", "read_json"]

UNSUPPORTED_MEDIA_TYPE = "Unsupported Media Type"


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` value is ``application/json`` (any parameters)."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


async def read_json(request: Request, required: bool = True) -> Any:
    """The request's body parsed as JSON (``{}`` for an empty optional body).

    415 (an ``HTTPException``) for a body that is not declared ``application/json``; a
    BadRequestError for a missing required body or malformed JSON."""
    content_type = request.headers.get("content-type")
    if content_type is not None and not is_json(content_type):
        raise HTTPException(415, UNSUPPORTED_MEDIA_TYPE)
    raw = await request.body()
    if raw and content_type is None:
        raise HTTPException(415, UNSUPPORTED_MEDIA_TYPE)
    if not raw.strip():
        if required:
            raise BadRequestError("Request body is required")
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadRequestError(f"Invalid JSON in request body: {e}") from None
