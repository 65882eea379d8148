"""The JSON responses every REST route answers with: bodies rendered by orjson, and Kafka
Connect's error body ``{"error_code": <status>, "message": "..."}``. Stateless."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse, Response

__all__ = ["JSON", "error_response"]


class JSON(JSONResponse):
    """A JSON response rendered by orjson (the app's default response class)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """Kafka Connect's error body with ``status``."""
    return JSON({"error_code": status, "message": message}, status_code=status, headers=headers)
