"""What the PostgreSQL catalog says: captured tables, their columns and keys, and the checks
that turn a server not set up for logical replication into an error naming the fix.

Every function takes an open psycopg2 connection (autocommit or inside the caller's
transaction) and is called on the task's or the connector's thread only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectrt.api import ConnectError

from .columns import ColumnInfo
from .config import AUTOCREATE_ALL_TABLES, AUTOCREATE_DISABLED, CdcSettings

__all__ = [
    "ServerNotReady",
    "SlotInfo",
    "TableInfo",
    "captured_tables",
    "check_server",
    "describe_table",
    "ensure_publication",
    "quote_ident",
    "slot_info",
]


@dataclass(frozen=True)
class TableInfo:
    """One captured table: its columns in order and its primary key columns in key order."""

    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    key: tuple[str, ...]
    replica_identity: str  # pg_class.relreplident: d, n, f, i

    @property
    def qualified(self) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(self.table)}"


@dataclass(frozen=True)
class SlotInfo:
    plugin: str
    database: str
    active_pid: int | None
    confirmed_flush_lsn: int | None


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def parse_lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def format_lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def _one(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone()


class ServerNotReady(ConnectError):
    """The server cannot be captured from as configured; ``key`` is the config key the error
    belongs to when a config is validated (the server's host, or the user)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def check_server(conn: Any, settings: CdcSettings) -> None:
    """Raise :class:`ServerNotReady` naming the fix when the server cannot be captured from:
    ``wal_level`` not ``logical``, or a user without the REPLICATION attribute."""
    (wal_level,) = _one(conn, "SHOW wal_level")
    if wal_level != "logical":
        raise ServerNotReady(
            "database.hostname",
            f"PostgreSQL at {settings.host}:{settings.port} has wal_level '{wal_level}'; "
            "logical decoding needs 'logical': set wal_level = logical in postgresql.conf (or "
            "ALTER SYSTEM SET wal_level = logical) and restart the server",
        )
    row = _one(conn, "SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user")
    if row is None or not (row[0] or row[1]):
        raise ServerNotReady(
            "database.user",
            f"user '{settings.user}' may not stream changes: grant it the REPLICATION "
            f"attribute (ALTER ROLE {quote_ident(settings.user)} WITH REPLICATION)",
        )


def captured_tables(conn: Any, settings: CdcSettings) -> list[tuple[str, str]]:
    """The ordinary (and partitioned) tables the include/exclude lists select, sorted."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT n.nspname, c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
            "ORDER BY 1, 2"
        )
        rows = cur.fetchall()
    return [(s, t) for s, t in rows if settings.captures(s, t)]


_COLUMNS_SQL = """
SELECT a.attname, t.typname, t.typtype, a.atttypmod, a.attnotnull,
       et.typname,
       ARRAY(SELECT e.enumlabel::text FROM pg_enum e
             WHERE e.enumtypid = CASE WHEN t.typelem <> 0 THEN t.typelem ELSE t.oid END
             ORDER BY e.enumsortorder),
       array_position(i.indkey::int2[], a.attnum)
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


def describe_table(conn: Any, schema: str, table: str) -> TableInfo:
    """The columns, primary key and replica identity of ``schema.table`` (as of now)."""
    qualified = f"{quote_ident(schema)}.{quote_ident(table)}"
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL, (qualified,))
        rows = cur.fetchall()
        cur.execute("SELECT relreplident FROM pg_class WHERE oid = %s::regclass", (qualified,))
        (identity,) = cur.fetchone()
    columns = []
    keyed: list[tuple[int, str]] = []
    for name, typname, typtype, typmod, not_null, element, labels, key_pos in rows:
        columns.append(
            ColumnInfo(
                name=name,
                type_name=typname,
                type_kind=typtype,
                typmod=typmod,
                not_null=bool(not_null),
                element_type=element,
                enum_labels=tuple(labels or ()),
            )
        )
        if key_pos is not None:
            keyed.append((key_pos, name))
    return TableInfo(
        schema, table, tuple(columns), tuple(n for _, n in sorted(keyed)), str(identity)
    )


def ensure_publication(conn: Any, settings: CdcSettings, tables: list[tuple[str, str]]) -> None:
    """Check the publication exists, creating (or, when filtered, updating) it by
    ``publication.autocreate.mode``. ``conn`` must be in autocommit mode."""
    name = settings.publication_name
    row = _one(conn, "SELECT puballtables FROM pg_publication WHERE pubname = %s", (name,))
    mode = settings.autocreate_mode
    if mode == AUTOCREATE_DISABLED:
        if row is None:
            raise ConnectError(
                f"publication '{name}' does not exist and publication.autocreate.mode is "
                f"disabled: create it (CREATE PUBLICATION {quote_ident(name)} FOR TABLE ...) "
                "or set publication.autocreate.mode to all_tables or filtered"
            )
        return
    quoted = quote_ident(name)
    listed = ", ".join(f"{quote_ident(s)}.{quote_ident(t)}" for s, t in tables)
    try:
        with conn.cursor() as cur:
            if mode == AUTOCREATE_ALL_TABLES:
                if row is None:
                    cur.execute(f"CREATE PUBLICATION {quoted} FOR ALL TABLES")
                return
            if not tables:
                raise ConnectError(
                    f"publication.autocreate.mode is filtered but no table matches the "
                    f"include/exclude lists, so publication '{name}' would be empty"
                )
            if row is None:
                cur.execute(f"CREATE PUBLICATION {quoted} FOR TABLE {listed}")
            elif not row[0]:
                cur.execute(f"ALTER PUBLICATION {quoted} SET TABLE {listed}")
    except ConnectError:
        raise
    except Exception as e:
        raise ConnectError(
            f"cannot create publication '{name}' ({str(e).strip()}): user '{settings.user}' "
            "needs to own the captured tables (filtered) or be a superuser (all_tables); or "
            "create the publication as such a user and set publication.autocreate.mode to "
            "disabled"
        ) from None


def slot_info(conn: Any, slot: str) -> SlotInfo | None:
    row = _one(
        conn,
        "SELECT plugin, database, active_pid, confirmed_flush_lsn::text "
        "FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )
    if row is None:
        return None
    plugin, database, pid, confirmed = row
    return SlotInfo(
        str(plugin), str(database), pid, None if confirmed is None else parse_lsn(confirmed)
    )
