"""Object storage sink: topics as Parquet, JSON lines or Avro objects on S3-compatible storage
or a local directory, exactly once (Confluent's S3 sink keys and object names)."""

from connectors.objectstore.connector import ObjectStoreSinkConnector
from connectors.objectstore.task import ObjectStoreSinkTask

__all__ = ["ObjectStoreSinkConnector", "ObjectStoreSinkTask"]
