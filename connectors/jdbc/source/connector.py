"""JdbcSourceConnector: copies database tables (or a custom query) into Kafka topics.

Configuration follows Confluent's ``io.confluent.connect.jdbc.JdbcSourceConnector`` (see
:mod:`.config`), with the same source partitions and offsets, so a connector config and
its committed offsets can move over from the Java connector.

Lifecycle (runtime contract, see :mod:`connectrt.api.connector`): ``start`` connects (with
``connection.attempts``/``connection.backoff.ms``), lists the tables, checks that the mode's
columns exist, and starts a :class:`~.tables.TableMonitor` thread that asks the runtime
for a task reconfiguration when tables appear or disappear; ``task_configs`` splits the
current tables evenly (round-robin over the sorted list) into at most ``tasks.max`` tasks;
a custom query always uses one task; ``stop`` stops the monitor and disposes the engine.

``validate`` reports problems per field: static ones always, and - when the database can be
reached with a single quick attempt - missing tables of a query and missing, non-integer or
nullable mode columns. An unreachable database is not a validation error: the connector
starts and fails with the (password-masked) URL and the driver's reason, as the runtime
reports a FAILED connector.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectrt.api import (
    ConfigError,
    ConfigValue,
    ConnectError,
    SourceConnector,
)

from ...declared_plugin import DeclaredConnector
from ..connection import create_engine, redacted_url
from .checks import resolve_columns
from .config import QUERY_CONFIG, SOURCE_CONFIG_DEF, TABLE_WHITELIST_CONFIG, TABLES_CONFIG
from .db import connect, db_error_text, missing_sqlite_file
from .settings import SourceSettings, parse_source_config, settings_of, static_errors
from .tables import (
    TableMonitor,
    TableRef,
    describe_query,
    describe_table,
    encode_tables,
    list_tables,
)
from .task import VERSION, JdbcSourceTask

__all__ = ["JdbcSourceConnector", "split_evenly"]

log = logging.getLogger(__name__)

_VALIDATE_CONNECT_TIMEOUT_S = 5


def split_evenly(tables: list[TableRef], groups: int) -> list[list[TableRef]]:
    """At most ``groups`` non-empty groups whose sizes differ by at most one (round-robin)."""
    n = max(1, min(groups, len(tables)))
    out: list[list[TableRef]] = [[] for _ in range(n)]
    for i, table in enumerate(tables):
        out[i % n].append(table)
    return [g for g in out if g]


def database_errors(
    connection: Connection, settings: SourceSettings, tables: list[TableRef] | None = None
) -> dict[str, list[str]]:
    """Per-key problems found in the database: the query fails, mode columns missing."""
    errors: dict[str, list[str]] = {}
    if settings.query:
        try:
            columns = describe_query(connection, settings.query)
        except sa.exc.DBAPIError as exc:
            return {QUERY_CONFIG: [f"the query fails: {db_error_text(exc)}"]}
        found = resolve_columns(settings, columns, "the query", check_nulls=False)
        return found.errors
    if not (settings.uses_incrementing or settings.uses_timestamp):
        return errors
    for table in tables if tables is not None else list_tables(connection, settings):
        try:
            columns = describe_table(connection, table)
        except sa.exc.NoSuchTableError:
            continue
        found = resolve_columns(settings, columns, f"table {table.fqn}")
        for key, messages in found.errors.items():
            errors.setdefault(key, []).extend(messages)
    return errors


class JdbcSourceConnector(DeclaredConnector, SourceConnector):
    plugin_version = VERSION
    definition = SOURCE_CONFIG_DEF
    task_type = JdbcSourceTask

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: SourceSettings | None = None
        self._engine: Engine | None = None
        self._monitor: TableMonitor | None = None

    # -- validation --------------------------------------------------------------------------
    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = super().validate(config)
        if any(v.errors for v in values.values()):
            return values
        parsed = SOURCE_CONFIG_DEF.parse(config)

        def add(key: str, messages: list[str]) -> None:
            cv = values.setdefault(key, ConfigValue(key, config.get(key)))
            cv.errors.extend(m for m in messages if m not in cv.errors)

        static = static_errors(parsed)
        for key, messages in static.items():
            add(key, messages)
        if static:
            return values
        settings = settings_of(parsed)
        try:
            engine = create_engine(parsed, **_quick_connect_args(parsed))
        except Exception as exc:  # e.g. the driver of a JDBC URL is not installed
            add("connection.url", [f"cannot create an engine: {exc}"])
            return values
        try:
            missing = missing_sqlite_file(engine)
            if missing is not None:
                add("connection.url", [f"SQLite database file {missing} does not exist"])
                return values
            try:
                connection = engine.connect()
            except sa.exc.DBAPIError as exc:
                # Not a config error: the connector will retry and fail with this reason.
                log.info("validate: database not reachable, column checks skipped: %s", exc)
                return values
            with connection:
                for key, messages in database_errors(connection, settings).items():
                    add(key, messages)
        finally:
            engine.dispose()
        return values

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, config: Mapping[str, str]) -> None:
        settings, parsed = parse_source_config(config)
        self._props = dict(config)
        self._settings = settings
        engine = create_engine(parsed)
        self._engine = engine
        try:
            with connect(
                engine, settings.connection_attempts, settings.connection_backoff_ms
            ) as connection:
                tables = [] if settings.query else list_tables(connection, settings)
                problems = database_errors(connection, settings, tables)
        except sa.exc.DBAPIError as exc:
            self.stop()
            raise ConnectError(
                f"Cannot read the tables of {redacted_url(engine.url)}: {db_error_text(exc)}"
            ) from None
        except BaseException:
            self.stop()
            raise
        if problems:
            self.stop()
            lines = [f"{k}: {m}" for k, ms in problems.items() for m in ms]
            raise ConfigError("\n".join(lines), next(iter(problems)))
        if settings.query:
            return
        if settings.whitelist:
            found = {t.name for t in tables} | {t.fqn for t in tables}
            absent = [t for t in settings.whitelist if t not in found]
            if absent:
                log.warning(
                    "%s: tables %s do not exist (yet); they are read once they appear",
                    TABLE_WHITELIST_CONFIG,
                    absent,
                )
        if not tables:
            log.warning("No tables to read yet: no tasks run until a matching table appears")
        self._monitor = TableMonitor(
            engine,
            settings,
            self.context.request_task_reconfiguration,
            settings.table_poll_interval_ms,
        )
        self._monitor.start(tables)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("JdbcSourceConnector is not started")
        if self._settings.query:
            return [{**self._props, TABLES_CONFIG: "[]"}]
        tables = self._monitor.tables if self._monitor is not None else []
        return [
            {**self._props, TABLES_CONFIG: encode_tables(group)}
            for group in split_evenly(tables, max_tasks)
            if tables
        ]

    def stop(self) -> None:
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            monitor.stop()
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    def tables(self) -> list[TableRef]:
        """The tables the connector currently reads (from the last listing)."""
        return self._monitor.tables if self._monitor is not None else []


def _quick_connect_args(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """Engine arguments for one quick connection attempt (validation must not hang)."""
    url = str(parsed.get("connection.url", ""))
    if "postgres" in url.lower():
        return {"connect_args": {"connect_timeout": _VALIDATE_CONNECT_TIMEOUT_S}}
    return {}
