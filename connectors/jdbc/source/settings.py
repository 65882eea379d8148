"""The parsed JDBC source config: :class:`SourceSettings` and the checks that need no database.

:func:`parse_source_config` parses a raw config with :data:`~.config.SOURCE_CONFIG_DEF` and turns
it into a typed :class:`SourceSettings` (aliases resolved); :func:`static_errors` returns the
cross-field problems that need no database (per key, as the validate endpoint reports them).
Checks that need the database (columns exist, an incrementing column can be inferred) live in
:mod:`.checks`.

Everything here is immutable and safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api import ConfigError

from .config import (
    BATCH_MAX_ROWS_CONFIG,
    DB_TIMEZONE_CONFIG,
    INCREMENTING_COLUMN_NAME_CONFIG,
    MODE_CONFIG,
    MODE_INCREMENTING,
    MODE_TIMESTAMP,
    MODE_TIMESTAMP_INCREMENTING,
    MODES,
    NUMERIC_MAPPING_CONFIG,
    POLL_INTERVAL_MS_CONFIG,
    QUERY_CONFIG,
    QUERY_SUFFIX_CONFIG,
    QUOTE_SQL_IDENTIFIERS_CONFIG,
    SCHEMA_PATTERN_CONFIG,
    SOURCE_CONFIG_DEF,
    TABLE_BLACKLIST_CONFIG,
    TABLE_EXCLUDE_LIST_CONFIG,
    TABLE_INCLUDE_LIST_CONFIG,
    TABLE_POLL_INTERVAL_MS_CONFIG,
    TABLE_TYPES_CONFIG,
    TABLE_WHITELIST_CONFIG,
    TIMESTAMP_COLUMN_NAME_CONFIG,
    TIMESTAMP_DELAY_INTERVAL_MS_CONFIG,
    TIMESTAMP_INITIAL_CONFIG,
    TOPIC_PREFIX_CONFIG,
    VALIDATE_NON_NULL_CONFIG,
)

__all__ = ["SourceSettings", "parse_source_config", "settings_of", "static_errors"]


@dataclass(frozen=True)
class SourceSettings:
    """The parsed source config (typed, aliases resolved)."""

    mode: str
    query: str
    whitelist: tuple[str, ...]
    blacklist: tuple[str, ...]
    schema_pattern: str | None
    table_types: tuple[str, ...]
    incrementing_column: str
    timestamp_columns: tuple[str, ...]
    timestamp_delay_ms: int
    timestamp_initial_ms: int | None
    validate_non_null: bool
    topic_prefix: str
    poll_interval_ms: int
    batch_max_rows: int
    table_poll_interval_ms: int
    numeric_mapping: str
    db_timezone: str
    quote_identifiers: bool
    connection_attempts: int
    connection_backoff_ms: int
    query_suffix: str = ""

    @property
    def uses_incrementing(self) -> bool:
        return self.mode in (MODE_INCREMENTING, MODE_TIMESTAMP_INCREMENTING)

    @property
    def uses_timestamp(self) -> bool:
        return self.mode in (MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING)


def parse_source_config(config: Mapping[str, Any]) -> tuple[SourceSettings, dict[str, Any]]:
    """Parse and check ``config``; raise one ConfigError naming every invalid key.

    Returns the settings and the parsed map (for :func:`~.connection.create_engine`).
    """
    parsed = SOURCE_CONFIG_DEF.parse(config)
    problems = static_errors(parsed)
    if problems:
        lines = [f"{key}: {msg}" for key, msgs in problems.items() for msg in msgs]
        raise ConfigError(
            "Invalid JDBC source configuration:\n" + "\n".join(lines), next(iter(problems))
        )
    return settings_of(parsed), parsed


def settings_of(parsed: Mapping[str, Any]) -> SourceSettings:
    whitelist = [t for t in parsed[TABLE_WHITELIST_CONFIG] + parsed[TABLE_INCLUDE_LIST_CONFIG] if t]
    blacklist = [t for t in parsed[TABLE_BLACKLIST_CONFIG] + parsed[TABLE_EXCLUDE_LIST_CONFIG] if t]
    return SourceSettings(
        mode=parsed[MODE_CONFIG],
        query=parsed[QUERY_CONFIG].strip(),
        query_suffix=str(parsed[QUERY_SUFFIX_CONFIG] or "").strip().rstrip(";"),
        whitelist=tuple(whitelist),
        blacklist=tuple(blacklist),
        schema_pattern=parsed[SCHEMA_PATTERN_CONFIG] or None,
        table_types=tuple(t.upper() for t in parsed[TABLE_TYPES_CONFIG]),
        incrementing_column=parsed[INCREMENTING_COLUMN_NAME_CONFIG].strip(),
        timestamp_columns=tuple(c for c in parsed[TIMESTAMP_COLUMN_NAME_CONFIG] if c),
        timestamp_delay_ms=parsed[TIMESTAMP_DELAY_INTERVAL_MS_CONFIG],
        timestamp_initial_ms=parsed[TIMESTAMP_INITIAL_CONFIG],
        validate_non_null=parsed[VALIDATE_NON_NULL_CONFIG],
        topic_prefix=parsed[TOPIC_PREFIX_CONFIG],
        poll_interval_ms=parsed[POLL_INTERVAL_MS_CONFIG],
        batch_max_rows=parsed[BATCH_MAX_ROWS_CONFIG],
        table_poll_interval_ms=parsed[TABLE_POLL_INTERVAL_MS_CONFIG],
        numeric_mapping=parsed[NUMERIC_MAPPING_CONFIG],
        db_timezone=parsed[DB_TIMEZONE_CONFIG],
        quote_identifiers=str(parsed[QUOTE_SQL_IDENTIFIERS_CONFIG]).upper() == "ALWAYS",
        connection_attempts=parsed["connection.attempts"],
        connection_backoff_ms=parsed["connection.backoff.ms"],
    )


def static_errors(parsed: Mapping[str, Any]) -> dict[str, list[str]]:
    """Cross-field problems of an already parsed config, per key (no database needed)."""
    errors: dict[str, list[str]] = {}

    def add(key: str, message: str) -> None:
        errors.setdefault(key, []).append(message)

    s = settings_of(parsed)
    if not s.mode:
        add(MODE_CONFIG, f"mode must be set to one of: {', '.join(MODES)}")
    if s.whitelist and s.blacklist:
        msg = "table.whitelist and table.blacklist (or their include/exclude aliases) are "
        msg += "mutually exclusive"
        add(TABLE_WHITELIST_CONFIG, msg)
        add(TABLE_BLACKLIST_CONFIG, msg)
    if s.query:
        if s.whitelist or s.blacklist:
            add(QUERY_CONFIG, "query cannot be combined with table.whitelist/table.blacklist")
        if not s.topic_prefix:
            add(TOPIC_PREFIX_CONFIG, "query mode needs topic.prefix: it is the topic name")
        if s.uses_incrementing and not s.incrementing_column:
            add(
                INCREMENTING_COLUMN_NAME_CONFIG,
                f"mode {s.mode} with a query needs incrementing.column.name (it cannot be "
                "inferred from a query)",
            )
    if s.uses_timestamp and not s.timestamp_columns:
        add(TIMESTAMP_COLUMN_NAME_CONFIG, f"mode {s.mode} needs timestamp.column.name")
    return errors
