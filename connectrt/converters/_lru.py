"""A small least-recently-used map: the converters' bounded per-schema caches."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["LRU"]


class LRU:
    """A bounded map of non-None values that drops the least recently used entry when full.

    ``maxsize`` 0 disables caching. Not locked: a converter instance is used from one task
    thread. Lookups happen when a record's schema differs from the previous record's, not per
    record.
    """

    __slots__ = ("_data", "_maxsize")

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        """The value stored under ``key`` (now the most recently used), or None."""
        data = self._data
        value = data.get(key)
        if value is not None:
            data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entry if full."""
        if self._maxsize <= 0:
            return
        data = self._data
        data[key] = value
        data.move_to_end(key)
        if len(data) > self._maxsize:
            data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
