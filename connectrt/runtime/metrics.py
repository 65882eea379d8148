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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "E2E_LATENCY_BUCKETS",
    "LATENCY_BUCKETS",
    "LatencyHistogram",
    "TaskMetrics",
    "quantile",
]

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
# End-to-end latency (record timestamp -> put returned; poll -> acknowledged) also spans a
# backlog being caught up with: the same bounds, then up to an hour.
E2E_LATENCY_BUCKETS: tuple[float, ...] = (*LATENCY_BUCKETS, 60.0, 120.0, 300.0, 900.0, 3600.0)


class LatencyHistogram:
    """Counts of observed durations per bucket of ``bounds`` (default :data:`LATENCY_BUCKETS`),
    plus their sum.

    One writer (the task thread) calls :meth:`observe` or :meth:`observe_sample`; any thread may
    call :meth:`snapshot`.
    """

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def observe_sample(self, sample: Sequence[float], count: int) -> None:
        """``count`` observations of which ``sample`` (not empty, at most ``count`` long) is an
        even sample: each value stands for ``count // len(sample)`` of them, the first
        ``count % len(sample)`` values for one more. The batch-native form: one call per batch,
        work in the sample's length, and the histogram's count still grows by ``count``."""
        k = len(sample)
        if k == 0 or count <= 0:
            return
        each, extra = divmod(count, k)
        counts = self.counts
        bounds = self.bounds
        total = 0.0
        for i, seconds in enumerate(sample):
            weight = each + 1 if i < extra else each
            if weight:
                counts[bisect_left(bounds, seconds)] += weight
                total += seconds * weight
        self.total += total

    def observe_ages(self, now_ms: float, stamps_ms: Sequence[int], count: int) -> None:
        """:meth:`observe_sample` of the ages at ``now_ms`` of ``stamps_ms`` (epoch ms, an even
        sample of ``count`` records' timestamps; one ahead of ``now_ms`` is 0 s old). When they
        all fall in one bucket (the usual batch: records produced close together) the work is
        a few C-level passes, no per-sample Python step."""
        k = len(stamps_ms)
        if k == 0 or count <= 0:
            return
        oldest = (now_ms - min(stamps_ms)) / 1000.0
        newest = (now_ms - max(stamps_ms)) / 1000.0
        bounds = self.bounds
        bucket = bisect_left(bounds, oldest)
        if newest < 0.0 or (bucket and bounds[bucket - 1] >= newest):
            self.observe_sample([max(0.0, (now_ms - ts) / 1000.0) for ts in stamps_ms], count)
            return
        each, extra = divmod(count, k)  # the weights observe_sample gives
        self.counts[bucket] += count
        self.total += (
            each * (k * now_ms - sum(stamps_ms)) + (extra * now_ms - sum(stamps_ms[:extra]))
        ) / 1000.0

    def from_snapshot(self, snapshot: Any) -> LatencyHistogram:
        """A new histogram with this one's bounds, as a :meth:`snapshot` describes it (its
        bounds may have crossed JSON, where ``inf`` becomes null: the buckets are taken in
        order). Malformed input gives an empty histogram."""
        histogram = LatencyHistogram(self.bounds)
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
        for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
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
    # Sink tasks of a share group (consumer.group.type=share): records acquired from the
    # broker, and acknowledged as ACCEPT, RELEASE or REJECT; archived: records on their last
    # delivery (group share.delivery.count.limit) released, which the broker archives.
    share_acquired: int = 0
    share_accepted: int = 0
    share_released: int = 0
    share_rejected: int = 0
    share_archived: int = 0
    batch_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    # Time in SinkTask.put / SourceTask.poll (timed by the runner factory's task wrapper) and
    # in an offset commit (sink: pre_commit + consumer commit; source: producer flush + store).
    put_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    poll_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    commit_seconds: LatencyHistogram = field(default_factory=LatencyHistogram)
    # End-to-end latency per record (observed per batch from a sample): sink, the record's Kafka
    # timestamp -> put() returned; source, poll() returned -> Kafka acknowledged the record.
    e2e_latency_seconds: LatencyHistogram = field(
        default_factory=lambda: LatencyHistogram(E2E_LATENCY_BUCKETS)
    )
    partition_lag: Callable[[], dict[tuple[str, int], int]] | None = field(
        default=None, repr=False, compare=False
    )
    # Epoch ms of the last end-to-end latency observation (records delivered: a sink's put()
    # returned, a source's records acknowledged); 0: none yet. Read by stuck-task detection.
    last_delivered_ms: int = 0
    # Not a metric: the value schema's fields of each topic the task read or wrote (name, type),
    # for the schema facets of lineage events (connectrt.runtime.tasks.topic_schemas).
    topic_fields: dict[str, list[list[str]]] = field(default_factory=dict, compare=False)

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
            elif f.name == "topic_fields":
                out[f.name] = {t: [list(x) for x in v] for t, v in value.items()}
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
            current = getattr(self, name)
            if name == "topic_fields":
                if isinstance(value, dict):
                    self.topic_fields = {str(t): list(v) for t, v in value.items()}
            elif isinstance(current, LatencyHistogram):
                setattr(self, name, current.from_snapshot(value))
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


def quantile(q: float, buckets: Sequence[tuple[float, int]]) -> float | None:
    """The ``q`` quantile (0..1) of a histogram given as cumulative ``(upper bound, count)``
    buckets (a :meth:`LatencyHistogram.snapshot`'s, or the difference of two), interpolated
    linearly inside its bucket as Prometheus' ``histogram_quantile`` does; the highest finite
    bound when it falls in the +Inf bucket; None for an empty histogram."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0
    for bound, cumulative in buckets:
        if cumulative >= rank and cumulative > below:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / (cumulative - below)
        lower, below = bound, cumulative
    return lower
