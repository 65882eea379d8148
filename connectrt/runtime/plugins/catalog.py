"""The plugins connectrt ships, under the names Kafka Connect knows them by.

:data:`BUNDLED_PLUGINS` lists ``(python path, Kafka class name, plugin type)`` for the bundled
connectors, converters and config providers; the bundled transformations and predicates are
listed by :mod:`connectrt.transforms`. :class:`~connectrt.runtime.plugins.registry.PluginRegistry`
registers both when it is created. The classes are named, not imported: each is imported when
it is first loaded.
"""

from __future__ import annotations

__all__ = ["BUNDLED_PLUGINS", "TYPE_SUFFIXES", "simple_names"]

TYPE_SUFFIXES: dict[str, str] = {
    "source": "Connector",
    "sink": "Connector",
    "converter": "Converter",
    "header_converter": "HeaderConverter",
    "transformation": "Transformation",
    "predicate": "Predicate",
    "configprovider": "ConfigProvider",
}
"""The suffix of each plugin type's class names, which a simple name may drop."""


def simple_names(class_name: str, plugin_type: str) -> set[str]:
    """The short names a worker accepts for plugin ``class_name`` (a dotted path, a Python path
    with ``module:Class``, or a Kafka class name) of ``plugin_type``: its simple name, and that
    name without its type's suffix (``FileStreamSource`` for ``FileStreamSourceConnector``)."""
    simple = class_name.replace(":", ".").rsplit(".", 1)[-1]
    names = {simple}
    suffix = TYPE_SUFFIXES.get(plugin_type)
    if suffix and simple.endswith(suffix) and simple != suffix:
        names.add(simple[: -len(suffix)])
    return names


BUNDLED_PLUGINS: list[tuple[str, str, str]] = [
    # (python path, kafka java class, type)
    (
        "connectors.file.FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "source",
    ),
    (
        "connectors.file.FileStreamSinkConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "sink",
    ),
    (
        "connectors.jdbc.source.JdbcSourceConnector",
        "io.confluent.connect.jdbc.JdbcSourceConnector",
        "source",
    ),
    (
        "connectors.jdbc.sink.JdbcSinkConnector",
        "io.confluent.connect.jdbc.JdbcSinkConnector",
        "sink",
    ),
    (
        "connectors.postgres_cdc.PostgresCdcSourceConnector",
        "io.debezium.connector.postgresql.PostgresConnector",
        "source",
    ),
    (
        "connectors.objectstore.ObjectStoreSinkConnector",
        "io.confluent.connect.s3.S3SinkConnector",
        "sink",
    ),
    (
        "connectors.iceberg.IcebergSinkConnector",
        "org.apache.iceberg.connect.IcebergSinkConnector",
        "sink",
    ),
    (
        "connectors.datagen.DatagenConnector",
        "io.confluent.kafka.connect.datagen.DatagenConnector",
        "source",
    ),
    (
        "connectrt.converters.json.JsonConverter",
        "org.apache.kafka.connect.json.JsonConverter",
        "converter",
    ),
    (
        "connectrt.converters.string.StringConverter",
        "org.apache.kafka.connect.storage.StringConverter",
        "converter",
    ),
    (
        "connectrt.converters.bytearray.ByteArrayConverter",
        "org.apache.kafka.connect.converters.ByteArrayConverter",
        "converter",
    ),
    (
        "connectrt.converters.avro.AvroConverter",
        "io.confluent.connect.avro.AvroConverter",
        "converter",
    ),
    (
        "connectrt.converters.jsonschema.JsonSchemaConverter",
        "io.confluent.connect.json.JsonSchemaConverter",
        "converter",
    ),
    (
        "connectrt.converters.protobuf.ProtobufConverter",
        "io.confluent.connect.protobuf.ProtobufConverter",
        "converter",
    ),
    (
        "connectrt.converters.headers.SimpleHeaderConverter",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "header_converter",
    ),
    (
        "connectrt.runtime.secrets.providers.FileConfigProvider",
        "org.apache.kafka.common.config.provider.FileConfigProvider",
        "configprovider",
    ),
    (
        "connectrt.runtime.secrets.providers.DirectoryConfigProvider",
        "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "configprovider",
    ),
    (
        "connectrt.runtime.secrets.providers.EnvVarConfigProvider",
        "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "configprovider",
    ),
]
