"""Per-task counters, updated by the task thread and read by the metrics endpoint.

Counters are plain ints updated only by the owning task thread (a single writer); readers take
a :meth:`TaskMetrics.snapshot`, which may be a few records stale but is never torn, because
each attribute read is atomic under the GIL. A :class:`LatencyHistogram` is written the same
way; a reader may see a bucket count one observation ahead of the sum, never a broken list.

``partition_lag`` is the one value computed at read time: for a sink task, a callable the
runner factory installs (:class:`~connectrt.runtime.sink.consumer_lag.ConsumerLagProbe`) that
answers the task's per-partition consumer lag from its consumer's cached state.

A task that runs elsewhere (a task process, a Spark executor) sends :meth:`TaskMetrics.snapshot`
to the worker, which keeps it in its handle's metrics with :meth:`TaskMetrics.apply_snapshot`
(from the one thread that receives the reports).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["LATENCY_BUCKETS", "LatencyHistogram", "TaskMetrics"]

# Upper bounds (seconds) of the latency histograms' buckets; +Inf is implied.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class LatencyHistogram:
    """Counts of observed durations per bucket of :data:`LATENCY_BUCKETS`, plus their sum.

    One writer (the task thread) calls :meth:`observe`; any thread may call :meth:`snapshot`.
    """

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds

    @classmethod
    def from_snapshot(cls, snapshot: Any) -> LatencyHistogram:
        """The histogram a :meth:`snapshot` describes (its bounds may have crossed JSON, where
        ``inf`` becomes null: the buckets are taken in order). Malformed input gives an empty
        histogram."""
        histogram = cls()
        try:
            cumulative = [int(count) for _, count in snapshot["buckets"]]
            total = float(snapshot["sum"])
        except (KeyError, TypeError, ValueError):
            return histogram
        if len(cumulative) != len(histogram.counts):
            return histogram
        previous = 0
        for i, count in enumerate(cumulative):
            histogram.counts[i] = count - previous
            previous = count
        histogram.total = total
        return histogram

    def snapshot(self) -> dict[str, Any]:
        """``{"buckets": [(upper bound, cumulative count), ...], "count": n, "sum": s}``; the
        last bound is ``inf``."""
        counts = list(self.counts)
        cumulative = 0
        buckets = []
        for bound, count in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        return {"buckets": buckets, "count": cumulative, "sum": self.total}


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
    transactions_aborted: int = 0  # source, exactly-once: transactions aborted (KIP-618)
    # source, exactly-once: restarts from the committed offsets after a transaction was lost to
    # the broker (an outage longer than the commit may wait)
    transaction_restarts: int = 0
    errors: int = 0
    retries: int = 0
    batches: int = 0
    batch_seconds_total: float = 0.0
    batch_seconds_max: float = 0.0
    # Records written to the dead letter queue, and DLQ writes the broker refused.
    deadletterqueue_produce_requests: int = 0
    deadletterqueue_produce_failures: int = 0
    batch_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    # Time in SinkTask.put / SourceTask.poll (timed by the runner factory's task wrapper) and
    # in an offset commit (sink: pre_commit + consumer commit; source: producer flush + store).
    put_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    poll_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    commit_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    partition_lag: Callable[[], dict[tuple[str, int], int]] | None = field(
        default=None, repr=False, compare=False
    )

    def observe_batch(self, seconds: float) -> None:
        self.batches += 1
        self.batch_seconds_total += seconds
        if seconds > self.batch_seconds_max:
            self.batch_seconds_max = seconds
        self.batch_seconds.observe(seconds)

    def lag(self) -> dict[tuple[str, int], int]:
        """Per-partition consumer lag of a sink task (records), empty for a source task or
        while the task has no consumer; never raises."""
        probe = self.partition_lag
        if probe is None:
            return {}
        try:
            return probe()
        except Exception:
            return {}

    def snapshot(self) -> dict[str, Any]:
        """Every counter by name; histograms as :meth:`LatencyHistogram.snapshot` dicts; and
        ``partition_lag`` as a list of ``{"topic", "partition", "lag"}``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, LatencyHistogram):
                out[f.name] = value.snapshot()
            elif f.name != "partition_lag":
                out[f.name] = value
        out["partition_lag"] = [
            {"topic": t, "partition": p, "lag": lag} for (t, p), lag in sorted(self.lag().items())
        ]
        return out

    def apply_snapshot(self, snapshot: dict[str, Any]) -> None:
        """Take the values of a remote task's :meth:`snapshot`: counters, histograms, and the
        consumer lag it reported (answered by :meth:`lag` until the next snapshot). Keys that
        are not metrics of this class, or whose value has the wrong type, are ignored."""
        if "partition_lag" in snapshot:
            lag = _lag_from_snapshot(snapshot["partition_lag"])
            self.partition_lag = lambda: lag
        for f in fields(self):
            name = f.name
            if name in ("connector", "task", "partition_lag") or name not in snapshot:
                continue
            value = snapshot[name]
            if isinstance(getattr(self, name), LatencyHistogram):
                setattr(self, name, LatencyHistogram.from_snapshot(value))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                setattr(self, name, value)


def _lag_from_snapshot(entries: Any) -> dict[tuple[str, int], int]:
    lag: dict[tuple[str, int], int] = {}
    if isinstance(entries, list):
        for entry in entries:
            try:
                lag[(str(entry["topic"]), int(entry["partition"]))] = int(entry["lag"])
            except (KeyError, TypeError, ValueError):
                continue
    return lag
