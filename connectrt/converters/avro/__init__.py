"""AvroConverter: Confluent's Avro wire format through a Confluent-compatible schema registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the Avro binary encoding of the
value (``fastavro`` underneath). Connect schemas map to Avro as in
:mod:`connectrt.data.avro_schema` (Confluent ``AvroData``-compatible).

Caching (no registry call per record): per Connect schema, the Avro schema, its parsed form and
a compiled datum encoder; per (subject, Connect schema) the schema id; per schema id the parsed
writer schema, its Connect schema and a compiled datum decoder. Caches are bounded by
``schemas.cache.size`` (LRU).

Logical types are converted by this package with :mod:`connectrt.data.logical` (byte-exact
with Kafka); fastavro is handed schemas without ``logicalType`` attributes (same binary
encoding).

Thread-safety: configure once, then use from a single task thread (caches are not locked).

The modules: :mod:`~connectrt.converters.avro.converter` (the class),
:mod:`~connectrt.converters.registry_config`, :mod:`~connectrt.converters.avro.registry` (the
registry client), :mod:`~connectrt.converters.avro.schema_codecs` (what is prepared per
schema), :mod:`~connectrt.converters.avro.encoder`, :mod:`~connectrt.converters.avro.decoder`
and :mod:`~connectrt.converters.avro.decimals`.
"""

from __future__ import annotations

from connectrt.converters.avro.converter import MAGIC_BYTE, AvroConverter
from connectrt.converters.avro.registry import CONTENT_TYPE, RegistryError, SchemaRegistryClient
from connectrt.converters.registry_config import CONFIG_KEYS

__all__ = [
    "CONFIG_KEYS",
    "CONTENT_TYPE",
    "MAGIC_BYTE",
    "AvroConverter",
    "RegistryError",
    "SchemaRegistryClient",
]

# The class's public name: plugin listings, DLQ headers and error traces name a converter by
# ``__module__``, and that name is the ``connectrt.converters.avro.AvroConverter`` users
# configure.
AvroConverter.__module__ = __name__
