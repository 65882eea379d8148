"""The registry's errors: :class:`RegistryError` carries Confluent's HTTP status and
``error_code``; one constructor per error the registry answers with, worded as Confluent's.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RegistryError",
    "invalid_level",
    "invalid_version",
    "schema_not_found",
    "subject_not_found",
    "version_not_found",
]


class RegistryError(Exception):
    """An error with Confluent's HTTP status and ``error_code``."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    """404, 40401: no such subject (or none of its versions is visible)."""
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    """404, 40402: the subject has no such version."""
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    """404, 40403: no schema with that id (or no version of the subject holds it)."""
    message = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RegistryError(404, 40403, message)


def invalid_version(version: Any) -> RegistryError:
    """422, 42202: a version that is neither in [1, 2^31-1] nor ``latest``."""
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_level() -> RegistryError:
    """422, 42203: not a compatibility level."""
    return RegistryError(
        422,
        42203,
        "Invalid compatibility level. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )
