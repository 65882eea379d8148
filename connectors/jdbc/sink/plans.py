"""Write plans: how the JDBC sink writes records of one shape, built once and cached.

A plan is made per (topic, key schema or shape, value schema, value shape, operation): the
destination table (created or evolved on the way), the columns and row function, and the
statement (or the table to COPY into). A record that cannot be mapped (a DataError) is cached
as well, so every later record of that shape fails the same way without a new look at the table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.expression import Executable

from connectors.jdbc.sink.config import SinkConfig
from connectors.jdbc.sink.fields import RecordFields, Row, record_fields
from connectors.jdbc.sink.statements import delete_statement, write_statement
from connectors.jdbc.sink.tables import TableManager
from connectrt.api import DataError
from connectrt.data import Schema

__all__ = ["Segment", "WritePlan", "WritePlanner"]


@dataclass(frozen=True, slots=True)
class WritePlan:
    """How records of one shape are written: table, columns/row function, statement (or
    ``copy_into``: the table to COPY the rows into)."""

    table: str
    fields: RecordFields
    statement: Executable | None
    copy_into: sa.Table | None = None


Segment = tuple[WritePlan, list[Row], list[int]]
"""A run of records with the same plan: their rows and their indices in the batch."""


class WritePlanner:
    """The plan of each record shape for one started task (its config, tables and dialect).

    ``zone`` is the zone Timestamp values are converted to (None: bound as they are); ``copy``
    whether inserts go through PostgreSQL's COPY.
    """

    def __init__(
        self,
        config: SinkConfig,
        tables: TableManager,
        dialect: str,
        zone: dt.tzinfo | None,
        copy: bool,
    ) -> None:
        self._config = config
        self._tables = tables
        self._dialect = dialect
        self._zone = zone
        self._copy = copy
        self._plans: dict[tuple[Any, ...], WritePlan | DataError] = {}
        self._table_names: dict[str, str] = {}

    def table_name(self, topic: str) -> str:
        """The destination table of ``topic`` (``table.name.format`` with ``${topic}``)."""
        name = self._table_names.get(topic)
        if name is None:
            name = self._table_names[topic] = self._config.table_name_format.replace(
                "${topic}", topic
            )
        return name

    def plan_for(
        self,
        topic: str,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        delete: bool,
    ) -> WritePlan:
        """The plan for the record of ``topic`` with this key and value (a delete when
        ``delete``); raises DataError when the record cannot be written (a tombstone with
        deletes disabled, a schema the table cannot hold)."""
        cfg = self._config
        shape: Any = tuple(value) if value_schema is None and isinstance(value, dict) else None
        key_shape: Any = None
        if cfg.pk_mode == "record_key":
            if key_schema is not None:
                key_shape = key_schema
            elif isinstance(key, dict):
                key_shape = tuple(key)
            else:
                key_shape = type(key)
        if delete and not cfg.delete_enabled:
            raise DataError(
                "The record has a null value (a tombstone) but delete.enabled=false; "
                "enable deletes (with pk.mode=record_key) or drop tombstones with a Filter"
            )
        cache_key = (topic, key_shape, value_schema, shape, delete)
        cached = self._plans.get(cache_key)
        if isinstance(cached, WritePlan):
            return cached
        if cached is not None:
            raise cached
        table_name = self.table_name(topic)
        try:
            fields = record_fields(cfg, key_schema, key, value_schema, value, delete, self._zone)
            table = self._tables.table_for(table_name, fields)
        except DataError as exc:
            self._plans[cache_key] = exc
            raise
        statement = (
            delete_statement(table, fields)
            if delete
            else write_statement(table, fields, cfg.insert_mode, self._dialect)
        )
        copy_into = table if self._copy and not delete else None
        plan = WritePlan(table_name, fields, statement, copy_into)
        self._plans[cache_key] = plan
        return plan
