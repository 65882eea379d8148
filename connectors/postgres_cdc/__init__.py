"""Change data capture from PostgreSQL (logical replication, pgoutput) in Debezium's events."""

from .connector import PostgresCdcSourceConnector
from .task import PostgresCdcSourceTask

__all__ = ["PostgresCdcSourceConnector", "PostgresCdcSourceTask"]
