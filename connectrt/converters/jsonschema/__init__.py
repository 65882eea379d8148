"""JsonSchemaConverter: Confluent's JSON Schema wire format through a Confluent-compatible
schema registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the JSON payload. Connect
schemas map to JSON Schema as Confluent's ``JsonSchemaData`` maps them
(:mod:`~connectrt.converters.jsonschema.schema_mapping`: ``connect.type``, ``connect.index``,
``connect.parameters`` annotations, so that Confluent's Java converter reads our records the
same), the payload is Kafka Connect's JSON payload with Confluent's map entries and unions
(:mod:`~connectrt.converters.jsonschema.values`). Schemas are registered with
``schemaType: JSON``; those read are resolved with their ``references``.

The modules: :mod:`~connectrt.converters.jsonschema.converter` (the class),
:mod:`~connectrt.converters.jsonschema.config`,
:mod:`~connectrt.converters.jsonschema.schema_mapping` and
:mod:`~connectrt.converters.jsonschema.values`.
"""

from __future__ import annotations

from connectrt.converters.jsonschema.config import CONFIG_KEYS
from connectrt.converters.jsonschema.converter import MAGIC_BYTE, JsonSchemaConverter

__all__ = ["CONFIG_KEYS", "MAGIC_BYTE", "JsonSchemaConverter"]

# The class's public name (plugin listings, DLQ headers and error traces name a converter by
# ``__module__``): ``connectrt.converters.jsonschema.JsonSchemaConverter``.
JsonSchemaConverter.__module__ = __name__
