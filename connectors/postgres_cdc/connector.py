"""PostgresCdcSourceConnector: change data capture from PostgreSQL, in Debezium's events.

Configuration follows Debezium's ``io.debezium.connector.postgresql.PostgresConnector`` (see
:mod:`.config`); events, topics and the source partition ``{"server": <topic.prefix>}`` are
Debezium's, so consumers of a Debezium connector's topics read these unchanged.

One task, always: a replication slot has a single reader, and the order of changes across
tables (a transaction touching several) exists only in that one stream. ``tasks.max`` above 1
still gives one task, as with Debezium.

Lifecycle (runtime contract, :mod:`connectrt.api.connector`): ``start`` parses the config and,
with one connection, checks the server (``wal_level``, the REPLICATION attribute), so a server
not set up fails the connector itself with the fix in its message; ``task_configs`` returns the
one task's config; ``stop`` has nothing to release. ``validate`` adds those checks per field
when the server can be reached quickly.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import psycopg2

from connectrt.api import (
    ConfigValue,
    ConnectError,
    ExactlyOnceSupport,
    SourceConnector,
)

from ..declared_plugin import DeclaredConnector
from .catalog import ServerNotReady, check_server
from .config import CDC_CONFIG_DEF, CdcSettings, parse_settings
from .events import CONNECTOR_VERSION
from .task import PostgresCdcSourceTask

__all__ = ["PostgresCdcSourceConnector"]

log = logging.getLogger(__name__)


class PostgresCdcSourceConnector(DeclaredConnector, SourceConnector):
    plugin_version = CONNECTOR_VERSION
    definition = CDC_CONFIG_DEF
    task_type = PostgresCdcSourceTask

    def __init__(self) -> None:
        self._config: dict[str, str] = {}
        self._settings: CdcSettings | None = None

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        # Every record's offset says exactly where in the slot's stream it came from, and a
        # restarted task skips what its committed offset covers (see .task).
        return ExactlyOnceSupport.SUPPORTED

    def records_have_keys(self, config: Mapping[str, str]) -> bool | None:
        return None  # tables without a primary key give records without a key

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = super().validate(config)
        if any(v.errors for v in values.values()):
            return values
        try:
            settings = parse_settings(config)
        except Exception as e:
            key = getattr(e, "name", None) or "slot.name"
            values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(str(e))
            return values
        try:
            conn = psycopg2.connect(**{**settings.dsn(), "connect_timeout": 5})
        except psycopg2.Error as e:
            log.info("validate: PostgreSQL not reachable, server checks skipped: %s", e)
            return values
        try:
            conn.autocommit = True
            check_server(conn, settings)
        except ServerNotReady as e:
            cv = values.setdefault(e.key, ConfigValue(e.key, config.get(e.key)))
            cv.errors.append(str(e))
        finally:
            conn.close()
        return values

    def start(self, config: Mapping[str, str]) -> None:
        settings = parse_settings(config)
        self._config = dict(config)
        self._settings = settings
        try:
            conn = psycopg2.connect(**settings.dsn())
        except psycopg2.Error as e:
            raise ConnectError(
                f"cannot connect to PostgreSQL {settings.host}:{settings.port}/"
                f"{settings.dbname}: {str(e).strip()}"
            ) from None
        try:
            conn.autocommit = True
            check_server(conn, settings)
        finally:
            conn.close()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("PostgresCdcSourceConnector is not started")
        return [dict(self._config)]

    def stop(self) -> None:
        self._settings = None
