"""Partition specs of auto-created tables: ``iceberg.tables.default-partition-by`` and
``iceberg.table.<table>.partition-by``, in Apache Iceberg's connector's syntax.

A value is a comma-separated list of terms (commas inside parentheses do not split):

* ``col``: identity partitioning on the column (a dotted path reaches a nested field);
* ``year(col)``, ``month(col)``, ``day(col)``, ``hour(col)`` (or ``years`` ... ``hours``): time
  transforms of a date or timestamp column;
* ``bucket(col, N)``: N hash buckets; ``truncate(col, W)``: values truncated to width W. The
  argument order of Spark SQL (``bucket(N, col)``) is accepted too.

:func:`parse_partition_by` checks the syntax (the connector's ``validate`` reports its errors
per key); :func:`add_partition_fields` checks each term against the new table's schema and adds
it to the spec of the table being created, naming the fields as Iceberg's Java builder does
(``col``, ``col_day``, ``col_bucket``, ``col_trunc``...). Only auto-created tables get a spec: an
existing table keeps its own. Pure functions; thread-safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)

from connectrt.api import ConnectError

__all__ = ["PartitionTerm", "add_partition_fields", "parse_partition_by"]

_CALL = re.compile(r"^(\w+)\s*\((.*)\)$")
# Iceberg's spellings, singular and plural, of the time transforms.
_TIME = {
    spelling: unit for unit in ("year", "month", "day", "hour") for spelling in (unit, unit + "s")
}
_WIDTH = {"bucket": "bucket", "truncate": "trunc"}


@dataclass(frozen=True, slots=True)
class PartitionTerm:
    """One partition field: its source ``column``, ``transform`` (``identity``, ``year``,
    ``month``, ``day``, ``hour``, ``bucket``, ``truncate``) and ``width`` (bucket count or
    truncation width; None for the others)."""

    column: str
    transform: str
    width: int | None = None

    @property
    def field_name(self) -> str:
        """The partition field's name, as Iceberg's Java spec builder names it."""
        if self.transform == "identity":
            return self.column
        return f"{self.column}_{_WIDTH.get(self.transform, self.transform)}"

    def iceberg_transform(self) -> Transform[Any, Any]:
        if self.transform == "bucket":
            return BucketTransform(self.width or 0)
        if self.transform == "truncate":
            return TruncateTransform(self.width or 0)
        return {
            "identity": IdentityTransform(),
            "year": YearTransform(),
            "month": MonthTransform(),
            "day": DayTransform(),
            "hour": HourTransform(),
        }[self.transform]

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        if self.width is not None:
            return f"{self.transform}({self.column}, {self.width})"
        return f"{self.transform}({self.column})"


def _split(text: str) -> list[str]:
    """Split on the commas that are not inside parentheses."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    terms.append("".join(current))
    return [t.strip() for t in terms if t.strip()]


def _width_args(name: str, args: str) -> PartitionTerm:
    parts = [p.strip() for p in args.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"{name}(...) takes a column and a number, as {name}(id, 16)")
    column, number = parts
    if column.isdigit() and not number.isdigit():  # Spark SQL's order: bucket(16, id)
        column, number = number, column
    if not number.isdigit() or int(number) < 1:
        raise ValueError(f"{name}({args}): the number must be a positive integer")
    return PartitionTerm(column, name, int(number))


def parse_partition_by(text: str | None) -> tuple[PartitionTerm, ...]:
    """The terms of a partition-by value (empty for None or blank); ValueError saying what is
    wrong with a term otherwise."""
    if text is None:
        return ()
    if text.count("(") != text.count(")"):
        raise ValueError(f"unbalanced parentheses in '{text}'")
    terms: list[PartitionTerm] = []
    for raw in _split(text):
        call = _CALL.match(raw)
        if call is None:
            if not re.fullmatch(r"[^\s(),]+", raw):
                raise ValueError(f"'{raw}' is neither a column nor transform(column)")
            terms.append(PartitionTerm(raw, "identity"))
            continue
        name, args = call.group(1).lower(), call.group(2).strip()
        if name in _TIME:
            if not args or "," in args:
                raise ValueError(f"{name}(...) takes one column, as {name}(ts)")
            terms.append(PartitionTerm(args, _TIME[name]))
        elif name in _WIDTH:
            terms.append(_width_args(name, args))
        else:
            raise ValueError(
                f"unknown transform '{name}' (year, month, day, hour, bucket, truncate, or a "
                "plain column for identity)"
            )
    names = [t.field_name for t in terms]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"partition field(s) {duplicates} given twice")
    return tuple(terms)


def add_partition_fields(
    update: Any, schema: Any, terms: tuple[PartitionTerm, ...], table: str, key: str
) -> None:
    """Add ``terms`` to ``update`` (a pyiceberg ``UpdateSpec`` of the table being created),
    each checked against ``schema`` (its pyiceberg Schema). ConnectError naming ``key``, the
    table and the term when a column is missing or its type cannot take the transform."""
    for term in terms:
        try:
            field = schema.find_field(term.column)
        except ValueError:
            columns = ", ".join(schema.column_names)
            raise ConnectError(
                f"{key}: cannot partition new table {table} by {term}: it has no column "
                f"'{term.column}' (its columns, from the first record: {columns})"
            ) from None
        transform = term.iceberg_transform()
        if not transform.can_transform(field.field_type):
            raise ConnectError(
                f"{key}: cannot partition new table {table} by {term}: column "
                f"'{term.column}' is {field.field_type}, which {term.transform} does not take"
            )
        update.add_field(term.column, transform, term.field_name)
