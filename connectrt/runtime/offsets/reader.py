"""The OffsetStorageReader given to source connectors and tasks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from connectrt.api.task import OffsetStorageReader
from connectrt.storage.offset_codec import decode_value, encode_key
from connectrt.storage.offsets import OffsetStore

__all__ = ["OffsetStorageReaderImpl"]


class OffsetStorageReaderImpl(OffsetStorageReader):
    """Reads one connector's committed offsets from an :class:`OffsetStore` (thread-safe)."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        keys = [encode_key(self._connector, p) for p in partitions]
        found = self._store.get(keys)
        return [decode_value(found.get(k)) for k in keys]
