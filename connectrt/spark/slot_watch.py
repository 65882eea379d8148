"""Following the executors of a Spark cluster: the slot total as they register and leave.

On a cluster master (not ``local``, not Spark Connect) and without ``task.executor.spark.slots``
the driver cannot know its slots up front: executors register after the SparkContext starts,
join when the cluster grows (a new worker host, dynamic allocation) and leave when a host dies.
:class:`SlotWatch` asks ``probe`` (the launcher's :meth:`cluster_slots
<connectrt.spark.launchers.ClassicLauncher.cluster_slots>`: the slots of the registered
executors, their cores over ``spark.task.cpus``, and their count) every ``poll_s`` seconds,
resizes the :class:`~connectrt.spark.slots.SlotLedger` and calls ``on_change`` when the total
changed, so the executor can start the tasks that were waiting for slots.

Lifecycle: :meth:`await_executors` (once, at startup: waits up to its bound for the first
executors, or for ``expected`` slots when the settings name them), then :meth:`start`; :meth:`stop`
ends the thread. Threading: one daemon thread of its own; ``on_change`` runs on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from connectrt.periodic import Periodic
from connectrt.spark.slots import SlotLedger

__all__ = ["SlotWatch", "expected_slots"]

log = logging.getLogger(__name__)

Probe = Callable[[], tuple[int, int]]


def expected_slots(spark_conf: Mapping[str, str]) -> int | None:
    """The slots the ``spark.*`` settings promise, if they say: ``spark.executor.instances``
    x ``spark.executor.cores``, else ``spark.cores.max``, over ``spark.task.cpus``; None when
    they do not say (dynamic allocation, a standalone cluster's every free core)."""
    cpus = max(1, int(spark_conf.get("spark.task.cpus", "1") or 1))
    if spark_conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return None
    instances, cores = (
        spark_conf.get("spark.executor.instances"),
        spark_conf.get("spark.executor.cores"),
    )
    if instances and cores:
        return int(instances) * int(cores) // cpus
    if spark_conf.get("spark.cores.max"):
        return int(spark_conf["spark.cores.max"]) // cpus
    return None


class SlotWatch:
    """See the module docstring."""

    def __init__(
        self,
        ledger: SlotLedger,
        probe: Probe,
        on_change: Callable[[], None],
        poll_s: float,
    ) -> None:
        self.ledger = ledger
        self.probe = probe
        self.on_change = on_change
        self.poll_s = poll_s
        self._ticks = Periodic("spark-slot-watch", self._tick, poll_s)

    def poll(self) -> bool:
        """Read the cluster's slots once into the ledger; True if the total changed."""
        try:
            total, executors = self.probe()
        except Exception:
            log.warning("Could not read the Spark cluster's executors", exc_info=True)
            return False
        before = self.ledger.total
        changed = self.ledger.resize(total, executors)
        if changed:
            log.info(
                "Spark task slots: %d -> %d (%d executor(s) registered)", before, total, executors
            )
        return changed

    def await_executors(self, timeout_s: float, expected: int | None) -> None:
        """Wait up to ``timeout_s`` for ``expected`` slots (any slot when None)."""
        want = expected if expected else 1
        deadline = time.monotonic() + timeout_s
        self.poll()
        while self.ledger.total < want and time.monotonic() < deadline:
            if self._ticks.wait(min(0.5, self.poll_s)):
                return
            self.poll()
        if self.ledger.total < want:
            log.warning(
                "%d Spark task slot(s) registered after %.0f s, %d expected: starting anyway; "
                "connectors that do not fit wait until executors join",
                self.ledger.total,
                timeout_s,
                want,
            )

    def start(self) -> None:
        self._ticks.start()

    def stop(self) -> None:
        self._ticks.stop(10)

    def _tick(self) -> None:
        if self.poll():
            try:
                self.on_change()
            except Exception:
                log.exception("Starting the tasks waiting for Spark slots failed")
