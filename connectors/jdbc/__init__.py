"""JDBC-style source and sink connectors on SQLAlchemy (Confluent JDBC connector config keys)."""
