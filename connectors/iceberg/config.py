"""Iceberg sink configuration: Apache Iceberg's Kafka Connect keys, parsed and cross-checked.

:data:`CONFIG_DEF` defines the keys connectrt reads under the names Iceberg's own connector
gives them (``iceberg.tables``, ``iceberg.tables.dynamic-enabled``, ``iceberg.tables.route-field``,
``iceberg.tables.auto-create-enabled``, ``iceberg.tables.evolve-schema-enabled``,
``iceberg.tables.default-id-columns``, ``iceberg.tables.default-partition-by``,
``iceberg.control.commit.interval-ms``, ``iceberg.catalog`` and ``iceberg.catalog.*``). Per-table
keys, ``iceberg.table.<table>.id-columns``, ``.route-regex`` and ``.partition-by`` (Iceberg's
names; connectrt's earlier ``iceberg.tables.<table>.<key>`` spelling is still read, Iceberg's
wins when both are set), and every ``iceberg.catalog.<property>`` are read from the raw config;
the catalog properties go to pyiceberg's ``load_catalog`` unchanged.

:func:`check_rules` returns the cross-key errors as ``(key, message)`` pairs (the connector's
``validate`` attaches them to their key); :func:`parse_config` raises the first as a
ConfigError naming the key. Pure functions, thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.config_groups import GroupedDefinitions
from connectors.copied_config import parse_with_rules
from connectors.iceberg.partitioning import PartitionTerm, parse_partition_by
from connectrt.api import ConfigType, Importance, Range, with_prefix

__all__ = [
    "AUTO_CREATE",
    "CATALOG_NAME",
    "CATALOG_PREFIX",
    "COMMIT_INTERVAL_MS",
    "CONFIG_DEF",
    "DEFAULT_ID_COLUMNS",
    "DEFAULT_PARTITION_BY",
    "DYNAMIC_ENABLED",
    "EVOLVE_SCHEMA",
    "ROUTE_FIELD",
    "TABLES",
    "IcebergSinkConfig",
    "TableConfig",
    "check_rules",
    "parse_config",
]

TABLES = "iceberg.tables"
DYNAMIC_ENABLED = "iceberg.tables.dynamic-enabled"
ROUTE_FIELD = "iceberg.tables.route-field"
DEFAULT_ID_COLUMNS = "iceberg.tables.default-id-columns"
DEFAULT_PARTITION_BY = "iceberg.tables.default-partition-by"
AUTO_CREATE = "iceberg.tables.auto-create-enabled"
EVOLVE_SCHEMA = "iceberg.tables.evolve-schema-enabled"
COMMIT_INTERVAL_MS = "iceberg.control.commit.interval-ms"
CATALOG_NAME = "iceberg.catalog"
CATALOG_PREFIX = "iceberg.catalog."
CATALOG_TYPE = "iceberg.catalog.type"
CATALOG_URI = "iceberg.catalog.uri"
CATALOG_WAREHOUSE = "iceberg.catalog.warehouse"
# Per-table keys: Iceberg's prefix first, then connectrt's earlier spelling.
_TABLE_PREFIXES = ("iceberg.table.", "iceberg.tables.")
_ID_COLUMNS, _ROUTE_REGEX, _PARTITION_BY = "id-columns", "route-regex", "partition-by"
_TABLE_KEYS = (_ID_COLUMNS, _ROUTE_REGEX, _PARTITION_BY)

_TABLES_GROUP, _CATALOG_GROUP, _COMMIT_GROUP = "Tables", "Catalog", "Commit"

CONFIG_DEF = (
    GroupedDefinitions()
    .group(_TABLES_GROUP)
    .define(
        TABLES,
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "Destination tables, as namespace.table. Every record goes to every listed table "
        "unless iceberg.tables.route-field is set, when a table takes the records whose field "
        "matches its iceberg.table.<table>.route-regex.",
    )
    .define(
        DYNAMIC_ENABLED,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Route each record to the table named by its iceberg.tables.route-field value "
        "(namespace.table, lower-cased) instead of the iceberg.tables list.",
    )
    .define(
        ROUTE_FIELD,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Value field used for routing (dotted path into nested structs). Required with "
        "iceberg.tables.dynamic-enabled.",
    )
    .define(
        DEFAULT_ID_COLUMNS,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Identifier (key) columns of the tables, unless iceberg.table.<table>.id-columns "
        "says otherwise. Set, records are upserted on these columns (the last record of a key "
        "in a commit wins); empty, records are appended.",
    )
    .define(
        AUTO_CREATE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Create a missing table from the schema of its first record (the id columns as "
        "identifier fields, partitioned as its partition-by says).",
    )
    .define(
        DEFAULT_PARTITION_BY,
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Partition spec of auto-created tables, unless iceberg.table.<table>.partition-by "
        "says otherwise: comma-separated terms, each a column (identity), year(col), "
        "month(col), day(col), hour(col), bucket(col, N) or truncate(col, W). Empty: "
        "unpartitioned. Existing tables keep their spec.",
    )
    .define(
        EVOLVE_SCHEMA,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Add new record fields to the table as optional columns and widen column types "
        "(int to long, float to double) when records need it. Off, fields the table lacks are "
        "dropped.",
    )
    .group(_CATALOG_GROUP)
    .define(
        CATALOG_NAME,
        ConfigType.STRING,
        "iceberg",
        None,
        Importance.MEDIUM,
        "Name of the catalog, as pyiceberg's load_catalog takes it.",
    )
    .define(
        CATALOG_TYPE,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Catalog type for pyiceberg (sql, rest, hive, glue, ...). Every iceberg.catalog.<key> "
        "is passed to load_catalog as <key>; secrets among them are shown as [hidden].",
    )
    .define(
        CATALOG_URI,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Catalog URI: a SQLAlchemy URL for type=sql (sqlite:///catalog.db, "
        "postgresql+psycopg://...), the REST endpoint for type=rest. A password in it is "
        "never shown.",
    )
    .define(
        CATALOG_WAREHOUSE,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Warehouse location where new tables are placed (file:///path, s3://bucket/path).",
    )
    .group(_COMMIT_GROUP)
    .define(
        COMMIT_INTERVAL_MS,
        ConfigType.INT,
        300_000,
        Range.at_least(1),
        Importance.MEDIUM,
        "How often each task commits what it buffered to its tables, in milliseconds. The "
        "Kafka offsets of the records go into the same snapshot.",
    )
    .build()
)


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Per-table settings: identifier columns, with a route field the route regex, and the
    partition spec of the table if it is auto-created (``partition_key`` names the key that
    gave it, for messages)."""

    id_columns: tuple[str, ...]
    route_regex: re.Pattern[str] | None
    partition_by: tuple[PartitionTerm, ...] = ()
    partition_key: str = DEFAULT_PARTITION_BY


@dataclass(frozen=True, slots=True)
class IcebergSinkConfig:
    """The parsed config."""

    connector_name: str
    tables: tuple[str, ...]
    dynamic: bool
    route_field: str | None
    default_id_columns: tuple[str, ...]
    default_partition_by: tuple[PartitionTerm, ...]
    auto_create: bool
    evolve_schema: bool
    commit_interval_ms: int
    catalog_name: str
    catalog_properties: Mapping[str, str]
    table_configs: Mapping[str, TableConfig]

    def table_config(self, table: str) -> TableConfig:
        """The settings of ``table``: its own keys over the defaults (a table routed
        dynamically has keys of its own too)."""
        found = self.table_configs.get(table)
        if found is not None:
            return found
        return TableConfig(self.default_id_columns, None, self.default_partition_by)


def _names(values: Any) -> list[str]:
    return [str(v).strip() for v in values or () if str(v).strip()]


def table_keys(raw: Mapping[str, Any]) -> dict[str, dict[str, tuple[str, Any]]]:
    """Per-table keys in ``raw``: table -> setting (``id-columns``, ``route-regex``,
    ``partition-by``) -> (the key, its value); Iceberg's ``iceberg.table.`` spelling wins over
    ``iceberg.tables.``."""
    found: dict[str, dict[str, tuple[str, Any]]] = {}
    for prefix in reversed(_TABLE_PREFIXES):  # the preferred prefix is applied last
        for key, value in raw.items():
            if value is None or not key.startswith(prefix):
                continue
            rest = key[len(prefix) :]
            for setting in _TABLE_KEYS:
                table = rest[: -len(setting) - 1]
                if rest.endswith(f".{setting}") and "." in table.strip("."):
                    found.setdefault(table, {})[setting] = (key, value)
    return found


def check_rules(parsed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Cross-key errors as ``(key, message)`` pairs (empty when the combination is valid)."""
    errors: list[tuple[str, str]] = []
    tables = _names(parsed[TABLES])
    dynamic = bool(parsed[DYNAMIC_ENABLED])
    route_field = (parsed[ROUTE_FIELD] or "").strip()
    if not tables and not dynamic:
        errors.append((TABLES, "Set iceberg.tables, or iceberg.tables.dynamic-enabled=true"))
    if dynamic and not route_field:
        errors.append((ROUTE_FIELD, "iceberg.tables.dynamic-enabled=true needs a route field"))
    for table in tables:
        if "." not in table.strip(".") or ".." in table:
            errors.append((TABLES, f"Table '{table}' is not namespace.table"))
    try:
        parse_partition_by(parsed.get(DEFAULT_PARTITION_BY))
    except ValueError as exc:
        errors.append((DEFAULT_PARTITION_BY, f"Invalid partition spec: {exc}"))
    for settings in table_keys(parsed).values():
        if _ROUTE_REGEX in settings:
            key, raw = settings[_ROUTE_REGEX]
            try:
                re.compile(str(raw))
            except re.error as exc:
                errors.append((TABLES, f"{key}: not a regular expression ({exc})"))
        if _PARTITION_BY in settings:
            key, raw = settings[_PARTITION_BY]
            try:
                parse_partition_by(str(raw))
            except ValueError as exc:
                errors.append((TABLES, f"{key}: invalid partition spec: {exc}"))
    if not (parsed[CATALOG_TYPE] or "").strip() and not (parsed[CATALOG_URI] or "").strip():
        errors.append(
            (CATALOG_TYPE, "Set the catalog: iceberg.catalog.type (and its uri, warehouse)")
        )
    return errors


def _table_configs(
    raw: Mapping[str, Any],
    tables: tuple[str, ...],
    default_ids: tuple[str, ...],
    default_partition_by: tuple[PartitionTerm, ...],
) -> dict[str, TableConfig]:
    keys = table_keys(raw)
    out: dict[str, TableConfig] = {}
    for table in (*tables, *(t for t in keys if t not in tables)):
        settings = keys.get(table, {})
        ids = settings.get(_ID_COLUMNS)
        regex = settings.get(_ROUTE_REGEX)
        partition = settings.get(_PARTITION_BY)
        out[table] = TableConfig(
            tuple(_names(str(ids[1]).split(","))) if ids is not None else default_ids,
            re.compile(str(regex[1])) if regex is not None else None,
            parse_partition_by(str(partition[1])) if partition else default_partition_by,
            partition[0] if partition else DEFAULT_PARTITION_BY,
        )
    return out


def parse_config(config: Mapping[str, Any]) -> IcebergSinkConfig:
    """Parse and cross-check ``config``; ConfigError names the offending key."""
    parsed = parse_with_rules(CONFIG_DEF, config, check_rules)
    tables = tuple(_names(parsed[TABLES]))
    default_ids = tuple(_names(parsed[DEFAULT_ID_COLUMNS]))
    default_partition_by = parse_partition_by(parsed[DEFAULT_PARTITION_BY])
    catalog = {
        key: str(value)
        for key, value in with_prefix(config, CATALOG_PREFIX).items()
        if value is not None
    }
    return IcebergSinkConfig(
        connector_name=str(config.get("name") or "iceberg-sink"),
        tables=tables,
        dynamic=bool(parsed[DYNAMIC_ENABLED]),
        route_field=(parsed[ROUTE_FIELD] or "").strip() or None,
        default_id_columns=default_ids,
        default_partition_by=default_partition_by,
        auto_create=bool(parsed[AUTO_CREATE]),
        evolve_schema=bool(parsed[EVOLVE_SCHEMA]),
        commit_interval_ms=int(parsed[COMMIT_INTERVAL_MS]),
        catalog_name=str(parsed[CATALOG_NAME]),
        catalog_properties=catalog,
        table_configs=_table_configs(parsed, tables, default_ids, default_partition_by),
    )
