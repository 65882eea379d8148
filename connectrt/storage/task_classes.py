"""Task class names in the config topic: Kafka Connect's where the connector has one.

A task config names its task class (``task.class``). connectrt's bundled connectors run Python
task classes (``connectors.file.source.FileStreamSourceTask``) that Kafka Connect cannot load,
so a Kafka Connect cluster taking over connectrt's topics failed every task on its first start.
The config topic therefore holds the Kafka Connect class of the task of every bundled connector
that has a Kafka Connect counterpart (``org.apache.kafka.connect.file.FileStreamSourceTask``);
when read back, the name becomes connectrt's class again, so connectrt keeps loading its own
and a task config Kafka Connect wrote reads the same as the one connectrt generates.
Pure functions over immutable tables: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["KAFKA_CONNECT_TASK_CLASSES", "task_class_for_connectrt", "task_class_for_kafka_connect"]

TASK_CLASS = "task.class"

KAFKA_CONNECT_TASK_CLASSES: Mapping[str, str] = {
    # connectrt task class -> the Kafka Connect task class of the same connector
    "connectors.file.source.FileStreamSourceTask": (
        "org.apache.kafka.connect.file.FileStreamSourceTask"
    ),
    "connectors.file.sink.FileStreamSinkTask": "org.apache.kafka.connect.file.FileStreamSinkTask",
    "connectors.jdbc.source.task.JdbcSourceTask": "io.confluent.connect.jdbc.source.JdbcSourceTask",
    "connectors.jdbc.sink.task.JdbcSinkTask": "io.confluent.connect.jdbc.sink.JdbcSinkTask",
    "connectors.postgres_cdc.task.PostgresCdcSourceTask": (
        "io.debezium.connector.postgresql.PostgresConnectorTask"
    ),
    "connectors.objectstore.task.ObjectStoreSinkTask": "io.confluent.connect.s3.S3SinkTask",
    "connectors.iceberg.task.IcebergSinkTask": "org.apache.iceberg.connect.IcebergSinkTask",
    "connectors.datagen.source.DatagenTask": "io.confluent.kafka.connect.datagen.DatagenTask",
}
"""The bundled connectors' task classes and Kafka Connect's (the connectors' Kafka Connect
class names are in :data:`connectrt.runtime.plugins.catalog.BUNDLED_PLUGINS`)."""

_CONNECTRT_TASK_CLASSES = {java: py for py, java in KAFKA_CONNECT_TASK_CLASSES.items()}


def task_class_for_kafka_connect(config: Mapping[str, str]) -> Mapping[str, str]:
    """``config`` as written to the config topic: a connectrt task class with a Kafka Connect
    counterpart replaced by it (same key order); otherwise ``config`` itself."""
    java = KAFKA_CONNECT_TASK_CLASSES.get(config.get(TASK_CLASS, ""))
    if java is None:
        return config
    return {k: (java if k == TASK_CLASS else v) for k, v in config.items()}


def task_class_for_connectrt(config: dict[str, str]) -> dict[str, str]:
    """``config`` as read from the config topic: a Kafka Connect task class of a bundled
    connector replaced by connectrt's (same key order); otherwise ``config`` itself."""
    py = _CONNECTRT_TASK_CLASSES.get(config.get(TASK_CLASS, ""))
    if py is None:
        return config
    return {k: (py if k == TASK_CLASS else v) for k, v in config.items()}
