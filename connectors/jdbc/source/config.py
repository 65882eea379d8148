"""Configuration of the JDBC source connector: Confluent's ``JdbcSourceConnector`` keys.

:data:`SOURCE_CONFIG_DEF` is the connection keys (:mod:`connectors.jdbc.connection`) plus the
table selection, mode and polling keys. :func:`parse_source_config` turns a raw config into a
typed :class:`SourceSettings`; :func:`static_errors` returns the cross-field problems that need
no database (per key, as the validate endpoint reports them). Checks that need the database
(columns exist, an incrementing column can be inferred) live in :mod:`.source_checks`.

Everything here is immutable after import and safe to share between threads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    Range,
    ValidList,
    ValidString,
)

from ..connection import CONNECTION_CONFIG_DEF, ValidTimezone

__all__ = [
    "MODE_BULK",
    "MODE_INCREMENTING",
    "MODE_TIMESTAMP",
    "MODE_TIMESTAMP_INCREMENTING",
    "SOURCE_CONFIG_DEF",
    "TABLES_CONFIG",
    "SourceSettings",
    "parse_source_config",
    "static_errors",
]

MODE_CONFIG = "mode"
MODE_BULK = "bulk"
MODE_INCREMENTING = "incrementing"
MODE_TIMESTAMP = "timestamp"
MODE_TIMESTAMP_INCREMENTING = "timestamp+incrementing"
MODES = (MODE_BULK, MODE_INCREMENTING, MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING)

TABLE_WHITELIST_CONFIG = "table.whitelist"
TABLE_BLACKLIST_CONFIG = "table.blacklist"
TABLE_INCLUDE_LIST_CONFIG = "table.include.list"
TABLE_EXCLUDE_LIST_CONFIG = "table.exclude.list"
SCHEMA_PATTERN_CONFIG = "schema.pattern"
TABLE_TYPES_CONFIG = "table.types"
TABLE_POLL_INTERVAL_MS_CONFIG = "table.poll.interval.ms"
QUERY_CONFIG = "query"
QUERY_SUFFIX_CONFIG = "query.suffix"
TOPIC_PREFIX_CONFIG = "topic.prefix"
POLL_INTERVAL_MS_CONFIG = "poll.interval.ms"
BATCH_MAX_ROWS_CONFIG = "batch.max.rows"
NUMERIC_MAPPING_CONFIG = "numeric.mapping"
DB_TIMEZONE_CONFIG = "db.timezone"
QUOTE_SQL_IDENTIFIERS_CONFIG = "quote.sql.identifiers"
VALIDATE_NON_NULL_CONFIG = "validate.non.null"
INCREMENTING_COLUMN_NAME_CONFIG = "incrementing.column.name"
TIMESTAMP_COLUMN_NAME_CONFIG = "timestamp.column.name"
TIMESTAMP_DELAY_INTERVAL_MS_CONFIG = "timestamp.delay.interval.ms"
TIMESTAMP_INITIAL_CONFIG = "timestamp.initial"

TABLES_CONFIG = "tables"
"""Task-only key: the JSON list of ``[schema, table]`` pairs a task reads."""

NUMERIC_MAPPINGS = ("none", "precision_only", "best_fit", "best_fit_eager_double")
_TOPIC_CHARS = re.compile(r"^[A-Za-z0-9._-]*$")


class _ValidTopicPrefix:
    def __call__(self, name: str, value: Any) -> None:
        text = str(value or "")
        if len(text) > 249 or not _TOPIC_CHARS.match(text):
            raise ConfigError(
                "must be at most 249 characters of ASCII alphanumerics, '.', '_' and '-'",
                name,
                value,
            )

    def __str__(self) -> str:
        return "at most 249 of [A-Za-z0-9._-]"


_MODE = "Mode"
_CONNECTOR = "Connector"

SOURCE_CONFIG_DEF = CONNECTION_CONFIG_DEF.merge(
    ConfigDef()
    .define(
        TABLE_WHITELIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Tables to copy (bare names or schema.table); empty means every table. "
        "Mutually exclusive with table.blacklist and query.",
        group="Database",
        order_in_group=6,
    )
    .define(
        TABLE_BLACKLIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Tables not to copy (bare names or schema.table).",
        group="Database",
        order_in_group=7,
    )
    .define(
        TABLE_INCLUDE_LIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Alias of table.whitelist (newer Confluent versions).",
        group="Database",
        order_in_group=8,
    )
    .define(
        TABLE_EXCLUDE_LIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Alias of table.blacklist (newer Confluent versions).",
        group="Database",
        order_in_group=9,
    )
    .define(
        SCHEMA_PATTERN_CONFIG,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="SQL LIKE pattern of the database schemas to read tables from; null "
        "means every non-system schema.",
        group="Database",
        order_in_group=10,
    )
    .define(
        TABLE_TYPES_CONFIG,
        ConfigType.LIST,
        "TABLE",
        ValidList(("TABLE", "VIEW")),
        Importance.LOW,
        "Kinds of relations to copy: TABLE, VIEW or both.",
        group="Database",
        order_in_group=11,
    )
    .define(
        NUMERIC_MAPPING_CONFIG,
        ConfigType.STRING,
        "none",
        ValidString.of(*NUMERIC_MAPPINGS),
        Importance.LOW,
        "NUMERIC/DECIMAL columns: none (always Decimal), precision_only (integers by "
        "precision when the scale is 0), best_fit (also FLOAT64 for a scale > 0 and precision "
        "< 19), best_fit_eager_double (FLOAT64 for any scale > 0).",
        group="Database",
        order_in_group=12,
    )
    .define(
        DB_TIMEZONE_CONFIG,
        ConfigType.STRING,
        "UTC",
        ValidTimezone(),
        Importance.MEDIUM,
        "Time zone of TIMESTAMP WITHOUT TIME ZONE values (and timestamp offsets compared "
        "with them).",
        group="Database",
        order_in_group=13,
    )
    .define(
        QUOTE_SQL_IDENTIFIERS_CONFIG,
        ConfigType.STRING,
        "ALWAYS",
        ValidString.of("ALWAYS", "NEVER", case_insensitive=True),
        Importance.MEDIUM,
        "ALWAYS quotes every table and column name; NEVER lets SQLAlchemy quote only names "
        "that need it (reserved words, mixed case, special characters).",
        group="Database",
        order_in_group=14,
    )
    .define(
        MODE_CONFIG,
        ConfigType.STRING,
        "",
        ValidString.of("", *MODES),
        Importance.HIGH,
        "bulk (whole table each poll), incrementing (rows with a larger "
        "incrementing.column.name), timestamp (rows with a later timestamp.column.name), or "
        "timestamp+incrementing (both: updates and new rows, exactly once).",
        group=_MODE,
        order_in_group=1,
    )
    .define(
        INCREMENTING_COLUMN_NAME_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Strictly increasing integer column for the incrementing modes; empty "
        "infers a single-column integer primary key (table mode only).",
        group=_MODE,
        order_in_group=2,
    )
    .define(
        TIMESTAMP_COLUMN_NAME_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Timestamp column(s) for the timestamp modes; several are COALESCEd in "
        "order.",
        group=_MODE,
        order_in_group=3,
    )
    .define(
        TIMESTAMP_DELAY_INTERVAL_MS_CONFIG,
        ConfigType.LONG,
        0,
        Range.at_least(0),
        Importance.HIGH,
        "Only rows whose timestamp is older than the database's now minus this delay are "
        "read, so transactions that commit late (within the delay) are not missed.",
        group=_MODE,
        order_in_group=4,
    )
    .define(
        TIMESTAMP_INITIAL_CONFIG,
        ConfigType.LONG,
        None,
        importance=Importance.LOW,
        documentation="Epoch ms to start timestamp modes from when no offset is stored; null "
        "reads from the beginning, -1 means now.",
        group=_MODE,
        order_in_group=5,
    )
    .define(
        VALIDATE_NON_NULL_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Fail when the incrementing or timestamp columns are nullable.",
        group=_MODE,
        order_in_group=6,
    )
    .define(
        QUERY_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="A custom query instead of tables: it is run as a subquery, with the "
        "mode's WHERE and ORDER BY applied outside it. Uses one task; the topic is "
        "topic.prefix.",
        group=_MODE,
        order_in_group=7,
    )
    .define(
        QUERY_SUFFIX_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.LOW,
        documentation="SQL appended to the end of every generated query, e.g. a row-locking "
        "clause or a LIMIT (operator-written SQL, like query).",
        group=_MODE,
        order_in_group=8,
    )
    .define(
        TOPIC_PREFIX_CONFIG,
        ConfigType.STRING,
        "",
        _ValidTopicPrefix(),
        Importance.HIGH,
        "Topic name prefix: the topic is prefix + table name (query mode: the prefix itself).",
        group=_CONNECTOR,
        order_in_group=1,
    )
    .define(
        POLL_INTERVAL_MS_CONFIG,
        ConfigType.INT,
        5000,
        Range.at_least(1),
        Importance.HIGH,
        "How often each table is queried for new rows, in milliseconds.",
        group=_CONNECTOR,
        order_in_group=2,
    )
    .define(
        BATCH_MAX_ROWS_CONFIG,
        ConfigType.INT,
        1000,
        Range.at_least(1),
        Importance.LOW,
        "Maximum rows returned by one poll (rows are fetched in batches of this size).",
        group=_CONNECTOR,
        order_in_group=3,
    )
    .define(
        TABLE_POLL_INTERVAL_MS_CONFIG,
        ConfigType.LONG,
        60000,
        Range.at_least(1),
        Importance.LOW,
        "How often the connector lists the tables, reconfiguring its tasks when tables "
        "appear or disappear.",
        group=_CONNECTOR,
        order_in_group=4,
    )
)


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
