"""The registry client the Avro converter uses (shared with the other schema converters:
:mod:`connectrt.converters.registry_client`)."""

from __future__ import annotations

from connectrt.converters.registry_client import CONTENT_TYPE, RegistryError, SchemaRegistryClient

__all__ = ["CONTENT_TYPE", "RegistryError", "SchemaRegistryClient"]
