"""Configuration of the PostgreSQL CDC source: Debezium's ``PostgresConnector`` keys.

:data:`CDC_CONFIG_DEF` defines the keys (the names, defaults and meanings of Debezium 3's
PostgreSQL connector where connectrt has the feature); :func:`parse_settings` turns a raw
config into an immutable :class:`CdcSettings`. Everything here is immutable after import and
safe to share between threads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.config_groups import GroupedDefinitions
from connectrt.api import (
    ConfigError,
    ConfigType,
    Importance,
    Password,
    Range,
    ValidString,
)

__all__ = [
    "AUTOCREATE_ALL_TABLES",
    "AUTOCREATE_DISABLED",
    "AUTOCREATE_FILTERED",
    "CDC_CONFIG_DEF",
    "CdcSettings",
    "parse_settings",
]

AUTOCREATE_ALL_TABLES = "all_tables"
AUTOCREATE_DISABLED = "disabled"
AUTOCREATE_FILTERED = "filtered"
SNAPSHOT_INITIAL = "initial"
SNAPSHOT_NO_DATA = "no_data"

_CONNECTION = "Connection"
_CAPTURE = "Capture"
_EVENTS = "Events"

CDC_CONFIG_DEF = (
    GroupedDefinitions()
    .group(_CONNECTION)
    .define(
        "database.hostname",
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Host name or address of the PostgreSQL server.",
    )
    .define(
        "database.port",
        ConfigType.INT,
        5432,
        Range.between(1, 65535),
        Importance.HIGH,
        "Port of the PostgreSQL server.",
    )
    .define(
        "database.user",
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="User to connect as: needs the REPLICATION attribute, SELECT on the "
        "captured tables and, for publication.autocreate.mode other than disabled, ownership "
        "of the tables (or CREATE on the database for a publication FOR ALL TABLES: superuser).",
    )
    .define(
        "database.password",
        ConfigType.PASSWORD,
        None,
        importance=Importance.HIGH,
        documentation="Password of database.user (none for trust or peer authentication).",
    )
    .define(
        "database.dbname",
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="The database to capture changes from.",
    )
    .define(
        "database.sslmode",
        ConfigType.STRING,
        "prefer",
        ValidString.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
        Importance.LOW,
        "libpq sslmode of the connections.",
    )
    .define(
        "errors.max.retries",
        ConfigType.INT,
        -1,
        Range.at_least(-1),
        Importance.LOW,
        "How many times in a row to reconnect after the connection to PostgreSQL is lost while "
        "streaming (a server restart or failover) before the task fails: -1 without limit, 0 "
        "fails at once. The task resumes from the slot and skips what it already sent.",
    )
    .define(
        "retriable.restart.connector.wait.ms",
        ConfigType.LONG,
        10000,
        Range.at_least(1),
        Importance.LOW,
        "Longest wait (ms) between reconnection attempts: the first attempt is made at once, "
        "the waits then double from 500 ms up to this bound.",
    )
    .group(_EVENTS)
    .define(
        "topic.prefix",
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Logical name of the server: the first part of every topic name "
        "(<topic.prefix>.<schema>.<table>), the source block's name, and the source "
        'partition of the offsets ({"server": <topic.prefix>}).',
    )
    .group(_CAPTURE)
    .define(
        "plugin.name",
        ConfigType.STRING,
        "pgoutput",
        ValidString.of("pgoutput"),
        Importance.MEDIUM,
        "Logical decoding plugin: only PostgreSQL's built-in pgoutput.",
    )
    .define(
        "slot.name",
        ConfigType.STRING,
        "debezium",
        importance=Importance.MEDIUM,
        documentation="Replication slot to create or reuse (one reader at a time: the "
        "connector runs one task).",
    )
    .define(
        "publication.name",
        ConfigType.STRING,
        "dbz_publication",
        importance=Importance.MEDIUM,
        documentation="Publication whose tables are streamed.",
    )
    .define(
        "publication.autocreate.mode",
        ConfigType.STRING,
        AUTOCREATE_ALL_TABLES,
        ValidString.of(AUTOCREATE_ALL_TABLES, AUTOCREATE_DISABLED, AUTOCREATE_FILTERED),
        Importance.MEDIUM,
        "all_tables: create the publication FOR ALL TABLES when it does not exist; filtered: "
        "create it (or set its tables) for the tables the include/exclude lists select; "
        "disabled: never create it (a missing publication fails the connector).",
    )
    .define(
        "schema.include.list",
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Comma-separated regular expressions matching the schemas to capture "
        "(whole names); empty means every schema but the system ones.",
    )
    .define(
        "schema.exclude.list",
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Comma-separated regular expressions matching schemas not to capture.",
    )
    .define(
        "table.include.list",
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Comma-separated regular expressions matching the tables to capture "
        "(as schema.table, whole names); empty means every table of the captured schemas.",
    )
    .define(
        "table.exclude.list",
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Comma-separated regular expressions matching tables (schema.table) "
        "not to capture.",
    )
    .define(
        "snapshot.mode",
        ConfigType.STRING,
        SNAPSHOT_INITIAL,
        ValidString.of(SNAPSHOT_INITIAL, SNAPSHOT_NO_DATA, "never"),
        Importance.MEDIUM,
        "initial: when the connector has no committed offsets, read every captured table "
        "(op r events) in the slot's exported snapshot, then stream; no_data (or its old "
        "name never): stream only.",
    )
    .define(
        "snapshot.fetch.size",
        ConfigType.INT,
        10240,
        Range.at_least(1),
        Importance.LOW,
        "Rows fetched per round trip while snapshotting.",
    )
    .define(
        "max.batch.size",
        ConfigType.INT,
        2048,
        Range.at_least(1),
        Importance.LOW,
        "Most records returned by one poll.",
    )
    .define(
        "poll.interval.ms",
        ConfigType.LONG,
        500,
        Range.at_least(1),
        Importance.LOW,
        "How long one poll waits for changes when there are none.",
    )
    .define(
        "slot.drop.on.stop",
        ConfigType.BOOLEAN,
        False,
        importance=Importance.LOW,
        documentation="Drop the replication slot when the task stops (tests and trials only: "
        "changes made while the connector is stopped are then lost).",
    )
    .group(_EVENTS)
    .define(
        "tombstones.on.delete",
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Follow each delete event by a tombstone (same key, null value) so "
        "that log compaction can remove the key.",
    )
    .define(
        "heartbeat.interval.ms",
        ConfigType.INT,
        0,
        Range.at_least(0),
        Importance.MEDIUM,
        "How often (ms) to write a heartbeat record to <topic.heartbeat.prefix>.<topic.prefix> "
        "while streaming; 0 disables heartbeats. A heartbeat's offset is the server's WAL "
        "position once every change before it was handled, so the slot is confirmed past WAL "
        "that holds no change of the captured tables (writes to other tables or databases), "
        "which the slot would otherwise keep.",
    )
    .define(
        "topic.heartbeat.prefix",
        ConfigType.STRING,
        "__debezium-heartbeat",
        importance=Importance.LOW,
        documentation="First part of the heartbeat topic's name "
        "(<topic.heartbeat.prefix>.<topic.prefix>).",
    )
    .define(
        "heartbeat.action.query",
        ConfigType.STRING,
        "",
        importance=Importance.LOW,
        documentation="SQL statement run on the captured database at each heartbeat (e.g. an "
        "UPDATE of a one-row table in the publication), for a database whose captured tables "
        "and server are both idle; empty runs nothing.",
    )
    .define(
        "decimal.handling.mode",
        ConfigType.STRING,
        "precise",
        ValidString.of("precise", "double", "string"),
        Importance.MEDIUM,
        "NUMERIC/DECIMAL columns: precise (Connect Decimal; io.debezium.data.VariableScaleDecimal "
        "for a NUMERIC without a declared scale), double (FLOAT64) or string.",
    )
    .build()
)


def _patterns(text: str, key: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(re.compile(part))
        except re.error as e:
            raise ConfigError(f"not a regular expression: {part!r} ({e})", key, text) from None
    return tuple(out)


@dataclass(frozen=True)
class CdcSettings:
    """The parsed configuration of the connector and its task (immutable)."""

    host: str
    port: int
    user: str
    password: str | None
    dbname: str
    sslmode: str
    topic_prefix: str
    slot_name: str
    publication_name: str
    autocreate_mode: str
    schema_include: tuple[re.Pattern[str], ...]
    schema_exclude: tuple[re.Pattern[str], ...]
    table_include: tuple[re.Pattern[str], ...]
    table_exclude: tuple[re.Pattern[str], ...]
    snapshot: bool
    snapshot_fetch_size: int
    max_batch_size: int
    poll_interval_s: float
    slot_drop_on_stop: bool
    tombstones_on_delete: bool
    decimal_mode: str
    heartbeat_interval_s: float  # 0: no heartbeats
    heartbeat_topic: str
    heartbeat_query: str
    max_retries: int  # -1: no limit
    retry_wait_max_s: float

    def captures(self, schema: str, table: str) -> bool:
        """Whether the include/exclude lists select ``schema.table`` (whole-name matches)."""
        if schema in ("pg_catalog", "information_schema") or schema.startswith("pg_"):
            return False
        if self.schema_include and not any(p.fullmatch(schema) for p in self.schema_include):
            return False
        if any(p.fullmatch(schema) for p in self.schema_exclude):
            return False
        name = f"{schema}.{table}"
        if self.table_include and not any(p.fullmatch(name) for p in self.table_include):
            return False
        return not any(p.fullmatch(name) for p in self.table_exclude)

    def dsn(self, *, replication: bool = False) -> dict[str, Any]:
        """libpq connection keywords (UTC, ISO dates and exact floats in text output)."""
        out: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "dbname": self.dbname,
            "sslmode": self.sslmode,
            "connect_timeout": 10,
            "application_name": f"connectrt-cdc-{self.slot_name}",
            "options": "-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=3 "
            "-c IntervalStyle=iso_8601",
        }
        if self.password is not None:
            out["password"] = self.password
        return out


_SLOT_NAME = re.compile(r"^[a-z0-9_]{1,63}$")


def parse_settings(config: Mapping[str, Any]) -> CdcSettings:
    """Parse and check a raw (string) config; raises :class:`ConfigError`."""
    p = CDC_CONFIG_DEF.parse(config)
    slot = str(p["slot.name"])
    if not _SLOT_NAME.match(slot):
        raise ConfigError(
            "a replication slot name is 1-63 lower-case letters, digits and underscores",
            "slot.name",
            slot,
        )
    password = p.get("database.password")
    return CdcSettings(
        host=str(p["database.hostname"]),
        port=int(p["database.port"]),
        user=str(p["database.user"]),
        password=password.value if isinstance(password, Password) else password,
        dbname=str(p["database.dbname"]),
        sslmode=str(p["database.sslmode"]),
        topic_prefix=str(p["topic.prefix"]),
        slot_name=slot,
        publication_name=str(p["publication.name"]),
        autocreate_mode=str(p["publication.autocreate.mode"]),
        schema_include=_patterns(str(p["schema.include.list"]), "schema.include.list"),
        schema_exclude=_patterns(str(p["schema.exclude.list"]), "schema.exclude.list"),
        table_include=_patterns(str(p["table.include.list"]), "table.include.list"),
        table_exclude=_patterns(str(p["table.exclude.list"]), "table.exclude.list"),
        snapshot=str(p["snapshot.mode"]) == SNAPSHOT_INITIAL,
        snapshot_fetch_size=int(p["snapshot.fetch.size"]),
        max_batch_size=int(p["max.batch.size"]),
        poll_interval_s=int(p["poll.interval.ms"]) / 1000.0,
        slot_drop_on_stop=bool(p["slot.drop.on.stop"]),
        tombstones_on_delete=bool(p["tombstones.on.delete"]),
        decimal_mode=str(p["decimal.handling.mode"]),
        heartbeat_interval_s=int(p["heartbeat.interval.ms"]) / 1000.0,
        heartbeat_topic=f"{p['topic.heartbeat.prefix']}.{p['topic.prefix']}",
        heartbeat_query=str(p["heartbeat.action.query"]).strip(),
        max_retries=int(p["errors.max.retries"]),
        retry_wait_max_s=int(p["retriable.restart.connector.wait.ms"]) / 1000.0,
    )
