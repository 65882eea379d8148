"""Checks of the JDBC source config that need the database: do the named columns exist?

:func:`resolve_columns` finds the incrementing and timestamp columns of one table (or query)
among its reflected columns, inferring the incrementing column from a single auto-increment
or integer primary key column when ``incrementing.column.name`` is empty. Problems come back
per config key, so the connector's ``validate()`` can report them on the right field and
``start()`` can raise them together. Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from .config import INCREMENTING_COLUMN_NAME_CONFIG, TIMESTAMP_COLUMN_NAME_CONFIG
from .settings import SourceSettings
from .tables import ColumnInfo

__all__ = ["ResolvedColumns", "resolve_columns"]


@dataclass
class ResolvedColumns:
    incrementing: ColumnInfo | None = None
    timestamps: list[ColumnInfo] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def add(self, key: str, message: str) -> None:
        self.errors.setdefault(key, []).append(message)


def _find(columns: list[ColumnInfo], name: str) -> ColumnInfo | None:
    for col in columns:
        if col.name == name:
            return col
    folded = [c for c in columns if c.name.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def _is_integer(col: ColumnInfo) -> bool:
    t = col.type
    if isinstance(t, sa.Integer):
        return True
    return isinstance(t, sa.Numeric) and not isinstance(t, sa.Float) and (t.scale or 0) == 0


def _infer_incrementing(columns: list[ColumnInfo]) -> ColumnInfo | None:
    auto = [c for c in columns if c.autoincrement and _is_integer(c)]
    if len(auto) == 1:
        return auto[0]
    pk = [c for c in columns if c.primary_key]
    if len(pk) == 1 and _is_integer(pk[0]):
        return pk[0]
    return None


def resolve_columns(
    settings: SourceSettings, columns: list[ColumnInfo], where: str, *, check_nulls: bool = True
) -> ResolvedColumns:
    """The mode's columns in ``columns`` (of ``where``: "table x" / "the query")."""
    out = ResolvedColumns()
    names = ", ".join(c.name for c in columns)
    if settings.uses_incrementing:
        key = INCREMENTING_COLUMN_NAME_CONFIG
        if settings.incrementing_column:
            col = _find(columns, settings.incrementing_column)
            if col is None:
                out.add(
                    key,
                    f"column '{settings.incrementing_column}' not found in {where} "
                    f"(columns: {names})",
                )
            elif not _is_integer(col):
                out.add(key, f"column '{col.name}' of {where} is not an integer column")
            else:
                out.incrementing = col
        else:
            col = _infer_incrementing(columns)
            if col is None:
                out.add(
                    key,
                    f"incrementing.column.name is empty and {where} has no single "
                    "auto-increment or integer primary key column to infer it from",
                )
            else:
                out.incrementing = col
        if (
            check_nulls
            and settings.validate_non_null
            and out.incrementing is not None
            and out.incrementing.nullable
        ):
            out.add(
                key,
                f"column '{out.incrementing.name}' of {where} is nullable (set "
                "validate.non.null=false to allow it)",
            )
    if settings.uses_timestamp:
        key = TIMESTAMP_COLUMN_NAME_CONFIG
        for name in settings.timestamp_columns:
            col = _find(columns, name)
            if col is None:
                out.add(key, f"column '{name}' not found in {where} (columns: {names})")
            elif not isinstance(col.type, sa.DateTime):
                out.add(key, f"column '{col.name}' of {where} is not a TIMESTAMP column")
            else:
                out.timestamps.append(col)
        if (
            check_nulls
            and settings.validate_non_null
            and out.timestamps
            and len(out.timestamps) == len(settings.timestamp_columns)
            and all(c.nullable for c in out.timestamps)
        ):
            out.add(
                key,
                f"timestamp column(s) {', '.join(c.name for c in out.timestamps)} of {where} "
                "are nullable (set validate.non.null=false to allow it)",
            )
    return out
