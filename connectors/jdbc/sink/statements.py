"""INSERT / upsert / UPDATE / DELETE statements for a table and a record shape, per dialect.

Built once per (table, record shape, operation) by the task and reused for every batch; each
is executed with a list of row dicts, which SQLAlchemy runs as one ``executemany``. Upserts are
the dialect's native ``INSERT ... ON CONFLICT (pk) DO UPDATE`` (PostgreSQL, SQLite) or
``ON DUPLICATE KEY UPDATE`` (MySQL). Primary-key values in WHERE clauses are bound under
prefixed names (see :data:`~connectors.jdbc.sink.fields.PK_BIND_PREFIX`). Pure functions.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.expression import Executable

from connectors.jdbc.sink.fields import PK_BIND_PREFIX, RecordFields
from connectrt.api import ConfigError

__all__ = ["delete_statement", "upsert", "write_statement"]


def _pk_match(table: sa.Table, pk: tuple[str, ...]) -> Any:
    return sa.and_(*[table.c[n] == sa.bindparam(PK_BIND_PREFIX + n) for n in pk])


def upsert(
    table: sa.Table, dialect: str, pk: tuple[str, ...], update_columns: tuple[str, ...]
) -> Executable:
    """``INSERT ... ON CONFLICT (pk) DO UPDATE SET col = excluded.col`` for ``dialect``."""
    if dialect in ("postgresql", "sqlite"):
        from sqlalchemy.dialects import postgresql, sqlite

        stmt = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
        index = [table.c[n] for n in pk]
        if not update_columns:
            return stmt.on_conflict_do_nothing(index_elements=index)
        return stmt.on_conflict_do_update(
            index_elements=index, set_={n: stmt.excluded[n] for n in update_columns}
        )
    if dialect == "mysql":
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        mstmt = mysql_insert(table)
        cols = update_columns or pk[:1]
        return mstmt.on_duplicate_key_update({n: mstmt.inserted[n] for n in cols})
    raise ConfigError(f"insert.mode=upsert is not supported on {dialect}", "insert.mode", "upsert")


def write_statement(
    table: sa.Table, fields: RecordFields, insert_mode: str, dialect: str
) -> Executable | None:
    """The statement writing rows of ``fields`` (None: nothing to write, e.g. update of a
    table whose every column is part of the key)."""
    if insert_mode == "insert":
        return sa.insert(table)
    if insert_mode == "upsert":
        return upsert(table, dialect, fields.pk, fields.value_columns)
    if not fields.value_columns:
        return None
    return sa.update(table).where(_pk_match(table, fields.pk))


def delete_statement(table: sa.Table, fields: RecordFields) -> Executable:
    """``DELETE FROM table WHERE pk = :pk__pk`` (rows carry prefixed key values)."""
    return sa.delete(table).where(_pk_match(table, fields.pk))
