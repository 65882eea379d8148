"""PostgreSQL ``COPY ... FROM STDIN`` for insert-mode batches (``postgresql.copy.enabled``).

Runs on the SQLAlchemy connection's own psycopg connection, inside the batch's transaction, so
rows and (with exactly once) the offsets still commit together. Table and column names are
quoted by SQLAlchemy's identifier preparer; values are adapted by psycopg (text format).
Driver errors are re-raised as SQLAlchemy's DBAPIError subclasses, so retries treat them like
errors of ``executemany``. Called on the task thread only.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connectors.jdbc.sink.fields import Row

__all__ = ["copy_rows"]


def copy_rows(conn: Connection, table: sa.Table, rows: list[Row]) -> None:
    """``COPY`` ``rows`` (dicts sharing one key order, as a plan's row function makes them)."""
    import psycopg

    prep = conn.dialect.identifier_preparer
    columns = ", ".join(prep.quote_identifier(table.c[name].name) for name in rows[0])
    statement = f"COPY {prep.format_table(table)} ({columns}) FROM STDIN"
    driver = conn.connection.driver_connection
    assert driver is not None
    try:
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            write = copy.write_row
            for row in rows:
                write(tuple(row.values()))
    except psycopg.Error as exc:
        raise sa.exc.DBAPIError.instance(
            statement, None, exc, psycopg.Error, dialect=conn.dialect
        ) from exc
