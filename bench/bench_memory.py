"""Peak RSS and throughput of a REST worker running 4 tasks at full rate, with and without the
memory budget.

Each run starts a fresh broker (``--broker``: embedded, the default, or a single-node Apache
Kafka; Tansu keeps every record in memory, a fresh one per run bounds that; an external
``HOST:PORT`` broker is shared by the runs, each with its own topics) and a worker in a child
process (``bench_memory.py --child``): the real worker process assembly
(``connectrt.testing.rest.start_rest_worker``: REST API on, configs, status and offsets in Kafka
topics), so the measurement is the worker's alone, REST server included. Through its REST API
the child creates two ``bench.connectors.PreSerializedSource`` connectors (100 B values, not
rate-limited) producing to two 4-partition topics and two ``bench.connectors.NoopSink``
connectors consuming them (ByteArrayConverter, the runtime's client defaults), one task each.
Once all four are RUNNING and the sinks receive records, it waits ``--warmup`` seconds (the
producers' id wait, the group joins and the first fill of the queues are outside the
measurement), then counts the records produced and put over ``--duration`` seconds: steady-state
records/s per side.

Two variants, alternating (order rotated each round), ``--rounds`` each:

* ``budget``: the runtime's defaults, i.e. the clients sized from ``worker.memory.budget.mb``;
* ``unbounded``: ``worker.memory.budget.mb=0`` (the client settings from before the budget:
  32 MiB / 100k-message producer queues, 16 MiB prefetch, 16 MiB fetches).

The parent samples the child's RSS with psutil every 100 ms for the whole run (start-up
included); the child also reports its own ``ru_maxrss``. Prints, per variant, the median peak RSS
and the median steady-state rate (records put by the sinks per second); the RESULT line's
connectrt figure is the budget variant's rate and its baseline the unbounded one's: the ratio is
what the bound costs in throughput. Target: peak RSS <= 250 MB, ratio >= 0.95.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common as c
import psutil

VARIANTS: dict[str, dict[str, str]] = {
    "budget": {},
    "unbounded": {"worker.memory.budget.mb": "0"},
}


def child(
    bootstrap: str, topics: list[str], warmup: float, duration: float, extra: dict[str, str]
) -> None:
    from connectrt.testing.rest import rest_worker_props, start_rest_worker

    rss_start = psutil.Process().memory_info().rss
    props = rest_worker_props(
        bootstrap, **{"key.converter": c.BYTES, "value.converter": c.BYTES, **extra}
    )
    worker = start_rest_worker(bootstrap, props)
    names = []
    try:
        for i in range(2):
            for name, config in (
                (
                    f"mem-source-{i}",
                    {
                        "connector.class": "bench.connectors.PreSerializedSourceConnector",
                        "tasks.max": "1",
                        "topic": topics[i],
                        "records": str(10**10),
                        "bench.id": f"memsrc{i}",
                    },
                ),
                (
                    f"mem-sink-{i}",
                    {
                        "connector.class": "bench.connectors.NoopSinkConnector",
                        "tasks.max": "1",
                        "topics": topics[i],
                        "bench.id": f"memsink{i}",
                    },
                ),
            ):
                r = worker.http.post("/connectors", json={"name": name, "config": config})
                if r.status_code != 201:
                    raise RuntimeError(f"creating {name}: {r.status_code} {r.text}")
                names.append(name)
        herder_worker = worker.process.herder.worker

        def counts() -> tuple[int, int]:
            ms = herder_worker.task_metrics()
            return (
                sum(m.records_polled for m in ms if m.connector.startswith("mem-source")),
                sum(m.records_put for m in ms if m.connector.startswith("mem-sink")),
            )

        c.wait_for(lambda: counts()[1] > 0, 120, "the sinks to receive records", 0.05)
        time.sleep(warmup)
        p0, s0 = counts()
        t0 = time.monotonic()
        time.sleep(duration)
        p1, s1 = counts()
        elapsed = time.monotonic() - t0
        failed = [str(r.id) for n in names for r in herder_worker.runners(n).values() if r.failed]
    finally:
        worker.stop()
    print(
        json.dumps(
            {
                "rss_after_imports": rss_start,
                "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "produced_per_s": (p1 - p0) / elapsed,
                "put_per_s": (s1 - s0) / elapsed,
                "failed_tasks": failed,
            }
        ),
        flush=True,
    )


def run_variant(
    choice: str, run: str, warmup: float, duration: float, extra: dict[str, str]
) -> dict[str, Any]:
    """One run (``run`` names it in its topics): fresh broker (an external one is shared),
    worker child; returns the child's figures plus the peak RSS."""
    topics = [c.topic(f"mem-{i}-{run}") for i in range(2)]
    with c.open_broker(choice) as broker:
        bs = broker.bootstrap_servers
        c.create_topics(bs, {t: 4 for t in topics})
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--bootstrap", bs]
        cmd += ["--topics", ",".join(topics)]
        cmd += ["--warmup", str(warmup), "--duration", str(duration)]
        cmd += ["--extra", json.dumps(extra)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        ps = psutil.Process(proc.pid)
        peak = 0
        while proc.poll() is None:
            try:
                peak = max(peak, ps.memory_info().rss)
            except psutil.NoSuchProcess:
                break
            time.sleep(0.1)
        out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"worker child exited with {proc.returncode}")
    info: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if info["failed_tasks"]:
        raise RuntimeError(f"failed tasks: {info['failed_tasks']}")
    info["peak_mb"] = max(peak, info["ru_maxrss_kb"] * 1024) / 2**20
    return info


def main() -> tuple[float, float] | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=15.0, help="measured seconds per run")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring")
    ap.add_argument("--rounds", type=int, default=5, help="runs per variant, alternating")
    ap.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"subset of {','.join(VARIANTS)}"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topics", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="{}", help="extra worker properties (JSON)")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    extra_props: dict[str, str] = json.loads(args.extra)
    if args.child:
        child(args.bootstrap, args.topics.split(","), args.warmup, args.duration, extra_props)
        return None
    variants = [v for v in args.variants.split(",") if v]
    print(
        f"bench_memory: REST worker, 2 sources + 2 sinks at full rate, {args.warmup:.0f} s "
        f"warm-up + {args.duration:.0f} s measured, {args.rounds} alternating rounds of "
        f"{variants}; {c.machine()}",
        flush=True,
    )
    c.print_broker(args.broker)
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for variant in c.rotated(variants, r):
            info = run_variant(
                args.broker,
                f"{r}-{variant}",
                args.warmup,
                args.duration,
                {**VARIANTS[variant], **extra_props},
            )
            runs[variant].append(info)
            c.window(args.duration)
            print(
                f"  round {r} {variant:<9}: peak RSS {info['peak_mb']:6.1f} MB, produced "
                f"{info['produced_per_s']:>10,.0f} rec/s, put {info['put_per_s']:>10,.0f} rec/s",
                flush=True,
            )
    print("\n== memory: REST worker with 4 tasks at full rate (median of rounds)")
    medians: dict[str, dict[str, float]] = {}
    for variant, infos in runs.items():
        m = {
            k: statistics.median(i[k] for i in infos)
            for k in ("peak_mb", "produced_per_s", "put_per_s")
        }
        medians[variant] = m
        top = max(i["peak_mb"] for i in infos)
        print(
            f"  {variant:<9} peak RSS {m['peak_mb']:6.1f} MB (max {top:.1f}), produced "
            f"{m['produced_per_s']:>10,.0f} rec/s, put {m['put_per_s']:>10,.0f} rec/s"
        )
    if "budget" in medians:
        print(f"  peak RSS with the budget {medians['budget']['peak_mb']:.1f} MB (target <= 250)")
    if "budget" in medians and "unbounded" in medians:
        crt, base = medians["budget"]["put_per_s"], medians["unbounded"]["put_per_s"]
        print(f"  throughput with / without the budget = {crt / base:.2f} (target >= 0.95)")
    else:
        only = medians[variants[0]]
        crt = base = only["put_per_s"]
    return crt, base


if __name__ == "__main__":
    figures = main()
    if figures is not None:  # None in the worker child, whose output the parent reads
        c.result("bench_memory", *figures)
