"""Apache Iceberg sink: Kafka records into Iceberg tables through pyiceberg, exactly once.

Needs the ``iceberg`` extra (pyiceberg with its SQL catalog, pyarrow).
"""

from connectors.iceberg.connector import IcebergSinkConnector
from connectors.iceberg.task import IcebergSinkTask

__all__ = ["IcebergSinkConnector", "IcebergSinkTask"]
