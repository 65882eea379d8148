"""A Confluent Schema Registry-compatible REST API (Avro, JSON Schema), persisted in a Kafka
topic."""

from connectrt.schema_registry.app import create_registry_app
from connectrt.schema_registry.compatibility import LEVELS, check_compatibility, parse_avro
from connectrt.schema_registry.server import SchemaRegistryServer
from connectrt.schema_registry.store import (
    KafkaSchemaStore,
    MemorySchemaStore,
    RegistryError,
    SchemaStore,
    SchemaVersion,
)

__all__ = [
    "LEVELS",
    "KafkaSchemaStore",
    "MemorySchemaStore",
    "RegistryError",
    "SchemaRegistryServer",
    "SchemaStore",
    "SchemaVersion",
    "check_compatibility",
    "create_registry_app",
    "parse_avro",
]
