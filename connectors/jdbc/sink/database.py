"""The JDBC sink's database connection: connecting (with retries and the session time zone),
the zone Timestamp values are converted to, and telling transient database errors apart.
"""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connectors.jdbc.connection import (
    CONNECTION_ATTEMPTS_CONFIG,
    CONNECTION_BACKOFF_MS_CONFIG,
    create_engine,
    redacted_url,
)
from connectors.jdbc.sink.config import DB_TIMEZONE
from connectrt.api import ConnectError

__all__ = ["connect", "db_error_reason", "is_transient", "timestamp_zone"]


def _session_time_zone(zone: str) -> Callable[[Any, Any], None]:
    """A connect hook setting a PostgreSQL session's TimeZone to ``zone`` (a bound value)."""

    def set_time_zone(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
        cursor.close()
        dbapi_connection.commit()

    return set_time_zone


def timestamp_zone(dialect: str, db_timezone: str) -> dt.tzinfo | None:
    """The zone the sink converts Timestamp values to before binding them, or None when the
    connection already writes aware datetimes as wall-clock time in ``db_timezone``:
    PostgreSQL (its sessions run in ``db_timezone``, see :func:`connect`) and SQLite with UTC
    (it stores an aware datetime's own, UTC, wall-clock time)."""
    if dialect == "postgresql" or (dialect == "sqlite" and db_timezone == "UTC"):
        return None
    return zoneinfo.ZoneInfo(db_timezone)


def connect(config: Mapping[str, Any]) -> Engine:
    """An engine for the parsed ``config`` whose database answered a connection attempt.

    PostgreSQL sessions run in ``db.timezone`` (UTC by default), so Timestamp values (aware
    datetimes) land in TIMESTAMP columns as wall-clock time in that zone without per-record
    conversion.

    Tries ``connection.attempts`` times, ``connection.backoff.ms`` apart; raises ConnectError
    naming the (password-masked) URL and the driver's reason.
    """
    engine = create_engine(config, pool_pre_ping=True)
    if engine.dialect.name == "postgresql":
        zone = str(config.get(DB_TIMEZONE) or "UTC")
        sa.event.listen(engine, "connect", _session_time_zone(zone))
    attempts = int(config.get(CONNECTION_ATTEMPTS_CONFIG) or 1)
    backoff = int(config.get(CONNECTION_BACKOFF_MS_CONFIG) or 0) / 1000.0
    reason: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            with engine.connect():
                return engine
        except sa.exc.DBAPIError as exc:
            reason = exc.orig if exc.orig is not None else exc
        except Exception as exc:  # e.g. a missing driver module
            reason = exc
        if attempt < attempts:
            time.sleep(backoff)
    engine.dispose()
    raise ConnectError(
        f"Could not connect to {redacted_url(engine.url)} after {attempts} attempt(s): "
        f"{str(reason).strip()}"
    )


def is_transient(exc: sa.exc.DBAPIError, dialect: str) -> bool:
    """Whether a database error is worth retrying (the same statements may then succeed)."""
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, sa.exc.OperationalError):
        return False
    if dialect == "sqlite":  # sqlite3 also reports "no such table" etc. as OperationalError
        text = str(exc.orig).lower()
        return "locked" in text or "busy" in text
    return True


def db_error_reason(exc: sa.exc.DBAPIError) -> str:
    """The driver's message of a database error, without SQLAlchemy's statement dump."""
    return str(exc.orig if exc.orig is not None else exc).strip()
