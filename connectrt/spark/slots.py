"""Slot accounting: a long-running task holds one Spark task slot (an executor core, or
``spark.task.cpus`` of them) for its whole life, and Spark gives a job's tasks slots first
come, first served.

A launch that would leave fewer than ``free`` slots unused waits: tasks beyond the slot count
would wait for a slot that is never given back, and with every slot held, any other Spark job
(a batch read, a streaming query) starves until a task ends. ``free`` is 1 on a cluster and 0
on a local master by default (see
:meth:`~connectrt.spark.config.SparkBackendConfig.free_slots_for`): a local master's slots are
threads, so ``local[2]`` runs a source and a sink task, and a local session that also runs
other jobs asks for more threads.

The total is either fixed (``task.executor.spark.slots``, a local master's threads, a Spark
Connect server's parallelism) or follows the executors registered with the driver
(:mod:`.slot_watch` calls :meth:`SlotLedger.resize`); a shortage is then temporary, and the
refused connector's tasks wait (UNASSIGNED, :class:`NotEnoughSlots`' message as their trace)
until slots appear or other tasks end. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["NotEnoughSlots", "SlotLedger"]


class NotEnoughSlots(Exception):
    """A launch has to wait; the message says why and what would make room."""


class SlotLedger:
    """``total`` slots (``live``: the registered executors' slots, else a fixed count), of
    which ``free`` stay unheld; ``executors`` is the executor count behind a live total."""

    def __init__(self, total: int, free: int = 1, *, live: bool = False) -> None:
        if total < 1 and not live:
            raise ValueError(f"a Spark cluster needs at least one slot, got {total}")
        self.total = total
        self.free = free
        self.live = live
        self.executors: int | None = None
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def held(self, connector: str | None = None) -> int:
        with self._lock:
            if connector is None:
                return sum(self._held.values())
            return self._held[connector]

    def resize(self, total: int, executors: int | None = None) -> bool:
        """The cluster now has ``total`` slots (from ``executors`` executors); True if the
        total changed. Running tasks keep theirs even when the total drops below them (Spark
        re-runs a lost executor's tasks where it can)."""
        with self._lock:
            changed = total != self.total
            self.total = max(0, total)
            self.executors = executors
            return changed

    def reserve(self, connector: str, count: int) -> None:
        """Take ``count`` slots for ``connector``'s tasks or raise :class:`NotEnoughSlots`."""
        with self._lock:
            held = sum(self._held.values())
            if held + count + self.free > self.total:
                others = ", ".join(f"{c}: {n}" for c, n in sorted(self._held.items()) if n)
                raise NotEnoughSlots(
                    f"Not enough Spark task slots for connector {connector}: its {count} "
                    f"task(s) need {count} slot(s), the cluster has {self.total} slot(s)"
                    f"{self._source()}, {held} held by running connector tasks "
                    f"({others or 'none'}), and {self.free} must stay free for other Spark "
                    "jobs (task.executor.spark.free.slots). The tasks wait (UNASSIGNED) and "
                    "start when "
                    + (
                        "executors with enough cores register or other tasks end. "
                        if self.live
                        else "other tasks end. "
                    )
                    + "To make room: lower tasks.max, stop another connector or give Spark "
                    "more executor cores (on a local master: a larger N in local[N]; its "
                    "slots are threads)."
                )
            self._held[connector] += count

    def _source(self) -> str:
        if not self.live:
            return ""
        return f" from {self.executors if self.executors is not None else 0} executor(s)"

    def release(self, connector: str, count: int = 1) -> None:
        with self._lock:
            self._held[connector] = max(0, self._held[connector] - count)
            if not self._held[connector]:
                del self._held[connector]
