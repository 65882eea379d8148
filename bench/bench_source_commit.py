"""Source offset commits: what timed commits cost a source task's thread.

One in-process ``Worker`` runs ``bench.connectors.PreSerializedSource`` (ByteArrayConverter,
polls of 2000 pre-serialized 100 B values, one source partition), at-least-once, twice per
round: with ``offset.flush.interval.ms`` of ``--interval-ms`` (100 by default: many timed
commits in the run) and with timed commits off (an hour; the baseline). The clock is
bench_source's: from the task's first timed ``poll()`` to the task stopped after its final
commit (every record acknowledged), after a warm-up record. The runner's ``commit_offsets``
is wrapped to time each timed commit on the task's thread (the final one apart): how long the
task could not poll, in wall time and in the thread's CPU time (which a loaded machine does
not inflate). With ``--rate`` the task is rate limited (records per second; idle between
batches, as most sources are) instead of producing flat out.

At-least-once commits used to ``flush()`` the producer on the task's thread at every commit;
they now snapshot the offsets and store them once the records are acknowledged, off the task's
thread (``connectrt.runtime.source.at_least_once``). Rounds rotate the two sides' order;
medians. Ends with ``RESULT bench_source_commit connectrt=<rec/s with commits>
baseline=<rec/s without> ratio=<x>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import _common as c

COMMIT_MS: list[float] = []
"""The timed commits' durations on the task's thread (ms) in the current run."""
COMMIT_CPU_MS: list[float] = []
"""The task thread's CPU time in each timed commit (ms): unlike the wall time, not inflated
by the thread waiting for a core on a loaded machine."""


def _time_commits() -> None:
    """Wrap ``SourceTaskRunner.commit_offsets`` to record each timed commit's duration."""
    from connectrt.runtime.source.runner import SourceTaskRunner

    original = SourceTaskRunner.commit_offsets

    def timed(self: Any) -> bool:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return bool(original(self))
        finally:
            if not self.stopping:  # the final commit is not a timed one
                COMMIT_MS.append((time.perf_counter() - t0) * 1e3)
                COMMIT_CPU_MS.append((time.thread_time() - c0) * 1e3)

    SourceTaskRunner.commit_offsets = timed  # type: ignore[method-assign]


def run(bootstrap: str, topic: str, n: int, rnd: str, interval_ms: int, rate: int) -> float:
    """Seconds for ``n`` records acknowledged, with commits every ``interval_ms``."""
    name, bench_id = f"bench-commit-{rnd}", f"commit{rnd}"
    worker = c.make_worker(
        c.worker_props(bootstrap, **{"offset.flush.interval.ms": str(interval_ms)})
    )
    try:

        def warmed() -> None:  # the commits timed from here
            COMMIT_MS.clear()
            COMMIT_CPU_MS.clear()

        p, _, end = c.run_preserialized_source(
            worker,
            bootstrap,
            name,
            bench_id,
            topic,
            n,
            columns=True,
            on_warm=warmed,
            **{"records.per.second": str(rate)},
        )
        return end - p.first
    finally:
        worker.stop()


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--rate", type=int, default=0, help="records/s (0: flat out)")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    _time_commits()
    n = args.records
    print(
        f"bench_source_commit: {n:,} x 100 B per run, offset.flush.interval.ms="
        f"{args.interval_ms} vs off, {'flat out' if not args.rate else f'{args.rate:,} rec/s'}, "
        f"{args.rounds} rounds; {c.machine()}; {time.strftime('%Y-%m-%d %H:%M')}, load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    c.print_broker(args.broker)
    secs: dict[str, list[float]] = {"commits": [], "off": []}
    blocked: list[tuple[int, float, float, float]] = []  # per round: commits, ms, max, CPU ms
    with c.open_broker(args.broker) as broker:
        bs = broker.bootstrap_servers
        topics: dict[str, int] = {}
        for r in range(args.rounds):
            for side in secs:
                topics[c.topic(f"{side}-{r}")] = 1
                topics[f"{c.topic(f'{side}-{r}')}-warmup"] = 1
        c.create_topics(bs, topics)
        for r in range(args.rounds):
            for side in c.rotated(list(secs), r):
                interval = args.interval_ms if side == "commits" else 3_600_000
                t = run(bs, c.topic(f"{side}-{r}"), n, f"{side}{r}", interval, args.rate)
                secs[side].append(c.window(t))
                if side == "commits":
                    ms = list(COMMIT_MS)
                    blocked.append((len(ms), sum(ms), max(ms, default=0.0), sum(COMMIT_CPU_MS)))
            k, total, worst, cpu = blocked[-1]
            print(
                f"  round {r}: with commits {c.rate(n, secs['commits'][-1]):,.0f} rec/s "
                f"({k} timed commits, task thread in them {total:.1f} ms, longest {worst:.1f} ms"
                f", its CPU time in them {cpu:.2f} ms), without "
                f"{c.rate(n, secs['off'][-1]):,.0f} rec/s",
                flush=True,
            )
    crt = c.rate(n, statistics.median(secs["commits"]))
    off = c.rate(n, statistics.median(secs["off"]))
    per_commit = [total / k for k, total, _, _ in blocked if k]
    cpu_per_commit = [cpu / k for k, _, _, cpu in blocked if k]
    print(
        f"  median: with commits {crt:,.0f} rec/s, without {off:,.0f} rec/s, ratio "
        f"{crt / off:.2f}; task thread per timed commit (median of rounds) "
        f"{statistics.median(per_commit) if per_commit else 0.0:.2f} ms, its CPU time "
        f"{statistics.median(cpu_per_commit) if cpu_per_commit else 0.0:.3f} ms"
    )
    return crt, off


if __name__ == "__main__":
    c.result("bench_source_commit", *main())
