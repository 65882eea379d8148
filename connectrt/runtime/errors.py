"""Runtime errors the REST layer maps to HTTP statuses (plugins never raise these)."""

from __future__ import annotations

from connectrt.errors import ConnectError

__all__ = ["BadRequestError", "ConflictError", "ForbiddenError"]


class BadRequestError(ConnectError):
    """The request is malformed or not allowed in the current state (HTTP 400)."""


class ConflictError(ConnectError):
    """The request conflicts with the current state (HTTP 409)."""


class ForbiddenError(ConnectError):
    """The operation is disabled by configuration (HTTP 403)."""
