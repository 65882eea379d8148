"""Per-task counters, updated by the task thread and read by the metrics endpoint.

Counters are plain ints updated only by the owning task thread (a single writer); readers take
a :meth:`TaskMetrics.snapshot`, which may be a few records stale but is never torn, because
each attribute read is atomic under the GIL.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["TaskMetrics"]


@dataclass
class TaskMetrics:
    connector: str
    task: int
    records_polled: int = 0  # source: returned by poll(); sink: consumed from Kafka
    records_produced: int = 0  # source: acknowledged by the broker
    records_put: int = 0  # sink: handed to put() successfully
    records_committed: int = 0  # source: whose offsets were stored; sink: committed
    records_skipped: int = 0  # dropped by transforms or tolerated errors
    offset_commits: int = 0
    offset_commit_failures: int = 0
    errors: int = 0
    retries: int = 0
    batches: int = 0
    batch_seconds_total: float = 0.0
    batch_seconds_max: float = 0.0

    def observe_batch(self, seconds: float) -> None:
        self.batches += 1
        self.batch_seconds_total += seconds
        if seconds > self.batch_seconds_max:
            self.batch_seconds_max = seconds

    def snapshot(self) -> dict[str, float | int | str]:
        return asdict(self)
