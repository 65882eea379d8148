# Why one module over 450 lines: Confluent's JSON Schema diff rules recurse into each other
# (objects, arrays, combined schemas and references call each other), so they are read together.
"""JSON Schema compatibility, by the rules of Confluent Schema Registry.

:func:`differences` compares an ``original`` schema (the writer's) with an ``update`` (the
reader's) and lists each difference as ``(type, path)``; the update can read what the
original admits when every difference is in :data:`COMPATIBLE_CHANGES` (Confluent's strict
set). The differences that decide most evolutions:

* **Content models.** An object schema is *open* when it admits any additional property
  (``additionalProperties`` absent or true), *closed* with ``additionalProperties: false``
  and *partially open* with a schema for them (or ``patternProperties``). A property added to
  a closed model is compatible when optional (or required with a default); added to an open
  model it is not (old data may hold that name with any value), unless its schema is empty.
  A property removed from an open model is compatible; from a closed one it is not; with a
  partially open model, it is when the property's schema is covered by the open part's.
* **Types.** A type change is incompatible except ``integer`` -> ``number`` (widening) and
  between two ``connect.type: bytes`` schemas; a union (``oneOf``/``anyOf``) the original's
  type is one branch of is compatible (extended), and so is a union gaining branches.
* **Constraints.** Relaxed bounds (``maxLength`` raised, ``minimum`` lowered or removed,
  ``pattern`` removed, ``enum`` extended, ...) are compatible; tightened ones are not.
* ``required`` gained (without a default) is incompatible, lost is compatible; title,
  description, ``$id`` and default changes are compatible.

A reference cycle is cut: a pair of schemas already being compared counts as compatible.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from connectrt.schema_registry.json_schema_model import Node

__all__ = ["COMPATIBLE_CHANGES", "differences", "incompatible"]

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


class _Context:
    def __init__(self, stack: set[tuple[int, int]], path: list[str]) -> None:
        self.found: list[Difference] = []
        self.stack = stack
        self.path = path

    def sub(self) -> _Context:
        return _Context(self.stack, list(self.path))

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


def differences(original: Node, update: Node) -> list[Difference]:
    """Every difference from ``original`` to ``update``, as ``(type, JSON path)``."""
    ctx = _Context(set(), [])
    _compare(ctx, original, update)
    return ctx.found


def incompatible(reader: Node, writer: Node) -> list[str]:
    """Why ``reader`` cannot read what ``writer`` admits ([] when it can), worded as
    Confluent's verbose messages."""
    return [
        f"Found incompatible change: Difference{{jsonPath='{path}', type={kind}}}"
        for kind, path in differences(writer, reader)
        if kind not in COMPATIBLE_CHANGES
    ]


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    pair = (id(original), id(update))
    if pair in ctx.stack:
        return  # a cycle: assumed compatible while it is being compared
    ctx.stack.add(pair)
    try:
        _compare_types(ctx, original, update)
    finally:
        ctx.stack.discard(pair)


def _compare_types(ctx: _Context, original: Node, update: Node) -> None:
    if original.kind != "combined" and update.kind == "combined":
        if len(update.subs) == 1:
            sub = ctx.sub()
            _compare(sub, original, update.subs[0])
            if sub.compatible():
                ctx.extend(sub.found)
                return
        elif update.criterion in ("anyOf", "oneOf"):
            for branch in update.subs:
                sub = ctx.sub()
                _compare(sub, original, branch)
                if sub.compatible():
                    ctx.extend(sub.found)
                    ctx.add("SUM_TYPE_EXTENDED")
                    return
    elif original.kind == "combined" and update.kind != "combined":
        if len(original.subs) == 1:
            sub = ctx.sub()
            _compare(sub, original.subs[0], update)
            if sub.compatible():
                ctx.extend(sub.found)
                return
        elif original.criterion == "allOf":
            for branch in original.subs:
                sub = ctx.sub()
                _compare(sub, branch, update)
                if sub.compatible():
                    ctx.extend(sub.found)
                    ctx.add("PRODUCT_TYPE_NARROWED")
                    return

    if original.kind != update.kind:
        if original.kind == "false" or update.kind == "empty":
            return
        if original.get("connect.type") == "bytes" == update.get("connect.type"):
            return  # Confluent lets two connect.type bytes schemas stand for each other
        ctx.add("TYPE_CHANGED")
        return

    for keyword, kind in (
        ("$id", "ID_CHANGED"),
        ("title", "TITLE_CHANGED"),
        ("description", "DESCRIPTION_CHANGED"),
        ("default", "DEFAULT_CHANGED"),
    ):
        if original.get(keyword) != update.get(keyword):
            ctx.add(kind)

    kind = original.kind
    if kind == "string":
        _compare_string(ctx, original, update)
    elif kind == "number":
        _compare_number(ctx, original, update)
    elif kind in ("enum", "const"):
        _compare_enum(ctx, original, update)
    elif kind == "combined":
        _compare_combined(ctx, original, update)
    elif kind == "not":
        _compare_not(ctx, original, update)
    elif kind == "object":
        _compare_object(ctx, original, update)
    elif kind == "array":
        _compare_array(ctx, original, update)


def _bound(
    ctx: _Context, keyword: str, old: Any, new: Any, name: str, larger_is: str, smaller_is: str
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


def _num(node: Node, keyword: str) -> Any:
    value = node.get(keyword)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _compare_string(ctx: _Context, original: Node, update: Node) -> None:
    _bound(ctx, "maxLength", _num(original, "maxLength"), _num(update, "maxLength"),
           "MAX_LENGTH", "INCREASED", "DECREASED")  # fmt: skip
    _bound(ctx, "minLength", _num(original, "minLength"), _num(update, "minLength"),
           "MIN_LENGTH", "INCREASED", "DECREASED")  # fmt: skip
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
        return _num(node, keyword.replace("exclusiveM", "m"))
    return _num(node, keyword)


def _compare_number(ctx: _Context, original: Node, update: Node) -> None:
    _bound(ctx, "maximum", _num(original, "maximum"), _num(update, "maximum"),
           "MAXIMUM", "INCREASED", "DECREASED")  # fmt: skip
    _bound(ctx, "minimum", _num(original, "minimum"), _num(update, "minimum"),
           "MINIMUM", "INCREASED", "DECREASED")  # fmt: skip
    _bound(ctx, "exclusiveMaximum", _exclusive(original, "exclusiveMaximum"),
           _exclusive(update, "exclusiveMaximum"), "EXCLUSIVE_MAXIMUM", "INCREASED",
           "DECREASED")  # fmt: skip
    _bound(ctx, "exclusiveMinimum", _exclusive(original, "exclusiveMinimum"),
           _exclusive(update, "exclusiveMinimum"), "EXCLUSIVE_MINIMUM", "INCREASED",
           "DECREASED")  # fmt: skip
    old, new = _num(original, "multipleOf"), _num(update, "multipleOf")
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


def _compare_enum(ctx: _Context, original: Node, update: Node) -> None:
    old, new = original.values, update.values
    if old == new:
        return
    if all(v in new for v in old):
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif all(v in old for v in new):
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _compare_not(ctx: _Context, original: Node, update: Node) -> None:
    # not(A) -> not(B) is compatible when B can read... the other way round.
    sub = ctx.sub()
    _compare(sub, update.not_schema, original.not_schema)
    if not sub.compatible():
        ctx.add("NOT_TYPE_EXTENDED")
    elif sub.found:
        ctx.add("NOT_TYPE_NARROWED")


def _compare_combined(ctx: _Context, original: Node, update: Node) -> None:
    old_c, new_c = original.criterion, update.criterion
    if old_c != new_c:
        if (
            new_c == "anyOf"
            or (len(original.subs) == 1 and len(update.subs) == 1)
            or (len(original.subs) == 1 and new_c == "oneOf")
            or (len(update.subs) == 1 and old_c == "allOf")
        ):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    olds = list({n.key: n for n in original.subs}.values())
    news = list({n.key: n for n in update.subs}.values())
    if len(olds) < len(news):
        ctx.add("PRODUCT_TYPE_EXTENDED" if new_c == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(olds) > len(news):
        ctx.add("PRODUCT_TYPE_NARROWED" if old_c == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[int, dict[int, list[Difference]]] = {}
    for i, old in enumerate(olds):
        with ctx.enter(old_c, str(i)):
            for j, new in enumerate(news):
                sub = ctx.sub()
                _compare(sub, old, new)
                if sub.compatible():
                    edges.setdefault(i, {})[j] = sub.found
    matching = _max_matching(edges)
    for i, j in matching.items():
        ctx.extend(edges[i][j])
    if len(matching) < min(len(olds), len(news)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _max_matching(edges: dict[int, dict[int, Any]]) -> dict[int, int]:
    """A maximum bipartite matching (left -> right) by augmenting paths."""
    owner: dict[int, int] = {}

    def augment(left: int, seen: set[int]) -> bool:
        for right in edges.get(left, {}):
            if right in seen:
                continue
            seen.add(right)
            if right not in owner or augment(owner[right], seen):
                owner[right] = left
                return True
        return False

    for left in sorted(edges):
        augment(left, set())
    return {left: right for right, left in owner.items()}


def _is_open(node: Node) -> bool:
    return node.additional and node.additional_schema is None and not node.pattern_properties


def _partial(node: Node, name: str) -> Node | None:
    import re

    for pattern, schema in node.pattern_properties.items():
        if re.search(pattern, name):
            return schema
    return node.additional_schema


def _compare_object(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("required"):
        for name in original.properties:
            if name in update.properties:
                was, now = name in original.required, name in update.required
                if was and not now:
                    ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
                elif now and not was:
                    with_default = update.properties[name].has_default()
                    ctx.add(
                        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                        if with_default
                        else "REQUIRED_ATTRIBUTE_ADDED",
                        name,
                    )
    with ctx.enter("properties"):
        names = list(original.properties) + [
            n for n in update.properties if n not in original.properties
        ]
        for name in names:
            with ctx.enter(name):
                _compare_property(ctx, original, update, name)
    with ctx.enter("additionalProperties"):
        if original.additional != update.additional:
            ctx.add("ADDITIONAL_PROPERTIES_ADDED" if update.additional
                    else "ADDITIONAL_PROPERTIES_REMOVED")  # fmt: skip
        elif original.additional_schema is None and update.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif update.additional_schema is None and original.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_EXTENDED")
        else:
            _compare(ctx, original.additional_schema, update.additional_schema)
    _bound(ctx, "maxProperties", _num(original, "maxProperties"), _num(update, "maxProperties"),
           "MAX_PROPERTIES", "INCREASED", "DECREASED")  # fmt: skip
    _bound(ctx, "minProperties", _num(original, "minProperties"), _num(update, "minProperties"),
           "MIN_PROPERTIES", "INCREASED", "DECREASED")  # fmt: skip


def _compare_property(ctx: _Context, original: Node, update: Node, name: str) -> None:
    old = original.properties.get(name)
    new = update.properties.get(name)
    if new is None:
        assert old is not None
        if _is_open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial(update, name)
        if partial is not None:
            sub = ctx.sub()
            _compare(sub, old, partial)
            ctx.extend(sub.found)
            ctx.add(
                "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                if sub.compatible()
                else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            )
        elif old.kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        return
    if old is None:
        required = name in update.required
        if _is_open(original):
            if new.kind == "empty":
                ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            elif required:
                ctx.add(
                    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
                    if new.has_default()
                    else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                )
            else:
                ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        partial = _partial(original, name)
        if partial is not None:
            sub = ctx.sub()
            _compare(sub, partial, new)
            ctx.extend(sub.found)
            ctx.add(
                "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                if sub.compatible()
                else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            )
        if required:
            ctx.add(
                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                if new.has_default()
                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            )
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        return
    _compare(ctx, old, new)


def _array_open(node: Node) -> bool:
    return node.additional_items and node.additional_items_schema is None


def _compare_array(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("items"):
        _compare(ctx, original.items, update.items)
    olds, news = original.item_list, update.item_list
    for i in range(max(len(olds), len(news))):
        with ctx.enter("items", str(i)):
            if i < len(olds) and i < len(news):
                _compare(ctx, olds[i], news[i])
            elif i < len(olds):
                if _array_open(update):
                    ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
                elif update.additional_items_schema is not None:
                    sub = ctx.sub()
                    _compare(sub, olds[i], update.additional_items_schema)
                    ctx.extend(sub.found)
                    ctx.add(
                        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                        if sub.compatible()
                        else "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                    )
                elif olds[i].kind == "false":
                    ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
                else:
                    ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
            elif _array_open(original):
                ctx.add(
                    "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                    if news[i].kind == "empty"
                    else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
                )
            elif original.additional_items_schema is not None:
                sub = ctx.sub()
                _compare(sub, original.additional_items_schema, news[i])
                ctx.extend(sub.found)
                ctx.add(
                    "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                    if sub.compatible()
                    else "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                )
            else:
                ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    with ctx.enter("additionalItems"):
        if original.additional_items != update.additional_items:
            ctx.add("ADDITIONAL_ITEMS_REMOVED" if original.additional_items
                    else "ADDITIONAL_ITEMS_ADDED")  # fmt: skip
        elif original.additional_items_schema is None and update.additional_items_schema:
            ctx.add("ADDITIONAL_ITEMS_NARROWED")
        elif update.additional_items_schema is None and original.additional_items_schema:
            ctx.add("ADDITIONAL_ITEMS_EXTENDED")
        else:
            _compare(ctx, original.additional_items_schema, update.additional_items_schema)
    _bound(ctx, "maxItems", _num(original, "maxItems"), _num(update, "maxItems"),
           "MAX_ITEMS", "INCREASED", "DECREASED")  # fmt: skip
    _bound(ctx, "minItems", _num(original, "minItems"), _num(update, "minItems"),
           "MIN_ITEMS", "INCREASED", "DECREASED")  # fmt: skip
    old_unique, new_unique = bool(original.get("uniqueItems")), bool(update.get("uniqueItems"))
    if old_unique != new_unique:
        ctx.add("UNIQUE_ITEMS_REMOVED" if old_unique else "UNIQUE_ITEMS_ADDED", "uniqueItems")
