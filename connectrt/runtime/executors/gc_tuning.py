"""The worker's garbage-collector setting: a young generation sized for record batches.

CPython runs a young-generation (generation 0) collection every 700 net allocations of
container objects by default. A sink batch is 500 ``SinkRecord``s holding converted values
(a record, its ``Struct``s and their value lists: ~2,500 containers for an Avro record with a
nested record), alive until ``put()`` returns. With 700, every batch survives several young
collections, is promoted to the old generations, and that promotion triggers full collections
over the whole heap: about a quarter of the sink hot path's time for Avro records. With a
young generation larger than a few batches, most batches are already freed (by reference
counting: records form no cycles) when the next young collection runs.

Only the generation 0 threshold is raised, never lowered (an application that set a larger
one keeps it); the older generations' thresholds are kept. Cyclic garbage is still collected,
just after up to :data:`YOUNG_THRESHOLD` allocations instead of 700, and a young collection
of that many objects takes well under a millisecond.

Process-wide and idempotent; called by :meth:`Worker.start` (any thread).
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["YOUNG_THRESHOLD", "tune_gc"]

YOUNG_THRESHOLD: Final = 10_000
"""Net container allocations between young-generation collections (CPython default: 700)."""


def tune_gc() -> None:
    """Raise the generation 0 threshold to :data:`YOUNG_THRESHOLD` if it is lower."""
    young, *older = gc.get_threshold()
    if 0 < young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, *older)
