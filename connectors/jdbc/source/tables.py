"""Which tables the JDBC source reads, what their columns are, and noticing when that changes.

* :func:`list_tables` lists the tables (and views, per ``table.types``) of the selected schemas,
  filtered by ``table.whitelist``/``table.blacklist``; entries match a bare table name or
  ``schema.table``.
* :func:`describe_table` / :func:`describe_query` return the columns of a table or of a custom
  query (through a temporary view, which gives the declared types of the query's columns).
* :class:`TableMonitor` is the connector's background thread: it lists the tables every
  ``table.poll.interval.ms`` and calls ``on_change`` when the set changed. Its ``tables``
  property is safe to read from any thread.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .db import connect, db_error_text
from .settings import SourceSettings

__all__ = [
    "TableMonitor",
    "TableRef",
    "decode_tables",
    "describe_query",
    "describe_table",
    "encode_tables",
    "list_tables",
]

log = logging.getLogger(__name__)

_SYSTEM_SCHEMAS = re.compile(r"^(information_schema|pg_.*|sys|mysql|performance_schema)$")


@dataclass(frozen=True, order=True)
class TableRef:
    """A table: its schema (None for SQLite and the default schema) and name."""

    schema: str | None
    name: str

    @property
    def fqn(self) -> str:
        """Unquoted ``schema.table`` (Confluent's source partition ``table`` value)."""
        return self.name if self.schema is None else f"{self.schema}.{self.name}"


def encode_tables(tables: Iterable[TableRef]) -> str:
    return json.dumps([[t.schema, t.name] for t in tables])


def decode_tables(text: str) -> list[TableRef]:
    return [TableRef(schema, name) for schema, name in json.loads(text or "[]")]


def _like(pattern: str) -> re.Pattern[str]:
    parts = (".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile("^" + "".join(parts) + "$")


def _schemas(inspector: Any, backend: str, pattern: str | None) -> list[str | None]:
    if backend == "sqlite":
        return [None]
    names = [s for s in inspector.get_schema_names() if not _SYSTEM_SCHEMAS.match(s)]
    if pattern:
        regex = _like(pattern)
        names = [s for s in names if regex.match(s)]
    return list(names)


def _matches(table: TableRef, entries: Iterable[str]) -> bool:
    return any(e == table.name or e == table.fqn for e in entries)


def list_tables(connection: Connection, settings: SourceSettings) -> list[TableRef]:
    """The tables to read, sorted, after schema pattern, types and white/black lists."""
    inspector = sa.inspect(connection)
    found: list[TableRef] = []
    for schema in _schemas(inspector, connection.dialect.name, settings.schema_pattern):
        if "TABLE" in settings.table_types:
            found.extend(TableRef(schema, t) for t in inspector.get_table_names(schema=schema))
        if "VIEW" in settings.table_types:
            found.extend(TableRef(schema, v) for v in inspector.get_view_names(schema=schema))
    if settings.whitelist:
        found = [t for t in found if _matches(t, settings.whitelist)]
    elif settings.blacklist:
        found = [t for t in found if not _matches(t, settings.blacklist)]
    return sorted(set(found), key=lambda t: (t.schema or "", t.name))


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: Any  # a SQLAlchemy TypeEngine
    nullable: bool
    primary_key: bool
    autoincrement: bool


def describe_table(connection: Connection, table: TableRef) -> list[ColumnInfo]:
    """The columns of ``table`` in order (raises ``sqlalchemy.exc.NoSuchTableError``)."""
    inspector = sa.inspect(connection)
    columns = inspector.get_columns(table.name, schema=table.schema)
    pk = set(inspector.get_pk_constraint(table.name, schema=table.schema)["constrained_columns"])
    out = []
    for col in columns:
        is_pk = col["name"] in pk
        # SQLite's INTEGER PRIMARY KEY is the rowid: never null, though reflected nullable.
        nullable = bool(col.get("nullable", True)) and not is_pk
        auto = col.get("autoincrement") is True or bool(col.get("identity"))
        default = str(col.get("default") or "")
        auto = auto or default.startswith("nextval(")
        out.append(ColumnInfo(col["name"], col["type"], nullable, is_pk, auto))
    return out


def schema_stamp(connection: Connection) -> int | None:
    """A cheap stamp of the database's schema, or None where there is none (describe then).

    SQLite: its schema cookie (``PRAGMA schema_version``), one read of the file's header that
    every schema change of the database (a table created, altered or dropped) increments, so
    an equal stamp means the columns described at that stamp are still the table's. Read on a
    connection whose query is open, it is the schema that query reads (or a newer one)."""
    if connection.dialect.name != "sqlite":
        return None
    try:
        value = connection.exec_driver_sql("PRAGMA schema_version").scalar()
    except sa.exc.DBAPIError:
        return None
    return None if value is None else int(value)


def describe_query(connection: Connection, query: str) -> list[ColumnInfo]:
    """The columns of a custom query, via a temporary view (dropped again). All nullable."""
    name = f"connectrt_query_{uuid.uuid4().hex[:12]}"
    quoted = connection.dialect.identifier_preparer.quote(name)
    body = query.strip().rstrip(";")
    transaction = connection.begin()
    try:
        connection.execute(sa.text(f"CREATE TEMPORARY VIEW {quoted} AS {body}"))
        columns = sa.inspect(connection).get_columns(name)
        connection.execute(sa.text(f"DROP VIEW {quoted}"))
    finally:
        transaction.rollback()
    return [ColumnInfo(c["name"], c["type"], True, False, False) for c in columns]


class TableMonitor:
    """Lists the tables every ``interval_ms`` on its own daemon thread.

    ``start(initial)`` begins watching with the list the connector already read;
    ``on_change()`` is called (on the monitor thread) whenever the list differs from the last
    one. Database errors are logged and retried at the next interval. ``stop()`` is idempotent
    and joins the thread.
    """

    def __init__(
        self,
        engine: Engine,
        settings: SourceSettings,
        on_change: Callable[[], None],
        interval_ms: int,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._on_change = on_change
        self._interval = interval_ms / 1000
        self._lock = threading.Lock()
        self._tables: list[TableRef] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def tables(self) -> list[TableRef]:
        with self._lock:
            return list(self._tables)

    def start(self, initial: list[TableRef]) -> None:
        with self._lock:
            self._tables = list(initial)
        self._thread = threading.Thread(target=self._run, name="jdbc-table-monitor", daemon=True)
        self._thread.start()

    def check_now(self) -> bool:
        """List the tables once; True (and ``on_change`` called) when they changed."""
        with connect(self._engine, 1, 0) as connection:
            tables = list_tables(connection, self._settings)
        with self._lock:
            changed = tables != self._tables
            previous, self._tables = self._tables, tables
        if changed:
            added = sorted(t.fqn for t in set(tables) - set(previous))
            removed = sorted(t.fqn for t in set(previous) - set(tables))
            log.info("Tables changed (added %s, removed %s): reconfiguring", added, removed)
            self._on_change()
        return changed

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check_now()
            except Exception as exc:
                log.warning("Listing tables failed, retrying later: %s", db_error_text(exc))

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
