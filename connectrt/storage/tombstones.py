"""Applying a compacted topic's record to the map it is read into: a value is stored under its
key, a tombstone (None) removes the key. Shared by the config, status and offset stores.

Plain functions over the caller's dicts; the caller holds whatever lock guards them.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["put_or_drop", "put_or_drop_inner"]

K = TypeVar("K")
K2 = TypeVar("K2")
V = TypeVar("V")


def put_or_drop(entries: dict[K, V], key: K, value: V | None) -> None:
    """``entries[key] = value``, or ``key`` dropped when ``value`` is None (a tombstone)."""
    if value is None:
        entries.pop(key, None)
    else:
        entries[key] = value


def put_or_drop_inner(table: dict[K, dict[K2, V]], outer: K, inner: K2, value: V | None) -> None:
    """Set ``table[outer][inner]`` to ``value``, or drop it for None (and ``table[outer]``
    with it once empty)."""
    if value is not None:
        table.setdefault(outer, {})[inner] = value
        return
    row = table.get(outer)
    if row is not None:
        row.pop(inner, None)
        if not row:
            del table[outer]
