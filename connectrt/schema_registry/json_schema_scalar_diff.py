"""JSON Schema differences of the leaf keywords, by Confluent Schema Registry's rules: string
lengths and patterns, numeric bounds and ``multipleOf``, ``enum``/``const`` values. None of these
recurse into subschemas (the structural rules are in :mod:`json_schema_compat`)."""

from __future__ import annotations

from typing import Any

from connectrt.schema_registry.json_schema_differences import (
    DiffContext,
    bound,
    number_of,
    numeric_bound,
)
from connectrt.schema_registry.json_schema_model import Node

__all__ = ["compare_enum", "compare_number", "compare_string"]


def compare_string(ctx: DiffContext, original: Node, update: Node) -> None:
    numeric_bound(ctx, "maxLength", original, update, "MAX_LENGTH")
    numeric_bound(ctx, "minLength", original, update, "MIN_LENGTH")
    old, new = original.get("pattern"), update.get("pattern")
    if old is None and new is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif old is not None and new is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif old != new:
        ctx.add("PATTERN_CHANGED", "pattern")


def _exclusive(node: Node, keyword: str) -> Any:
    """draft-07's numeric ``exclusiveMaximum``/``exclusiveMinimum`` (draft-04's boolean
    form makes ``maximum``/``minimum`` exclusive)."""
    value = node.get(keyword)
    if value is True:
        return number_of(node, keyword.replace("exclusiveM", "m"))
    return number_of(node, keyword)


def compare_number(ctx: DiffContext, original: Node, update: Node) -> None:
    numeric_bound(ctx, "maximum", original, update, "MAXIMUM")
    numeric_bound(ctx, "minimum", original, update, "MINIMUM")
    bound(ctx, "exclusiveMaximum", _exclusive(original, "exclusiveMaximum"),
           _exclusive(update, "exclusiveMaximum"), "EXCLUSIVE_MAXIMUM", "INCREASED",
           "DECREASED")  # fmt: skip
    bound(ctx, "exclusiveMinimum", _exclusive(original, "exclusiveMinimum"),
           _exclusive(update, "exclusiveMinimum"), "EXCLUSIVE_MINIMUM", "INCREASED",
           "DECREASED")  # fmt: skip
    old, new = number_of(original, "multipleOf"), number_of(update, "multipleOf")
    if old != new:
        if old is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif new is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif old != 0 and _divides(old, new):
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif new != 0 and _divides(new, old):
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.integer != update.integer:
        ctx.add("TYPE_EXTENDED" if original.integer else "TYPE_NARROWED")


def _divides(divisor: float, value: float) -> bool:
    from decimal import Decimal

    return Decimal(str(value)) % Decimal(str(divisor)) == 0


def compare_enum(ctx: DiffContext, original: Node, update: Node) -> None:
    old, new = original.values, update.values
    if old == new:
        return
    if all(v in new for v in old):
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif all(v in old for v in new):
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")
