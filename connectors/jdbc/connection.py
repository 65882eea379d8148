"""Database connections for the JDBC-style connectors: URL translation, engines, shared config.

``connection.url`` takes any SQLAlchemy URL (``sqlite:///data.db``,
``postgresql+psycopg://host/db``) and the JDBC forms Confluent configs carry:

* ``jdbc:postgresql://host:port/db?user=u&password=p`` -> ``postgresql+psycopg://host:port/db``
* ``jdbc:sqlite:path/to.db`` / ``jdbc:sqlite::memory:`` -> ``sqlite:///path/to.db`` / ``sqlite://``
* ``jdbc:mysql://host:port/db`` -> ``mysql+pymysql://host:port/db`` (driver not bundled)

A bare ``postgresql://`` URL uses psycopg 3 (the driver the ``jdbc`` extra installs).
``connection.user`` / ``connection.password`` override credentials in the URL; the password is
a :class:`~connectrt.api.Password` and never appears in logs or ``repr`` of the URL.

Engines are created per task (SQLAlchemy engines are thread-safe, but each task owns its own
pool and disposes it in ``stop()``).
"""

from __future__ import annotations

import urllib.parse
import zoneinfo
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url

from connectors.config_groups import GroupedDefinitions
from connectrt.api import ConfigError, ConfigType, Importance, Password, Range

__all__ = [
    "CONNECTION_ATTEMPTS_CONFIG",
    "CONNECTION_BACKOFF_MS_CONFIG",
    "CONNECTION_CONFIG_DEF",
    "CONNECTION_PASSWORD_CONFIG",
    "CONNECTION_URL_CONFIG",
    "CONNECTION_USER_CONFIG",
    "ValidDatabaseUrl",
    "ValidTimezone",
    "create_engine",
    "redacted_url",
    "to_sqlalchemy_url",
]

CONNECTION_URL_CONFIG = "connection.url"
CONNECTION_USER_CONFIG = "connection.user"
CONNECTION_PASSWORD_CONFIG = "connection.password"
CONNECTION_ATTEMPTS_CONFIG = "connection.attempts"
CONNECTION_BACKOFF_MS_CONFIG = "connection.backoff.ms"

_GROUP = "Database"


class ValidDatabaseUrl:
    """Validator: the value parses as a SQLAlchemy URL or one of the supported JDBC forms."""

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        try:
            to_sqlalchemy_url(str(value))
        except ConfigError as exc:
            raise ConfigError(str(exc), name, value) from None

    def __str__(self) -> str:
        return "a SQLAlchemy or JDBC URL"


CONNECTION_CONFIG_DEF = (
    GroupedDefinitions()
    .group(_GROUP)
    .define(
        CONNECTION_URL_CONFIG,
        ConfigType.STRING,
        validator=ValidDatabaseUrl(),
        importance=Importance.HIGH,
        documentation="Database URL: any SQLAlchemy URL, or jdbc:postgresql://, jdbc:sqlite:, "
        "jdbc:mysql:// as in Confluent's JDBC connector.",
    )
    .define(
        CONNECTION_USER_CONFIG,
        ConfigType.STRING,
        None,
        importance=Importance.HIGH,
        documentation="Database user (overrides a user in the URL).",
    )
    .define(
        CONNECTION_PASSWORD_CONFIG,
        ConfigType.PASSWORD,
        None,
        importance=Importance.HIGH,
        documentation="Database password (overrides a password in the URL).",
    )
    .define(
        CONNECTION_ATTEMPTS_CONFIG,
        ConfigType.INT,
        3,
        Range.at_least(1),
        Importance.LOW,
        "Maximum number of attempts to open a database connection.",
    )
    .define(
        CONNECTION_BACKOFF_MS_CONFIG,
        ConfigType.LONG,
        10000,
        Range.at_least(0),
        Importance.LOW,
        "Backoff between connection attempts in milliseconds.",
    )
    .build()
)


def _jdbc_to_url(jdbc: str) -> URL:
    rest = jdbc[len("jdbc:") :]
    scheme, _, remainder = rest.partition(":")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if remainder in ("", ":memory:"):
            return URL.create("sqlite")
        path = remainder[2:] if remainder.startswith("//") else remainder
        return URL.create("sqlite", database=path)
    drivers = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql"}
    if scheme not in drivers:
        raise ConfigError(
            f"Unsupported JDBC URL scheme 'jdbc:{scheme}:' (supported: jdbc:postgresql://, "
            "jdbc:sqlite:, jdbc:mysql://; or give a SQLAlchemy URL)"
        )
    if not remainder.startswith("//"):
        raise ConfigError(f"Malformed JDBC URL: expected jdbc:{scheme}://host[:port]/database")
    parsed = urllib.parse.urlsplit(remainder)
    query = dict(urllib.parse.parse_qsl(parsed.query))
    user = query.pop("user", None) or parsed.username
    password = query.pop("password", None) or parsed.password
    database = parsed.path.lstrip("/") or None
    return URL.create(
        drivers[scheme],
        username=user,
        password=password,
        host=parsed.hostname,
        port=parsed.port,
        database=database,
        query=query,
    )


def to_sqlalchemy_url(url: str) -> URL:
    """Parse ``url`` (SQLAlchemy or JDBC form) into an SQLAlchemy :class:`URL`.

    Raises :class:`ConfigError` with a readable message for anything unparseable.
    """
    text = url.strip()
    if not text:
        raise ConfigError("connection.url must not be empty")
    if text.lower().startswith("jdbc:"):
        return _jdbc_to_url(text)
    try:
        parsed = make_url(text)
    except Exception as exc:
        raise ConfigError(f"Invalid database URL: {exc}") from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


class ValidTimezone:
    """Validator of an IANA time zone name (``db.timezone``)."""

    def __call__(self, name: str, value: Any) -> None:
        try:
            zoneinfo.ZoneInfo(str(value))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"Invalid time zone: {value}", name, value) from None

    def __str__(self) -> str:
        return "an IANA time zone"


def redacted_url(url: URL) -> str:
    """The URL as text with any password masked (safe for logs and error messages)."""
    return url.render_as_string(hide_password=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout = 30000")
    cursor.close()


def create_engine(config: Mapping[str, Any], **engine_kwargs: Any) -> Engine:
    """An engine for the parsed connector ``config`` (keys from :data:`CONNECTION_CONFIG_DEF`).

    Credentials from ``connection.user``/``connection.password`` override the URL's. SQLite
    connections wait up to 30 s on a locked database instead of failing at once.
    """
    url = to_sqlalchemy_url(str(config[CONNECTION_URL_CONFIG]))
    user = config.get(CONNECTION_USER_CONFIG)
    if user:
        url = url.set(username=str(user))
    password = config.get(CONNECTION_PASSWORD_CONFIG)
    if password is not None:
        secret = password.value if isinstance(password, Password) else str(password)
        url = url.set(password=secret)
    engine = sa.create_engine(url, **engine_kwargs)
    if url.get_backend_name() == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine
