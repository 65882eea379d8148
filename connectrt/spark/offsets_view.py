"""The driver's view of source offsets that tasks on executors commit.

Executors commit source offsets to the offsets topic through offset stores of their own, so
the driver's store (read at start) would not see them. :class:`FreshOffsetStore` reads the
topic to its end before answering ``all()`` and ``get()`` (what ``GET
/connectors/{name}/offsets`` and KIP-875 resets use), as Kafka Connect does before serving
offsets. Writes go straight through. Thread-safe as the wrapped store.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FreshOffsetStore"]

log = logging.getLogger(__name__)


class FreshOffsetStore:
    """Wraps a ``KafkaOffsetStore`` (anything with ``refresh()``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    def refresh(self, timeout: float | None = None) -> None:
        self.inner.refresh(timeout)

    def _fresh(self) -> None:
        try:
            self.inner.refresh()
        except Exception:
            log.warning("Could not read the offsets topic to its end; offsets may be stale")

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        self._fresh()
        result: dict[bytes, bytes | None] = self.inner.get(keys)
        return result

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.inner.set(entries)

    def all(self) -> dict[bytes, bytes]:
        self._fresh()
        result: dict[bytes, bytes] = self.inner.all()
        return result
