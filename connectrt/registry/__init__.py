"""A Confluent Schema Registry-compatible REST API (Avro), persisted in a Kafka topic."""

from connectrt.registry.app import create_registry_app
from connectrt.registry.compatibility import LEVELS, check_compatibility, parse_avro
from connectrt.registry.server import SchemaRegistryServer
from connectrt.registry.store import (
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
