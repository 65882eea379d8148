"""The lifecycle of the stores kept in memory only (offsets, configs, statuses): the test
doubles and the standalone defaults.

Nothing to start, stop, flush or read again, and no topic: :class:`InMemoryStore` answers
those calls of the store protocols at once, so a memory store writes only what it keeps.
"""

from __future__ import annotations

__all__ = ["InMemoryStore"]


class InMemoryStore:
    """Base of a store whose state lives in this process only (nothing survives a restart).

    ``topic`` is ``"(memory)"`` (what logs and the single-worker guard name); ``start``,
    ``stop``, ``flush`` and ``refresh`` return at once. Thread-safe (they touch nothing).
    """

    topic = "(memory)"

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def flush(self, timeout: float | None = None) -> None:
        """Nothing is queued: every write is applied when it is made."""

    def refresh(self, timeout: float | None = None) -> None:
        """Nobody else writes this store: nothing to read again."""
