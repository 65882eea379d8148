"""End-to-end latency of a FileStream pipeline at a steady 10,000 records/s (issue 35).

An in-process ``Worker`` runs ``FileStreamSource`` -> a 1-partition topic -> ``FileStreamSink``
(StringConverter, 1 task each, runtime defaults). A writer thread appends lines of 101 chars to
the source's file at ``--rate`` lines a second (a batch every 10 ms, paced on the monotonic
clock) for ``--seconds``. The figures are connectrt's own histograms,
``connectrt_task_e2e_latency_seconds``:

* sink: from each record's Kafka timestamp (CreateTime, set by the source's producer when it
  produced the record) to the return of the sink's ``put()``;
* source: from the return of the source's ``poll()`` to Kafka's acknowledgement.

Steady state only: one warm-up line goes through the whole pipeline first (group join, the
idempotent producer's id, every start-up), then the writer runs for 2 s before the clock starts
(the histograms are read then and again once every line is written out; the figures come from
the difference). p50 and p99 are estimated from the buckets as Prometheus'
``histogram_quantile`` does (linear inside a bucket: a bucket's width bounds the error).
Rounds (``--rounds``) start fresh connectors on a fresh topic; medians. The RESULT line gives
the rate the pipeline sustained against the rate asked for (ratio 1.0: it kept up); the
latencies are on the BENCH_RESULT line and printed per round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common as c

from connectrt.runtime.metrics import quantile

WARMUP = "warm-up line"
TICK_S = 0.01


def _buckets(histogram: Any) -> list[tuple[float, int]]:
    return [(float(b), int(n)) for b, n in histogram.snapshot()["buckets"]]


def _diff(
    after: list[tuple[float, int]], before: list[tuple[float, int]]
) -> list[tuple[float, int]]:
    return [(b, n - m) for (b, n), (_, m) in zip(after, before, strict=True)]


def writer(path: Path, rate: int, seconds: float, started: threading.Event) -> int:
    """Append ``rate`` lines a second to ``path`` for ``seconds``; returns how many."""
    per_tick = max(1, round(rate * TICK_S))
    pad = os.urandom(43).hex()
    written = 0
    start = time.monotonic()
    with path.open("a", encoding="utf-8") as f:
        started.set()
        tick = 0
        while time.monotonic() - start < seconds:
            f.write("".join(f"line {written + i:09d} {pad}\n" for i in range(per_tick)))
            f.flush()
            written += per_tick
            tick += 1
            delay = start + tick * TICK_S - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    return written


def run_round(bs: str, work: Path, rnd: int, rate: int, seconds: float) -> dict[str, float]:
    topic = c.topic(f"lat-lines-{rnd}")
    inp, out = work / f"in-{rnd}.txt", work / f"out-{rnd}.txt"
    inp.write_text(WARMUP + "\n")
    worker = c.make_worker(
        c.worker_props(bs, **{"key.converter": c.STRING, "value.converter": c.STRING})
    )
    try:
        sink_name, source_name = f"lat-sink-{rnd}", f"lat-source-{rnd}"
        worker.start_connector(
            sink_name,
            {
                "connector.class": "FileStreamSink",
                "tasks.max": "1",
                "topics": topic,
                "file": str(out),
            },
        )
        c.wait_for(lambda: bool(worker.runners(sink_name)), 30, "sink runner")
        sink = worker.runners(sink_name)[0]
        c.wait_for(lambda: bool(sink.assigned), 60, "sink partition assignment", 0.01)
        worker.start_connector(
            source_name,
            {
                "connector.class": "FileStreamSource",
                "tasks.max": "1",
                "topic": topic,
                "file": str(inp),
            },
        )
        c.wait_for(lambda: sink.metrics.records_put >= 1, 60, "the warm-up line written out", 0.01)
        source = worker.runners(source_name)[0]
        started = threading.Event()
        total: list[int] = []
        thread = threading.Thread(
            target=lambda: total.append(writer(inp, rate, seconds + 2.0, started)), daemon=True
        )
        thread.start()
        started.wait(10)
        time.sleep(2.0)  # steady state before the clock
        sink0 = _buckets(sink.metrics.e2e_latency_seconds)
        source0 = _buckets(source.metrics.e2e_latency_seconds)
        put0, t0 = sink.metrics.records_put, time.perf_counter()
        thread.join(seconds + 60)
        n = total[0] + 1
        c.wait_for(lambda: sink.metrics.records_put >= n, 120, "every line written out", 0.01)
        elapsed = c.window(time.perf_counter() - t0)
        source_after = _buckets(source.metrics.e2e_latency_seconds)
        sink_d = _diff(_buckets(sink.metrics.e2e_latency_seconds), sink0)
        source_d = _diff(source_after, source0)
        figures = {
            "rate": (n - put0) / elapsed,
            "sink_p50_ms": 1000 * (quantile(0.5, sink_d) or float("nan")),
            "sink_p99_ms": 1000 * (quantile(0.99, sink_d) or float("nan")),
            "source_p50_ms": 1000 * (quantile(0.5, source_d) or float("nan")),
            "source_p99_ms": 1000 * (quantile(0.99, source_d) or float("nan")),
            "sink_count": float(sink_d[-1][1]),
        }
    finally:
        worker.stop()
    return figures


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=10_000, help="lines a second written")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per round")
    ap.add_argument("--rounds", type=int, default=3)
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    print(
        f"bench_e2e_latency: FileStream source -> topic -> FileStream sink at {args.rate:,} "
        f"lines/s for {args.seconds:g} s, {args.rounds} rounds (median reported); {c.machine()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    c.print_broker(args.broker)
    rounds: list[dict[str, float]] = []
    with (
        tempfile.TemporaryDirectory(prefix="crt-bench-") as tmp,
        c.open_broker(args.broker) as broker,
    ):
        bs = broker.bootstrap_servers
        c.create_topics(bs, {c.topic(f"lat-lines-{r}"): 1 for r in range(args.rounds)})
        for r in range(args.rounds):
            f = run_round(bs, Path(tmp), r, args.rate, args.seconds)
            rounds.append(f)
            print(
                f"  round {r}: {f['rate']:,.0f} rec/s; sink (timestamp -> put returned) "
                f"p50 {f['sink_p50_ms']:.1f} ms p99 {f['sink_p99_ms']:.1f} ms over "
                f"{f['sink_count']:,.0f} records; source (poll -> acknowledged) p50 "
                f"{f['source_p50_ms']:.1f} ms p99 {f['source_p99_ms']:.1f} ms",
                flush=True,
            )
    median = {k: statistics.median(f[k] for f in rounds) for k in rounds[0]}
    print(
        f"\nmedian: {median['rate']:,.0f} rec/s; sink p50 {median['sink_p50_ms']:.1f} ms, "
        f"p99 {median['sink_p99_ms']:.1f} ms; source p50 {median['source_p50_ms']:.1f} ms, "
        f"p99 {median['source_p99_ms']:.1f} ms; load average now {os.getloadavg()[0]:.1f}"
    )
    c.emit("bench_e2e_latency", median)
    c.result("bench_e2e_latency", median["rate"], float(args.rate))
    return median["rate"], float(args.rate)


if __name__ == "__main__":
    main()
