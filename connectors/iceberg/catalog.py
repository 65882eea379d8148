"""Opening the configured catalog through pyiceberg's ``load_catalog``.

Every ``iceberg.catalog.<key>`` is handed to ``load_catalog`` as ``<key>`` (``type``, ``uri``,
``warehouse``, credentials...). An error names the catalog and the failure, never the
properties (they may hold credentials). Thread-safe; each task opens its own catalog.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.catalog import load_catalog

from connectors.iceberg.config import IcebergSinkConfig
from connectrt.api import ConnectError

__all__ = ["load"]


def load(config: IcebergSinkConfig) -> Any:
    """The pyiceberg catalog of ``config``; ConnectError when it cannot be opened."""
    try:
        return load_catalog(config.catalog_name, **dict(config.catalog_properties))
    except Exception as exc:  # any failure: the catalog is unusable
        kind = config.catalog_properties.get("type", "?")
        raise ConnectError(
            f"Cannot open Iceberg catalog '{config.catalog_name}' (type {kind}): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
