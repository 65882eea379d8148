"""The error types of connectrt: what plugins raise and the runtime interprets.

One root, :class:`ConnectError`. The runtime decides per stage what is retried, tolerated or
fails the task; plugins only say *what kind* of failure happened:

* :class:`RetriableError` - transient; the same operation may succeed if retried
  (``poll()``/``put()`` are retried without restarting the task).
* :class:`DataError` - a record (or value) does not fit its schema or cannot be converted.
* :class:`ConfigError` - a configuration value is missing or invalid; carries the key.
* :class:`NotFoundError`, :class:`AlreadyExistsError` - herder lookups (mapped to 404/409 by REST).
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "ConfigError",
    "ConnectError",
    "DataError",
    "IllegalWorkerStateError",
    "NotFoundError",
    "RetriableError",
    "SchemaBuilderError",
    "SchemaProjectorError",
]


class ConnectError(Exception):
    """Root of every error connectrt raises or interprets."""


class RetriableError(ConnectError):
    """A transient failure: the runtime may retry the operation that raised it."""


class DataError(ConnectError):
    """A value does not match its schema, or bytes cannot be converted to or from Connect data."""


class SchemaBuilderError(DataError):
    """A schema was built inconsistently (e.g. a default that does not match the type)."""


class SchemaProjectorError(DataError):
    """A value cannot be projected from one schema onto another."""


class ConfigError(ConnectError):
    """A configuration is invalid.

    ``name`` is the offending key (None when the error is about the whole config) and
    ``value`` the value that was rejected; ``str(err)`` is the human-readable reason.
    """

    def __init__(self, message: str, name: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.name = name
        self.value = value


class NotFoundError(ConnectError):
    """A connector, task, plugin or resource does not exist."""


class AlreadyExistsError(ConnectError):
    """A connector with that name already exists."""


class IllegalWorkerStateError(ConnectError):
    """An operation is not allowed in the current state of the worker or connector."""
