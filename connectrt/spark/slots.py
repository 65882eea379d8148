"""Slot accounting: a long-running task holds one Spark task slot (an executor core) for its
whole life, and Spark gives a job's tasks slots first come, first served.

A launch that would leave fewer than ``free`` slots unused is refused: tasks beyond the slot
count would wait for a slot that is never given back, and with every slot held, any other
Spark job (a batch read, a streaming query) starves until a task ends. ``free`` is 1 on a
cluster and 0 on a local master by default (see
:meth:`~connectrt.spark.config.SparkBackendConfig.free_slots_for`): a local master's slots are
threads, so ``local[2]`` runs a source and a sink task, and a local session that also runs
other jobs asks for more threads. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["NotEnoughSlots", "SlotLedger"]


class NotEnoughSlots(Exception):
    """A launch was refused; the message says why and what to do."""


class SlotLedger:
    def __init__(self, total: int, free: int = 1) -> None:
        if total < 1:
            raise ValueError(f"a Spark cluster needs at least one slot, got {total}")
        self.total = total
        self.free = free
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def held(self, connector: str | None = None) -> int:
        with self._lock:
            if connector is None:
                return sum(self._held.values())
            return self._held[connector]

    def reserve(self, connector: str, count: int) -> None:
        """Take ``count`` slots for ``connector``'s tasks or raise :class:`NotEnoughSlots`."""
        with self._lock:
            held = sum(self._held.values())
            if held + count + self.free > self.total:
                others = ", ".join(f"{c}: {n}" for c, n in sorted(self._held.items()) if n)
                raise NotEnoughSlots(
                    f"Not enough Spark task slots for connector {connector}: its {count} "
                    f"task(s) need {count} slot(s), the cluster has {self.total} slot(s), "
                    f"{held} held by running connector tasks ({others or 'none'}), and "
                    f"{self.free} must stay free for other Spark jobs "
                    "(task.executor.spark.free.slots). Lower tasks.max, stop another "
                    "connector or give Spark more executor cores (on a local master: a "
                    "larger N in local[N]; its slots are threads), then restart the connector."
                )
            self._held[connector] += count

    def release(self, connector: str, count: int = 1) -> None:
        with self._lock:
            self._held[connector] = max(0, self._held[connector] - count)
            if not self._held[connector]:
                del self._held[connector]
