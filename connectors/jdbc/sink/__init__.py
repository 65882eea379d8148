"""The JDBC sink connector: insert, upsert or update rows, with optional exactly-once offsets."""

from connectors.jdbc.sink.connector import CONFIG_DEF, JdbcSinkConnector

__all__ = ["CONFIG_DEF", "JdbcSinkConnector"]
