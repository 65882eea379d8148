"""Debezium's change event envelope: key, value (before/after/source/op/ts_ms) and schemas.

:class:`TableEvents` holds, for one table as of one column layout, the key schema (the primary
key columns; no key for a table without one), the row schema ``<prefix>.<schema>.<table>.Value``
and the envelope ``<prefix>.<schema>.<table>.Envelope``, and builds the records of one change.
A new column layout (a column added or dropped, announced by a pgoutput Relation message) gets
a new :class:`TableEvents`. :class:`SourceInfo` is the ``source`` block
(``io.debezium.connector.postgresql.Source``). Immutable after construction apart from the
struct values it returns; used on the task's thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectrt.api import ConnectError, SourceRecord
from connectrt.data import Schema, SchemaBuilder, Struct

from .catalog import TableInfo
from .columns import UNAVAILABLE, ColumnType, column_type, unsupported_kind
from .pgoutput import UNCHANGED

__all__ = [
    "CONNECTOR_VERSION",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "SOURCE_SCHEMA",
    "SourceInfo",
    "TableEvents",
    "heartbeat_record",
]

CONNECTOR_VERSION = "0.1.0-connectrt"

_SNAPSHOT_VALUES = (
    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
)

SOURCE_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.Source")
    .version(1)
    .field("version", SchemaBuilder.string().build())
    .field("connector", SchemaBuilder.string().build())
    .field("name", SchemaBuilder.string().build())
    .field("ts_ms", SchemaBuilder.int64().build())
    .field(
        "snapshot",
        SchemaBuilder.string()
        .optional()
        .name("io.debezium.data.Enum")
        .version(1)
        .parameter("allowed", _SNAPSHOT_VALUES)
        .default_value("false")
        .build(),
    )
    .field("db", SchemaBuilder.string().build())
    .field("sequence", SchemaBuilder.string().optional().build())
    .field("ts_us", SchemaBuilder.int64().optional().build())
    .field("ts_ns", SchemaBuilder.int64().optional().build())
    .field("schema", SchemaBuilder.string().build())
    .field("table", SchemaBuilder.string().build())
    .field("txId", SchemaBuilder.int64().optional().build())
    .field("lsn", SchemaBuilder.int64().optional().build())
    .field("xmin", SchemaBuilder.int64().optional().build())
    .field("origin", SchemaBuilder.string().optional().build())
    .field("origin_lsn", SchemaBuilder.int64().optional().build())
    .build()
)

_TRANSACTION_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .optional()
    .name("event.block")
    .version(1)
    .field("id", SchemaBuilder.string().build())
    .field("total_order", SchemaBuilder.int64().build())
    .field("data_collection_order", SchemaBuilder.int64().build())
    .build()
)


HEARTBEAT_KEY_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.ServerNameKey")
    .field("serverName", SchemaBuilder.string().build())
    .build()
)

HEARTBEAT_VALUE_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.Heartbeat")
    .field("ts_ms", SchemaBuilder.int64().build())
    .build()
)


def heartbeat_record(
    topic: str, server: str, partition: Mapping[str, Any], offset: Mapping[str, Any]
) -> SourceRecord:
    """Debezium's heartbeat: key ``{serverName}``, value ``{ts_ms}``, carrying ``offset``."""
    key = Struct(HEARTBEAT_KEY_SCHEMA).put("serverName", server)
    value = Struct(HEARTBEAT_VALUE_SCHEMA).put("ts_ms", time.time_ns() // 1_000_000)
    return SourceRecord(
        partition, offset, topic, None, HEARTBEAT_KEY_SCHEMA, key, HEARTBEAT_VALUE_SCHEMA, value
    )


@dataclass(frozen=True)
class SourceInfo:
    """Where an event comes from: the fields of the ``source`` block that vary per event."""

    ts_us: int  # commit time (streaming) or snapshot time, unix microseconds
    snapshot: str  # "false" while streaming; true/first/last/... in the snapshot
    tx_id: int | None
    lsn: int | None
    last_commit_lsn: int | None  # for ``sequence``


class TableEvents:
    """The schemas of one table's events and the records of its changes."""

    def __init__(
        self,
        prefix: str,
        dbname: str,
        table: TableInfo,
        decimal_mode: str,
        *,
        tombstones: bool,
    ) -> None:
        self.table = table
        self.topic = f"{prefix}.{table.schema}.{table.table}"
        self._prefix = prefix
        self._dbname = dbname
        self._tombstones = tombstones
        for c in table.columns:
            kind = unsupported_kind(c)
            if kind is not None:
                raise ConnectError(
                    f"column '{c.name}' of table {table.schema}.{table.table} has the {kind} "
                    f"'{c.type_name}', which has no Connect representation: leave the table "
                    f"out (add {table.schema}.{table.table} to table.exclude.list) or change "
                    "the column's type (e.g. to jsonb or text)"
                )
        self.types: list[ColumnType] = [column_type(c, decimal_mode) for c in table.columns]
        self.names = [c.name for c in table.columns]
        row = SchemaBuilder.struct().name(f"{self.topic}.Value")
        for name, ct in zip(self.names, self.types, strict=True):
            row = row.field(name, ct.schema)
        self.row_schema = row.build()
        self._optional_row = row.optional().build()
        self._key_positions = [self.names.index(k) for k in table.key if k in self.names]
        if self._key_positions:
            key = SchemaBuilder.struct().name(f"{self.topic}.Key")
            for i in self._key_positions:
                key = key.field(self.names[i], self.types[i].schema)
            self.key_schema: Schema | None = key.build()
        else:
            self.key_schema = None
        self.value_schema = (
            SchemaBuilder.struct()
            .name(f"{self.topic}.Envelope")
            .version(2)
            .field("before", self._optional_row)
            .field("after", self._optional_row)
            .field("source", SOURCE_SCHEMA)
            .field("transaction", _TRANSACTION_SCHEMA)
            .field("op", SchemaBuilder.string().build())
            .field("ts_ms", SchemaBuilder.int64().optional().build())
            .field("ts_us", SchemaBuilder.int64().optional().build())
            .field("ts_ns", SchemaBuilder.int64().optional().build())
            .build()
        )

    # -- values --------------------------------------------------------------------------
    def row(self, texts: Sequence[Any]) -> list[Any]:
        """Connect values of one row from its text values (None, text or UNCHANGED)."""
        out: list[Any] = []
        for text, ct in zip(texts, self.types, strict=True):
            if text is None:
                out.append(None if ct.schema.optional else ct.fallback)
            elif text is UNCHANGED:
                out.append(_unavailable(ct))
            else:
                out.append(ct.parse(text))
        return out

    def key_only_row(self, texts: Sequence[Any]) -> list[Any]:
        """A row of which only the key columns were sent (REPLICA IDENTITY DEFAULT): the
        others are null, or their zero value when required (as Debezium does)."""
        return self.row(texts)

    def _struct(self, values: Sequence[Any] | None) -> Struct | None:
        if values is None:
            return None
        struct = Struct(self._optional_row)
        for name, value in zip(self.names, values, strict=True):
            struct.put(name, value)
        return struct

    def _key(self, values: Sequence[Any] | None) -> Struct | None:
        if self.key_schema is None or values is None:
            return None
        key = Struct(self.key_schema)
        for i in self._key_positions:
            key.put(self.names[i], values[i])
        return key

    def _source(self, info: SourceInfo) -> Struct:
        sequence = json.dumps(
            [
                None if info.last_commit_lsn is None else str(info.last_commit_lsn),
                None if info.lsn is None else str(info.lsn),
            ],
            separators=(",", ":"),  # as Debezium writes it
        )
        return (
            Struct(SOURCE_SCHEMA)
            .put("version", CONNECTOR_VERSION)
            .put("connector", "postgresql")
            .put("name", self._prefix)
            .put("ts_ms", info.ts_us // 1000)
            .put("snapshot", info.snapshot)
            .put("db", self._dbname)
            .put("sequence", sequence)
            .put("ts_us", info.ts_us)
            .put("ts_ns", info.ts_us * 1000)
            .put("schema", self.table.schema)
            .put("table", self.table.table)
            .put("txId", info.tx_id)
            .put("lsn", info.lsn)
        )

    def records(
        self,
        op: str,
        before: Sequence[Any] | None,
        after: Sequence[Any] | None,
        info: SourceInfo,
        partition: Mapping[str, Any],
        offsets: Sequence[Mapping[str, Any]],
    ) -> list[SourceRecord]:
        """The records of one change: the event, and for a delete its tombstone when enabled.
        ``offsets`` gives one source offset per record (two for a delete with tombstones)."""
        now_ns = time.time_ns()
        value = (
            Struct(self.value_schema)
            .put("before", self._struct(before))
            .put("after", self._struct(after))
            .put("source", self._source(info))
            .put("op", op)
            .put("ts_ms", now_ns // 1_000_000)
            .put("ts_us", now_ns // 1000)
            .put("ts_ns", now_ns)
        )
        key = self._key(after if after is not None else before)
        key_schema = self.key_schema if key is not None else None
        out = [
            SourceRecord(
                partition, offsets[0], self.topic, None, key_schema, key, self.value_schema, value
            )
        ]
        if op == "d" and self._tombstones and len(offsets) > 1:
            out.append(
                SourceRecord(partition, offsets[1], self.topic, None, key_schema, key, None, None)
            )
        return out

    def key_of(self, row: Sequence[Any]) -> list[Any]:
        """The primary key values of a row (empty for a table without a key)."""
        return [row[i] for i in self._key_positions]

    def records_per_change(self, op: str) -> int:
        return 2 if op == "d" and self._tombstones else 1


def _unavailable(ct: ColumnType) -> Any:
    if ct.schema.type.name == "STRING":
        return UNAVAILABLE
    if ct.schema.type.name == "BYTES" and ct.schema.name is None:
        return UNAVAILABLE.encode()
    return None if ct.schema.optional else ct.fallback
