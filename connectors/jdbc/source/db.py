"""Database access helpers of the JDBC source: connecting with retries, readable errors.

:func:`connect` opens a connection, retrying ``connection.attempts`` times with
``connection.backoff.ms`` between attempts, and raises a :class:`ConnectError` that names the
URL with its password masked. A SQLite URL must name an existing file: a typo would otherwise
silently create an empty database and the source would read nothing.

Thread-safe (stateless); ``stop`` lets a stopping task or connector cut the backoff short.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectrt.api import ConnectError

from ..connection import redacted_url

__all__ = ["connect", "db_error_text", "missing_sqlite_file", "now"]

log = logging.getLogger(__name__)


def db_error_text(exc: BaseException) -> str:
    """The driver's message of a database error, without SQLAlchemy's statement dump."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def missing_sqlite_file(engine: Engine) -> str | None:
    """The path of a SQLite database file that does not exist, else None."""
    url = engine.url
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return None if os.path.exists(database) else database


def connect(
    engine: Engine, attempts: int, backoff_ms: int, stop: threading.Event | None = None
) -> Connection:
    """A new connection, after up to ``attempts`` tries; ConnectError naming the URL otherwise."""
    missing = missing_sqlite_file(engine)
    if missing is not None:
        raise ConnectError(
            f"SQLite database file {missing} does not exist ({redacted_url(engine.url)})"
        )
    last: BaseException | None = None
    for attempt in range(1, max(1, attempts) + 1):
        try:
            return engine.connect()
        except sa.exc.DBAPIError as exc:
            last = exc
            log.warning(
                "Connection attempt %d/%d to %s failed: %s",
                attempt,
                attempts,
                redacted_url(engine.url),
                db_error_text(exc),
            )
        if attempt < attempts:
            if stop is not None:
                if stop.wait(backoff_ms / 1000):
                    break
            else:
                threading.Event().wait(backoff_ms / 1000)
    assert last is not None
    raise ConnectError(
        f"Cannot connect to {redacted_url(engine.url)} after {attempts} attempt(s): "
        f"{db_error_text(last)}"
    ) from None


def now(connection: Connection) -> dt.datetime:
    """The database's current time as an aware datetime.

    SQLite runs in this process, so its clock is ours (``CURRENT_TIMESTAMP`` there only has
    second precision); other databases are asked, so clock skew does not matter.
    """
    if connection.dialect.name == "sqlite":
        return dt.datetime.now(dt.UTC)
    value = connection.execute(sa.select(sa.func.current_timestamp())).scalar_one()
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value
