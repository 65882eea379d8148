"""The error types a plugin raises, as the plugin author imports them.

They are defined in :mod:`connectrt.errors` (the one module every layer may import, ``data``
included); this module is their place in the plugin API.
"""

from connectrt.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    IllegalWorkerStateError,
    NotFoundError,
    RetriableError,
    SchemaBuilderError,
    SchemaProjectorError,
)

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
