"""JDBC sink configuration: Confluent's ``JdbcSinkConfig`` keys plus the exactly-once option.

:data:`SINK_CONFIG_DEF` is the connection config followed by the sink keys; ``parse_sink_config``
turns a raw config into a frozen :class:`SinkConfig` and applies the cross-key rules Confluent's
connector applies (``delete.enabled`` needs ``pk.mode=record_key``; ``pk.mode=kafka`` takes
zero or three ``pk.fields``), plus one of the runtime's keys: ``exactly.once.enabled`` cannot run
in a share group (``consumer.group.type=share``), which owns no partitions and cannot seek.
Pure functions, thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.config_groups import GroupedDefinitions
from connectors.copied_config import parse_with_rules
from connectors.jdbc.connection import CONNECTION_CONFIG_DEF, ValidTimezone
from connectrt.api import ConfigType, Importance, Range, ValidString

__all__ = [
    "DEFAULT_KAFKA_PK_FIELDS",
    "SINK_CONFIG_DEF",
    "SinkConfig",
    "check_sink_rules",
    "parse_sink_config",
]

INSERT_MODE = "insert.mode"
PK_MODE = "pk.mode"
PK_FIELDS = "pk.fields"
FIELDS_WHITELIST = "fields.whitelist"
TABLE_NAME_FORMAT = "table.name.format"
AUTO_CREATE = "auto.create"
AUTO_EVOLVE = "auto.evolve"
DELETE_ENABLED = "delete.enabled"
BATCH_SIZE = "batch.size"
MAX_RETRIES = "max.retries"
RETRY_BACKOFF_MS = "retry.backoff.ms"
QUOTE_IDENTIFIERS = "quote.sql.identifiers"
EXACTLY_ONCE = "exactly.once.enabled"
OFFSETS_TABLE = "exactly.once.offsets.table"
PG_COPY = "postgresql.copy.enabled"
DB_TIMEZONE = "db.timezone"

# The runtime's sink key choosing the group a connector's tasks join (connectrt.runtime.config.
# share_group; named here because a bundled connector imports only the plugin API).
GROUP_TYPE = "consumer.group.type"

DEFAULT_KAFKA_PK_FIELDS = ("__connect_topic", "__connect_partition", "__connect_offset")

_WRITES, _DDL, _RETRIES, _EOS = "Writes", "DDL", "Retries", "Exactly once"

SINK_CONFIG_DEF = (
    GroupedDefinitions(CONNECTION_CONFIG_DEF)
    .group(_WRITES)
    .define(
        INSERT_MODE,
        ConfigType.STRING,
        "insert",
        ValidString.of("insert", "upsert", "update", case_insensitive=True),
        Importance.HIGH,
        "How rows are written: insert (plain INSERT), upsert (INSERT ... ON CONFLICT (pk) DO "
        "UPDATE; needs a pk.mode other than none), update (UPDATE ... WHERE pk).",
    )
    .define(
        PK_MODE,
        ConfigType.STRING,
        "none",
        ValidString.of("none", "kafka", "record_key", "record_value", case_insensitive=True),
        Importance.HIGH,
        "Where the primary key comes from: none; kafka (topic, partition, offset columns); "
        "record_key (the key's fields, or the primitive key as one column); record_value "
        "(fields of the value).",
    )
    .define(
        PK_FIELDS,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Primary key column names, read according to pk.mode: kafka takes three names "
        "(default __connect_topic,__connect_partition,__connect_offset); record_key the key "
        "fields (all by default; one name for a primitive key); record_value the value fields "
        "(all by default).",
    )
    .define(
        FIELDS_WHITELIST,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Value fields to write (all when empty). Primary key fields are always written.",
    )
    .define(
        TABLE_NAME_FORMAT,
        ConfigType.STRING,
        "${topic}",
        None,
        Importance.MEDIUM,
        "Destination table name; ${topic} is replaced by the record's topic.",
    )
    .define(
        DELETE_ENABLED,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "A record with a null value (tombstone) deletes the row with its key. Requires "
        "pk.mode=record_key.",
    )
    .define(
        BATCH_SIZE,
        ConfigType.INT,
        3000,
        Range.at_least(1),
        Importance.MEDIUM,
        "Rows per executemany() call; all calls of one put() share one transaction.",
    )
    .define(
        QUOTE_IDENTIFIERS,
        ConfigType.STRING,
        "always",
        ValidString.of("always", "never", case_insensitive=True),
        Importance.LOW,
        "always: table and column names are quoted (case kept exactly); never: quoted only "
        "where the database requires it (reserved words, special characters).",
    )
    .define(
        PG_COPY,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "PostgreSQL, insert.mode=insert: write each batch with COPY ... FROM STDIN instead of "
        "INSERT (faster for large batches; same transaction). Ignored on other databases.",
    )
    .define(
        DB_TIMEZONE,
        ConfigType.STRING,
        "UTC",
        ValidTimezone(),
        Importance.MEDIUM,
        "Time zone in which Timestamp values are written to TIMESTAMP (without time zone) "
        "columns: their wall-clock time in this zone.",
    )
    .group(_DDL)
    .define(
        AUTO_CREATE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "CREATE TABLE from the record schema when the destination table is missing.",
    )
    .define(
        AUTO_EVOLVE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "ALTER TABLE ADD a nullable column for each new optional field (or field with a "
        "default). Columns are never dropped or changed; an incompatible change fails the task.",
    )
    .group(_RETRIES)
    .define(
        MAX_RETRIES,
        ConfigType.INT,
        10,
        Range.at_least(0),
        Importance.MEDIUM,
        "Times a batch is redelivered after a transient database error (lock timeout, busy "
        "database, lost connection) before the task fails.",
    )
    .define(
        RETRY_BACKOFF_MS,
        ConfigType.INT,
        3000,
        Range.at_least(0),
        Importance.MEDIUM,
        "Wait before redelivering a batch after a transient database error, in milliseconds.",
    )
    .group(_EOS)
    .define(
        EXACTLY_ONCE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Store each batch's Kafka offsets in the offsets table in the same transaction as its "
        "rows, and rewind the consumer to them when partitions are assigned: no duplicates "
        "after a crash, even in insert mode. Needs a classic consumer group: refused with "
        "consumer.group.type=share.",
    )
    .define(
        OFFSETS_TABLE,
        ConfigType.STRING,
        "__connect_offsets",
        None,
        Importance.LOW,
        "Table holding the offsets for exactly.once.enabled (created when missing), keyed by "
        "connector name, topic and partition.",
    )
    .build()
)


@dataclass(frozen=True, slots=True)
class SinkConfig:
    """The parsed sink config (lower-cased enum values, tuples for lists)."""

    raw: Mapping[str, Any]
    connector_name: str
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_whitelist: frozenset[str]
    table_name_format: str
    auto_create: bool
    auto_evolve: bool
    delete_enabled: bool
    batch_size: int
    max_retries: int
    retry_backoff_ms: int
    quote_identifiers: bool
    exactly_once: bool
    offsets_table: str
    postgresql_copy: bool
    db_timezone: str


def check_sink_rules(parsed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Cross-key errors as ``(key, message)`` pairs (empty when the combination is valid)."""
    errors: list[tuple[str, str]] = []
    pk_mode = str(parsed[PK_MODE]).lower()
    insert_mode = str(parsed[INSERT_MODE]).lower()
    pk_fields = [f for f in parsed[PK_FIELDS] if f]
    if parsed[DELETE_ENABLED] and pk_mode != "record_key":
        errors.append(
            (DELETE_ENABLED, "Primary key mode must be 'record_key' when delete support is enabled")
        )
    if insert_mode in ("upsert", "update") and pk_mode == "none":
        errors.append((PK_MODE, f"insert.mode={insert_mode} needs a primary key: set pk.mode"))
    if pk_mode == "kafka" and pk_fields and len(pk_fields) != 3:
        errors.append(
            (PK_FIELDS, "pk.mode=kafka takes exactly three pk.fields (topic, partition, offset)")
        )
    if pk_mode == "none" and pk_fields:
        errors.append((PK_FIELDS, "pk.fields is set but pk.mode is none"))
    if not str(parsed[TABLE_NAME_FORMAT]).strip():
        errors.append((TABLE_NAME_FORMAT, "table.name.format must not be empty"))
    if parsed[PG_COPY] and insert_mode != "insert":
        errors.append((PG_COPY, "postgresql.copy.enabled needs insert.mode=insert"))
    if parsed[EXACTLY_ONCE] and not str(parsed[OFFSETS_TABLE]).strip():
        errors.append((OFFSETS_TABLE, "exactly.once.offsets.table must not be empty"))
    if parsed[EXACTLY_ONCE] and str(parsed.get(GROUP_TYPE) or "").strip().lower() == "share":
        errors.append(
            (
                EXACTLY_ONCE,
                "exactly.once.enabled cannot be used with consumer.group.type=share: it rewinds "
                "the consumer to the offsets stored in the database, and a share group owns no "
                "partitions and cannot seek (use a classic consumer group)",
            )
        )
    return errors


def parse_sink_config(config: Mapping[str, Any]) -> SinkConfig:
    """Parse and cross-check ``config``; ConfigError names the offending key."""
    parsed = parse_with_rules(SINK_CONFIG_DEF, config, check_sink_rules)
    pk_mode = str(parsed[PK_MODE]).lower()
    pk_fields = tuple(f for f in parsed[PK_FIELDS] if f)
    if pk_mode == "kafka" and not pk_fields:
        pk_fields = DEFAULT_KAFKA_PK_FIELDS
    return SinkConfig(
        raw=parsed,
        connector_name=str(config.get("name") or "jdbc-sink"),
        insert_mode=str(parsed[INSERT_MODE]).lower(),
        pk_mode=pk_mode,
        pk_fields=pk_fields,
        fields_whitelist=frozenset(f for f in parsed[FIELDS_WHITELIST] if f),
        table_name_format=str(parsed[TABLE_NAME_FORMAT]),
        auto_create=bool(parsed[AUTO_CREATE]),
        auto_evolve=bool(parsed[AUTO_EVOLVE]),
        delete_enabled=bool(parsed[DELETE_ENABLED]),
        batch_size=int(parsed[BATCH_SIZE]),
        max_retries=int(parsed[MAX_RETRIES]),
        retry_backoff_ms=int(parsed[RETRY_BACKOFF_MS]),
        quote_identifiers=str(parsed[QUOTE_IDENTIFIERS]).lower() == "always",
        exactly_once=bool(parsed[EXACTLY_ONCE]),
        offsets_table=str(parsed[OFFSETS_TABLE]).strip(),
        postgresql_copy=bool(parsed[PG_COPY]),
        db_timezone=str(parsed[DB_TIMEZONE]),
    )
