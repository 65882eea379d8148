"""The JDBC source connector: tables or a query polled in bulk, incrementing or timestamp mode."""

from connectors.jdbc.source.connector import JdbcSourceConnector, split_evenly

__all__ = ["JdbcSourceConnector", "split_evenly"]
