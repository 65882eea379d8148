"""Which tables a record goes to, as Apache Iceberg's connector routes them.

* ``iceberg.tables`` without a route field: every record goes to every listed table.
* ``iceberg.tables`` with ``iceberg.tables.route-field``: a table takes the records whose field
  value matches its ``iceberg.table.<table>.route-regex`` entirely (a table without a regex
  takes none).
* ``iceberg.tables.dynamic-enabled``: the field value, lower-cased, is the table name.

A record without the route field (or with a null there) goes nowhere; the task counts it as
consumed. Pure functions; a :class:`Router` is immutable and thread-safe.
"""

from __future__ import annotations

from typing import Any

from connectors.iceberg.config import IcebergSinkConfig
from connectrt.data import Struct

__all__ = ["Router", "field_value"]


def field_value(value: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (names of nested fields) in a Struct or a map; None if absent."""
    for name in path:
        if isinstance(value, Struct):
            if value.schema.field(name) is None:
                return None
            value = value.get(name)
        elif isinstance(value, dict):
            value = value.get(name)
        else:
            return None
    return value


class Router:
    """Routes record values to table names (see the module docstring)."""

    def __init__(self, config: IcebergSinkConfig) -> None:
        self.static_tables = config.tables
        self.dynamic = config.dynamic
        self.path = tuple(config.route_field.split(".")) if config.route_field else None
        self._regexes = [(table, config.table_config(table).route_regex) for table in config.tables]

    @property
    def every_record_everywhere(self) -> bool:
        """True when each record goes to every listed table (no field is read)."""
        return self.path is None and not self.dynamic

    def tables(self, value: Any) -> tuple[str, ...]:
        """The tables ``value`` goes to."""
        if self.path is None:
            return self.static_tables
        routed = field_value(value, self.path)
        if routed is None:
            return ()
        text = str(routed)
        if self.dynamic:
            return (text.lower(),)
        return tuple(
            table for table, regex in self._regexes if regex is not None and regex.fullmatch(text)
        )
