"""Destination tables: reflection, ``auto.create`` and ``auto.evolve``.

:class:`TableManager` keeps one reflected :class:`sqlalchemy.Table` per destination name and,
when a record shape needs columns the table lacks, creates the table (CREATE TABLE with the
primary key) or adds nullable columns (ALTER TABLE ... ADD COLUMN) as the config allows. It
also checks that each field's type fits its existing column. Everything it renders goes through
SQLAlchemy's compiler and identifier preparer: names are quoted, never interpolated raw.

Problems with a record's *shape* raise :class:`SchemaMismatch` (a DataError: such a record can
go to the dead letter queue when errors are tolerated); a missing table without ``auto.create``
raises ConnectError. Lifecycle: one per task, used only on the task thread; DDL runs in its own
transaction, before the rows of the batch that needed it.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateColumn

from connectors.jdbc.sink.fields import ColumnSpec, RecordFields
from connectors.jdbc.sink.types import column_type, compatible, describe
from connectrt.api import ConnectError, DataError

__all__ = ["SchemaMismatch", "TableManager"]

log = logging.getLogger(__name__)


class SchemaMismatch(DataError):
    """A record's fields cannot be written to its table (names the table and column)."""


class TableManager:
    """Reflected destination tables, created and evolved on demand."""

    def __init__(
        self, engine: Engine, *, quote: bool, auto_create: bool, auto_evolve: bool
    ) -> None:
        self._engine = engine
        self._quote = quote
        self._auto_create = auto_create
        self._auto_evolve = auto_evolve
        self._metadata = sa.MetaData()
        self._tables: dict[str, sa.Table] = {}

    def ident(self, name: str) -> str:
        """``name`` as an SQLAlchemy identifier honouring ``quote.sql.identifiers``."""
        return sa.sql.quoted_name(name, True) if self._quote else name

    def _reflect(self, name: str) -> sa.Table | None:
        existing = self._metadata.tables.get(name)
        if existing is not None:
            self._metadata.remove(existing)
        try:
            table = sa.Table(self.ident(name), self._metadata, autoload_with=self._engine)
        except sa.exc.NoSuchTableError:
            return None
        self._tables[name] = table
        return table

    def table_for(self, name: str, fields: RecordFields) -> sa.Table:
        """The table ``name`` holding every column of ``fields`` (created/evolved if allowed)."""
        table = self._tables.get(name)
        if table is None:
            limit = self._engine.dialect.max_identifier_length
            if limit and len(name) > limit:
                raise ConnectError(
                    f"Table name '{name}' is {len(name)} characters long, more than the "
                    f"database allows ({limit}); shorten it with table.name.format"
                )
            table = self._reflect(name)
        if table is None:
            table = self._create(name, fields)
        missing = [c for c in fields.columns if c.name not in table.c]
        if missing:  # another task may have added them since we reflected: look again
            fresh = self._reflect(name)
            table = table if fresh is None else fresh
            missing = [c for c in fields.columns if c.name not in table.c]
        if missing:
            table = self._evolve(table, name, missing, fields)
        for spec in fields.columns:
            column = table.c[spec.name]
            if spec.schema is not None and not compatible(spec.schema, column.type):
                raise SchemaMismatch(
                    f"Table '{name}' column '{spec.name}' has type {column.type} but the record "
                    f"field is {describe(spec.schema)}: incompatible schema change (columns are "
                    "never altered; migrate the table or write to another one)"
                )
        return table

    def _create(self, name: str, fields: RecordFields) -> sa.Table:
        if not self._auto_create:
            raise ConnectError(
                f"Table '{name}' is missing and auto.create is disabled "
                "(create it, or set auto.create=true)"
            )
        if fields.schemaless:
            raise SchemaMismatch(
                f"Table '{name}' is missing and the record has no schema to create it from "
                "(schemaless records need an existing table)"
            )
        columns = [self._column(name, spec, create=True) for spec in fields.columns]
        table = sa.Table(self.ident(name), sa.MetaData(), *columns)
        try:
            with self._engine.begin() as conn:
                table.create(conn, checkfirst=True)
            log.info("Created table %s with columns %s", name, [c.name for c in fields.columns])
        except sa.exc.DBAPIError as exc:  # another task may have created it concurrently
            if self._reflect(name) is None:
                raise ConnectError(f"Could not create table '{name}': {exc.orig}") from exc
        created = self._reflect(name)
        if created is None:
            raise ConnectError(f"Table '{name}' was created but cannot be reflected")
        return created

    def _column(self, table: str, spec: ColumnSpec, create: bool) -> sa.Column[Any]:
        assert spec.schema is not None
        sql_type = column_type(spec.schema, spec.name)
        nullable = not spec.primary_key and (spec.schema.optional or not create)
        return sa.Column(
            self.ident(spec.name),
            sql_type,
            primary_key=spec.primary_key and create,
            nullable=nullable,
            autoincrement=False,
        )

    def _evolve(
        self, table: sa.Table, name: str, missing: list[ColumnSpec], fields: RecordFields
    ) -> sa.Table:
        names = ", ".join(c.name for c in missing)
        if fields.schemaless:
            raise SchemaMismatch(
                f"Table '{name}' has no column(s) {names} for fields of a schemaless record "
                "(tables evolve only from records with schemas)"
            )
        if not self._auto_evolve:
            raise SchemaMismatch(
                f"Table '{name}' is missing column(s) {names} and auto.evolve is disabled"
            )
        for spec in missing:
            assert spec.schema is not None
            if spec.primary_key:
                raise SchemaMismatch(
                    f"Cannot evolve table '{name}': primary key column '{spec.name}' is missing "
                    "(auto.evolve never changes the primary key)"
                )
            if not spec.schema.optional and spec.schema.default is None:
                raise SchemaMismatch(
                    f"Cannot evolve table '{name}': new field '{spec.name}' is required and has "
                    "no default (auto.evolve only adds nullable columns for optional fields or "
                    "fields with defaults)"
                )
        dialect = self._engine.dialect
        table_sql = dialect.identifier_preparer.format_table(table)
        for spec in missing:
            column = self._column(name, spec, create=False)
            sa.Table(table.name, sa.MetaData(), column)  # CreateColumn needs a parent
            column_sql = str(CreateColumn(column).compile(dialect=dialect))
            ddl = f"ALTER TABLE {table_sql} ADD COLUMN {column_sql}"
            try:
                with self._engine.begin() as conn:
                    conn.execute(sa.DDL(ddl.replace("%", "%%")))
                log.info("Table %s: added column %s", name, spec.name)
            except sa.exc.DBAPIError as exc:  # e.g. added by another task meanwhile
                current = self._reflect(name)
                if current is None or spec.name not in current.c:
                    raise ConnectError(
                        f"Could not add column '{spec.name}' to table '{name}': {exc.orig}"
                    ) from exc
        evolved = self._reflect(name)
        assert evolved is not None
        return evolved
