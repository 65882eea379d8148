"""Configuration of the JDBC source connector: Confluent's ``JdbcSourceConnector`` keys.

:data:`SOURCE_CONFIG_DEF` is the connection keys (:mod:`connectors.jdbc.connection`) plus the
table selection, mode and polling keys. :mod:`.settings` turns a config parsed with it into a
typed :class:`~.settings.SourceSettings` and checks the cross-field rules.

Everything here is immutable after import and safe to share between threads.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.config_groups import GroupedDefinitions
from connectrt.api import (
    ConfigError,
    ConfigType,
    Importance,
    Range,
    ValidList,
    ValidString,
)

from ..connection import CONNECTION_CONFIG_DEF, ValidTimezone

__all__ = [
    "BATCH_MAX_ROWS_CONFIG",
    "DB_TIMEZONE_CONFIG",
    "INCREMENTING_COLUMN_NAME_CONFIG",
    "MODES",
    "MODE_BULK",
    "MODE_CONFIG",
    "MODE_INCREMENTING",
    "MODE_TIMESTAMP",
    "MODE_TIMESTAMP_INCREMENTING",
    "NUMERIC_MAPPINGS",
    "NUMERIC_MAPPING_CONFIG",
    "POLL_INTERVAL_MS_CONFIG",
    "QUERY_CONFIG",
    "QUERY_SUFFIX_CONFIG",
    "QUOTE_SQL_IDENTIFIERS_CONFIG",
    "SCHEMA_PATTERN_CONFIG",
    "SOURCE_CONFIG_DEF",
    "TABLES_CONFIG",
    "TABLE_BLACKLIST_CONFIG",
    "TABLE_EXCLUDE_LIST_CONFIG",
    "TABLE_INCLUDE_LIST_CONFIG",
    "TABLE_POLL_INTERVAL_MS_CONFIG",
    "TABLE_TYPES_CONFIG",
    "TABLE_WHITELIST_CONFIG",
    "TIMESTAMP_COLUMN_NAME_CONFIG",
    "TIMESTAMP_DELAY_INTERVAL_MS_CONFIG",
    "TIMESTAMP_INITIAL_CONFIG",
    "TOPIC_PREFIX_CONFIG",
    "VALIDATE_NON_NULL_CONFIG",
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

SOURCE_CONFIG_DEF = (
    GroupedDefinitions(CONNECTION_CONFIG_DEF)
    .group("Database")
    .define(
        TABLE_WHITELIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Tables to copy (bare names or schema.table); empty means every table. "
        "Mutually exclusive with table.blacklist and query.",
    )
    .define(
        TABLE_BLACKLIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Tables not to copy (bare names or schema.table).",
    )
    .define(
        TABLE_INCLUDE_LIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Alias of table.whitelist (newer Confluent versions).",
    )
    .define(
        TABLE_EXCLUDE_LIST_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Alias of table.blacklist (newer Confluent versions).",
    )
    .define(
        SCHEMA_PATTERN_CONFIG,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="SQL LIKE pattern of the database schemas to read tables from; null "
        "means every non-system schema.",
    )
    .define(
        TABLE_TYPES_CONFIG,
        ConfigType.LIST,
        "TABLE",
        ValidList(("TABLE", "VIEW")),
        Importance.LOW,
        "Kinds of relations to copy: TABLE, VIEW or both.",
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
    )
    .define(
        DB_TIMEZONE_CONFIG,
        ConfigType.STRING,
        "UTC",
        ValidTimezone(),
        Importance.MEDIUM,
        "Time zone of TIMESTAMP WITHOUT TIME ZONE values (and timestamp offsets compared "
        "with them).",
    )
    .define(
        QUOTE_SQL_IDENTIFIERS_CONFIG,
        ConfigType.STRING,
        "ALWAYS",
        ValidString.of("ALWAYS", "NEVER", case_insensitive=True),
        Importance.MEDIUM,
        "ALWAYS quotes every table and column name; NEVER lets SQLAlchemy quote only names "
        "that need it (reserved words, mixed case, special characters).",
    )
    .group(_MODE)
    .define(
        MODE_CONFIG,
        ConfigType.STRING,
        "",
        ValidString.of("", *MODES),
        Importance.HIGH,
        "bulk (whole table each poll), incrementing (rows with a larger "
        "incrementing.column.name), timestamp (rows with a later timestamp.column.name), or "
        "timestamp+incrementing (both: updates and new rows, exactly once).",
    )
    .define(
        INCREMENTING_COLUMN_NAME_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Strictly increasing integer column for the incrementing modes; empty "
        "infers a single-column integer primary key (table mode only).",
    )
    .define(
        TIMESTAMP_COLUMN_NAME_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Timestamp column(s) for the timestamp modes; several are COALESCEd in "
        "order.",
    )
    .define(
        TIMESTAMP_DELAY_INTERVAL_MS_CONFIG,
        ConfigType.LONG,
        0,
        Range.at_least(0),
        Importance.HIGH,
        "Only rows whose timestamp is older than the database's now minus this delay are "
        "read, so transactions that commit late (within the delay) are not missed.",
    )
    .define(
        TIMESTAMP_INITIAL_CONFIG,
        ConfigType.LONG,
        None,
        importance=Importance.LOW,
        documentation="Epoch ms to start timestamp modes from when no offset is stored; null "
        "reads from the beginning, -1 means now.",
    )
    .define(
        VALIDATE_NON_NULL_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Fail when the incrementing or timestamp columns are nullable.",
    )
    .define(
        QUERY_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="A custom query instead of tables: it is run as a subquery, with the "
        "mode's WHERE and ORDER BY applied outside it. Uses one task; the topic is "
        "topic.prefix.",
    )
    .define(
        QUERY_SUFFIX_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.LOW,
        documentation="SQL appended to the end of every generated query, e.g. a row-locking "
        "clause or a LIMIT (operator-written SQL, like query).",
    )
    .group(_CONNECTOR)
    .define(
        TOPIC_PREFIX_CONFIG,
        ConfigType.STRING,
        "",
        _ValidTopicPrefix(),
        Importance.HIGH,
        "Topic name prefix: the topic is prefix + table name (query mode: the prefix itself).",
    )
    .define(
        POLL_INTERVAL_MS_CONFIG,
        ConfigType.INT,
        5000,
        Range.at_least(1),
        Importance.HIGH,
        "How often each table is queried for new rows, in milliseconds.",
    )
    .define(
        BATCH_MAX_ROWS_CONFIG,
        ConfigType.INT,
        1000,
        Range.at_least(1),
        Importance.LOW,
        "Maximum rows returned by one poll (rows are fetched in batches of this size).",
    )
    .define(
        TABLE_POLL_INTERVAL_MS_CONFIG,
        ConfigType.LONG,
        60000,
        Range.at_least(1),
        Importance.LOW,
        "How often the connector lists the tables, reconfiguring its tasks when tables "
        "appear or disappear.",
    )
    .build()
)
