"""Iceberg sink configuration: Apache Iceberg's Kafka Connect keys, parsed and cross-checked.

:data:`CONFIG_DEF` defines the keys connectrt reads under the names Iceberg's own connector
gives them (``iceberg.tables``, ``iceberg.tables.dynamic-enabled``, ``iceberg.tables.route-field``,
``iceberg.tables.auto-create-enabled``, ``iceberg.tables.evolve-schema-enabled``,
``iceberg.tables.default-id-columns``, ``iceberg.control.commit.interval-ms``, ``iceberg.catalog``
and ``iceberg.catalog.*``). Per-table keys (``iceberg.tables.<table>.id-columns``,
``iceberg.tables.<table>.route-regex``) and every ``iceberg.catalog.<property>`` are read from
the raw config; the catalog properties go to pyiceberg's ``load_catalog`` unchanged.

:func:`check_rules` returns the cross-key errors as ``(key, message)`` pairs (the connector's
``validate`` attaches them to their key); :func:`parse_config` raises the first as a
ConfigError naming the key. Pure functions, thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api import ConfigDef, ConfigError, ConfigType, Importance, Range, with_prefix

__all__ = [
    "AUTO_CREATE",
    "CATALOG_NAME",
    "CATALOG_PREFIX",
    "COMMIT_INTERVAL_MS",
    "CONFIG_DEF",
    "DEFAULT_ID_COLUMNS",
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
AUTO_CREATE = "iceberg.tables.auto-create-enabled"
EVOLVE_SCHEMA = "iceberg.tables.evolve-schema-enabled"
COMMIT_INTERVAL_MS = "iceberg.control.commit.interval-ms"
CATALOG_NAME = "iceberg.catalog"
CATALOG_PREFIX = "iceberg.catalog."
CATALOG_TYPE = "iceberg.catalog.type"
CATALOG_URI = "iceberg.catalog.uri"
CATALOG_WAREHOUSE = "iceberg.catalog.warehouse"
_TABLE_PREFIX = "iceberg.tables."
_ID_COLUMNS = ".id-columns"
_ROUTE_REGEX = ".route-regex"

_TABLES_GROUP, _CATALOG_GROUP, _COMMIT_GROUP = "Tables", "Catalog", "Commit"

CONFIG_DEF = (
    ConfigDef()
    .define(
        TABLES,
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "Destination tables, as namespace.table. Every record goes to every listed table "
        "unless iceberg.tables.route-field is set, when a table takes the records whose field "
        "matches its iceberg.tables.<table>.route-regex.",
        group=_TABLES_GROUP,
        order_in_group=1,
    )
    .define(
        DYNAMIC_ENABLED,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Route each record to the table named by its iceberg.tables.route-field value "
        "(namespace.table, lower-cased) instead of the iceberg.tables list.",
        group=_TABLES_GROUP,
        order_in_group=2,
    )
    .define(
        ROUTE_FIELD,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Value field used for routing (dotted path into nested structs). Required with "
        "iceberg.tables.dynamic-enabled.",
        group=_TABLES_GROUP,
        order_in_group=3,
    )
    .define(
        DEFAULT_ID_COLUMNS,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Identifier (key) columns of the tables, unless iceberg.tables.<table>.id-columns "
        "says otherwise. Set, records are upserted on these columns (the last record of a key "
        "in a commit wins); empty, records are appended.",
        group=_TABLES_GROUP,
        order_in_group=4,
    )
    .define(
        AUTO_CREATE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Create a missing table from the schema of its first record (unpartitioned, the id "
        "columns as identifier fields).",
        group=_TABLES_GROUP,
        order_in_group=5,
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
        group=_TABLES_GROUP,
        order_in_group=6,
    )
    .define(
        CATALOG_NAME,
        ConfigType.STRING,
        "iceberg",
        None,
        Importance.MEDIUM,
        "Name of the catalog, as pyiceberg's load_catalog takes it.",
        group=_CATALOG_GROUP,
        order_in_group=1,
    )
    .define(
        CATALOG_TYPE,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Catalog type for pyiceberg (sql, rest, hive, glue, ...). Every iceberg.catalog.<key> "
        "is passed to load_catalog as <key>; secrets among them are shown as [hidden].",
        group=_CATALOG_GROUP,
        order_in_group=2,
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
        group=_CATALOG_GROUP,
        order_in_group=3,
    )
    .define(
        CATALOG_WAREHOUSE,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Warehouse location where new tables are placed (file:///path, s3://bucket/path).",
        group=_CATALOG_GROUP,
        order_in_group=4,
    )
    .define(
        COMMIT_INTERVAL_MS,
        ConfigType.INT,
        300_000,
        Range.at_least(1),
        Importance.MEDIUM,
        "How often each task commits what it buffered to its tables, in milliseconds. The "
        "Kafka offsets of the records go into the same snapshot.",
        group=_COMMIT_GROUP,
        order_in_group=1,
    )
)


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Per-table settings: identifier columns and, with a route field, the route regex."""

    id_columns: tuple[str, ...]
    route_regex: re.Pattern[str] | None


@dataclass(frozen=True, slots=True)
class IcebergSinkConfig:
    """The parsed config."""

    connector_name: str
    tables: tuple[str, ...]
    dynamic: bool
    route_field: str | None
    default_id_columns: tuple[str, ...]
    auto_create: bool
    evolve_schema: bool
    commit_interval_ms: int
    catalog_name: str
    catalog_properties: Mapping[str, str]
    table_configs: Mapping[str, TableConfig]

    def table_config(self, table: str) -> TableConfig:
        """The settings of ``table`` (the defaults for a table routed dynamically)."""
        found = self.table_configs.get(table)
        return found if found is not None else TableConfig(self.default_id_columns, None)


def _names(values: Any) -> list[str]:
    return [str(v).strip() for v in values or () if str(v).strip()]


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
    for key, raw in parsed.items():
        if key.startswith(_TABLE_PREFIX) and key.endswith(_ROUTE_REGEX):
            try:
                re.compile(str(raw))
            except re.error as exc:
                errors.append((TABLES, f"{key}: not a regular expression ({exc})"))
    if not (parsed[CATALOG_TYPE] or "").strip() and not (parsed[CATALOG_URI] or "").strip():
        errors.append(
            (CATALOG_TYPE, "Set the catalog: iceberg.catalog.type (and its uri, warehouse)")
        )
    return errors


def _table_configs(
    raw: Mapping[str, Any], tables: tuple[str, ...], default_ids: tuple[str, ...]
) -> dict[str, TableConfig]:
    out: dict[str, TableConfig] = {}
    for table in tables:
        ids = raw.get(f"{_TABLE_PREFIX}{table}{_ID_COLUMNS}")
        regex = raw.get(f"{_TABLE_PREFIX}{table}{_ROUTE_REGEX}")
        out[table] = TableConfig(
            tuple(_names(str(ids).split(","))) if ids is not None else default_ids,
            re.compile(str(regex)) if regex is not None else None,
        )
    return out


def parse_config(config: Mapping[str, Any]) -> IcebergSinkConfig:
    """Parse and cross-check ``config``; ConfigError names the offending key."""
    parsed = CONFIG_DEF.parse(config)
    errors = check_rules(parsed)
    if errors:
        key, message = errors[0]
        raise ConfigError(message, key, parsed.get(key))
    tables = tuple(_names(parsed[TABLES]))
    default_ids = tuple(_names(parsed[DEFAULT_ID_COLUMNS]))
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
        auto_create=bool(parsed[AUTO_CREATE]),
        evolve_schema=bool(parsed[EVOLVE_SCHEMA]),
        commit_interval_ms=int(parsed[COMMIT_INTERVAL_MS]),
        catalog_name=str(parsed[CATALOG_NAME]),
        catalog_properties=catalog,
        table_configs=_table_configs(parsed, tables, default_ids),
    )
