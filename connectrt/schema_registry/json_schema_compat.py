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

from typing import Any

from connectrt.schema_registry.json_schema_differences import (
    COMPATIBLE_CHANGES,
    DiffContext,
    Difference,
    numeric_bound,
)
from connectrt.schema_registry.json_schema_model import Node
from connectrt.schema_registry.json_schema_scalar_diff import (
    compare_enum,
    compare_number,
    compare_string,
)

__all__ = ["COMPATIBLE_CHANGES", "differences", "incompatible"]


def differences(original: Node, update: Node) -> list[Difference]:
    """Every difference from ``original`` to ``update``, as ``(type, JSON path)``."""
    ctx = DiffContext(set(), [])
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


def _compare(ctx: DiffContext, original: Node | None, update: Node | None) -> None:
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


def _adopt_if_compatible(
    ctx: DiffContext, original: Node, update: Node, change: str | None = None
) -> bool:
    """Compare ``original`` with ``update`` aside; when every difference is compatible, record
    them (and ``change``, when given) in ``ctx`` and return True, else record nothing."""
    sub = ctx.sub()
    _compare(sub, original, update)
    if not sub.compatible():
        return False
    ctx.extend(sub.found)
    if change is not None:
        ctx.add(change)
    return True


def _matches_combined(ctx: DiffContext, original: Node, update: Node) -> bool:
    """Whether one side is a combined schema the other side matches compatibly: its only
    subschema, a branch of the update's anyOf/oneOf (``SUM_TYPE_EXTENDED``) or of the
    original's allOf (``PRODUCT_TYPE_NARROWED``); the match's differences are then recorded."""
    if original.kind != "combined" and update.kind == "combined":
        if len(update.subs) == 1:
            return _adopt_if_compatible(ctx, original, update.subs[0])
        if update.criterion in ("anyOf", "oneOf"):
            extended = "SUM_TYPE_EXTENDED"
            return any(_adopt_if_compatible(ctx, original, b, extended) for b in update.subs)
    elif original.kind == "combined" and update.kind != "combined":
        if len(original.subs) == 1:
            return _adopt_if_compatible(ctx, original.subs[0], update)
        if original.criterion == "allOf":
            narrowed = "PRODUCT_TYPE_NARROWED"
            return any(_adopt_if_compatible(ctx, b, update, narrowed) for b in original.subs)
    return False


def _compare_types(ctx: DiffContext, original: Node, update: Node) -> None:
    if _matches_combined(ctx, original, update):
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
        compare_string(ctx, original, update)
    elif kind == "number":
        compare_number(ctx, original, update)
    elif kind in ("enum", "const"):
        compare_enum(ctx, original, update)
    elif kind == "combined":
        _compare_combined(ctx, original, update)
    elif kind == "not":
        _compare_not(ctx, original, update)
    elif kind == "object":
        _compare_object(ctx, original, update)
    elif kind == "array":
        _compare_array(ctx, original, update)


def _compare_not(ctx: DiffContext, original: Node, update: Node) -> None:
    # not(A) -> not(B) is compatible when B can read... the other way round.
    sub = ctx.sub()
    _compare(sub, update.not_schema, original.not_schema)
    if not sub.compatible():
        ctx.add("NOT_TYPE_EXTENDED")
    elif sub.found:
        ctx.add("NOT_TYPE_NARROWED")


def _compare_combined(ctx: DiffContext, original: Node, update: Node) -> None:
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


def _compare_object(ctx: DiffContext, original: Node, update: Node) -> None:
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
        _compare_additional(ctx, "ADDITIONAL_PROPERTIES", original.additional,
                            update.additional, original.additional_schema,
                            update.additional_schema)  # fmt: skip
    numeric_bound(ctx, "maxProperties", original, update, "MAX_PROPERTIES")
    numeric_bound(ctx, "minProperties", original, update, "MIN_PROPERTIES")


def _compare_additional(
    ctx: DiffContext,
    change: str,
    old_allowed: bool,
    new_allowed: bool,
    old_schema: Node | None,
    new_schema: Node | None,
) -> None:
    """``additionalProperties`` or ``additionalItems`` (``change``: ``ADDITIONAL_PROPERTIES``
    or ``ADDITIONAL_ITEMS``): ``{change}_ADDED``/``_REMOVED`` when one side allows more and the
    other none, ``_NARROWED``/``_EXTENDED`` when only one side restricts them by a schema,
    else the two schemas compared."""
    if old_allowed != new_allowed:
        ctx.add(f"{change}_ADDED" if new_allowed else f"{change}_REMOVED")
    elif old_schema is None and new_schema is not None:
        ctx.add(f"{change}_NARROWED")
    elif new_schema is None and old_schema is not None:
        ctx.add(f"{change}_EXTENDED")
    else:
        _compare(ctx, old_schema, new_schema)


def _compare_covered(ctx: DiffContext, original: Node, update: Node, change: str) -> None:
    """Compare a property or item that one side has with the schema the other side's partially
    open content model gives it (``change``: ``PROPERTY_ADDED``, ``PROPERTY_REMOVED``,
    ``ITEM_ADDED`` or ``ITEM_REMOVED``): the differences found, then
    ``{change}_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL`` when they are all compatible, else
    ``{change}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL``."""
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.extend(sub.found)
    coverage = "IS_COVERED" if sub.compatible() else "NOT_COVERED"
    ctx.add(f"{change}_{coverage}_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _compare_property(ctx: DiffContext, original: Node, update: Node, name: str) -> None:
    old = original.properties.get(name)
    new = update.properties.get(name)
    if new is None:
        assert old is not None
        if _is_open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial(update, name)
        if partial is not None:
            _compare_covered(ctx, old, partial, "PROPERTY_REMOVED")
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
            _compare_covered(ctx, partial, new, "PROPERTY_ADDED")
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


def _compare_array(ctx: DiffContext, original: Node, update: Node) -> None:
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
                    _compare_covered(ctx, olds[i], update.additional_items_schema, "ITEM_REMOVED")
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
                _compare_covered(ctx, original.additional_items_schema, news[i], "ITEM_ADDED")
            else:
                ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    with ctx.enter("additionalItems"):
        _compare_additional(ctx, "ADDITIONAL_ITEMS", original.additional_items,
                            update.additional_items, original.additional_items_schema,
                            update.additional_items_schema)  # fmt: skip
    numeric_bound(ctx, "maxItems", original, update, "MAX_ITEMS")
    numeric_bound(ctx, "minItems", original, update, "MIN_ITEMS")
    old_unique, new_unique = bool(original.get("uniqueItems")), bool(update.get("uniqueItems"))
    if old_unique != new_unique:
        ctx.add("UNIQUE_ITEMS_REMOVED" if old_unique else "UNIQUE_ITEMS_ADDED", "uniqueItems")
