"""The vocabulary of JSON Schema differences, as Confluent Schema Registry names them, and the
context a comparison records them in (used by :mod:`json_schema_compat` and
:mod:`json_schema_scalar_diff`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from connectrt.schema_registry.json_schema_model import Node

__all__ = ["COMPATIBLE_CHANGES", "DiffContext", "Difference", "bound", "number_of", "numeric_bound"]

COMPATIBLE_CHANGES: Final = frozenset(
    {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)

Difference = tuple[str, str]


class DiffContext:
    """The differences found so far under one comparison, the JSON path being compared and the
    pairs of schemas on the stack (for cycles). Not thread-safe: one per comparison."""

    def __init__(self, stack: set[tuple[int, int]], path: list[str]) -> None:
        self.found: list[Difference] = []
        self.stack = stack
        self.path = path

    def sub(self) -> DiffContext:
        return DiffContext(self.stack, list(self.path))

    def add(self, kind: str, *extra: str) -> None:
        self.found.append((kind, "#/" + "/".join([*self.path, *extra])))

    def extend(self, found: list[Difference]) -> None:
        self.found.extend(found)

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_CHANGES for kind, _ in self.found)

    @contextmanager
    def enter(self, *names: str) -> Iterator[None]:
        self.path.extend(names)
        try:
            yield
        finally:
            del self.path[len(self.path) - len(names) :]


def bound(
    ctx: DiffContext, keyword: str, old: Any, new: Any, name: str, larger_is: str, smaller_is: str
) -> None:
    """``<NAME>_ADDED``/``_REMOVED`` or ``larger_is``/``smaller_is`` for a numeric keyword."""
    if old == new:
        return
    if old is None:
        ctx.add(f"{name}_ADDED", keyword)
    elif new is None:
        ctx.add(f"{name}_REMOVED", keyword)
    elif new > old:
        ctx.add(f"{name}_{larger_is}", keyword)
    elif new < old:
        ctx.add(f"{name}_{smaller_is}", keyword)


def number_of(node: Node, keyword: str) -> Any:
    """The keyword's value when it is a number (not a bool), else None."""
    value = node.get(keyword)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def numeric_bound(ctx: DiffContext, keyword: str, original: Node, update: Node, name: str) -> None:
    """:func:`bound` for a numeric keyword of both schemas: ``<name>_INCREASED``/``_DECREASED``."""
    bound(ctx, keyword, number_of(original, keyword), number_of(update, keyword), name,
          "INCREASED", "DECREASED")  # fmt: skip
