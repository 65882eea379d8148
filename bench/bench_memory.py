"""Peak RSS of a worker process running 4 busy tasks (2 sources + 2 sinks) for ~25 s.

The parent starts a fresh embedded broker and the topics, then runs the worker in a child
process (``bench_memory.py --child``), so the measurement is the worker's alone (not the
broker's, not this script's). The child runs an in-process ``Worker`` with two
``bench.connectors.PreSerializedSource`` tasks (100 B values, each rate-limited to
``--rate`` records/s so the broker's never-freed memory stays bounded: 2 x 20k/s x 25 s = 1M
records) producing to two topics, and two ``bench.connectors.NoopSink`` tasks consuming them,
all with the runtime's default client settings (ByteArrayConverter).

The parent samples the child's RSS with psutil every 100 ms; the child also reports its own
``ru_maxrss`` and its RSS after imports (before the worker starts). Target: peak <= 250 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import _common as c
import psutil


def child(bootstrap: str, duration: float, rate: float) -> None:
    from bench.connectors import PROGRESS

    rss_start = psutil.Process().memory_info().rss
    worker = c.make_worker(c.worker_props(bootstrap))
    try:
        for i in range(2):
            worker.start_connector(
                f"mem-source-{i}",
                {
                    "connector.class": "bench.connectors.PreSerializedSourceConnector",
                    "tasks.max": "1",
                    "topic": f"mem-{i}",
                    "records": str(int(rate * duration * 2)),
                    "records.per.second": str(rate),
                    "bench.id": f"memsrc{i}",
                },
            )
            worker.start_connector(
                f"mem-sink-{i}",
                {
                    "connector.class": "bench.connectors.NoopSinkConnector",
                    "tasks.max": "1",
                    "topics": f"mem-{i}",
                    "bench.id": f"memsink{i}",
                },
            )
        time.sleep(duration)
        produced = sum(PROGRESS[f"memsrc{i}-0"].count for i in range(2))
        consumed = sum(
            PROGRESS[f"memsink{i}-0"].count for i in range(2) if f"memsink{i}-0" in PROGRESS
        )
        failed = [
            str(r.id) for n in worker.connectors() for r in worker.runners(n).values() if r.failed
        ]
    finally:
        worker.stop()
    print(
        json.dumps(
            {
                "rss_after_imports": rss_start,
                "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "records_produced": produced,
                "records_consumed": consumed,
                "failed_tasks": failed,
            }
        ),
        flush=True,
    )


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=25.0)
    ap.add_argument("--rate", type=float, default=20_000, help="records/s per source task")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = ap.parse_args()
    c.setup_logging()
    if args.child:
        child(args.bootstrap, args.duration, args.rate)
        return {}
    print(
        f"bench_memory: worker with 2 sources ({args.rate:,.0f} rec/s each) + 2 sinks for "
        f"{args.duration:.0f} s; {c.machine()}"
    )
    from connectrt.broker import EmbeddedBroker

    with EmbeddedBroker() as broker:
        bs = broker.bootstrap_servers
        c.create_topics(bs, {"mem-0": 4, "mem-1": 4})
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--bootstrap", bs]
        cmd += ["--duration", str(args.duration), "--rate", str(args.rate)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        ps = psutil.Process(proc.pid)
        peak = 0
        samples = 0
        while proc.poll() is None:
            try:
                rss = ps.memory_info().rss
            except psutil.NoSuchProcess:
                break
            peak = max(peak, rss)
            samples += 1
            time.sleep(0.1)
        out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"worker child exited with {proc.returncode}")
    info = json.loads(out.strip().splitlines()[-1])
    mb = 1024 * 1024
    print("\n== memory: worker process with 4 busy tasks")
    print(f"  RSS after imports            {info['rss_after_imports'] / mb:8.1f} MB")
    print(f"  peak RSS (psutil, 100 ms)    {peak / mb:8.1f} MB over {samples} samples")
    print(f"  ru_maxrss (child)            {info['ru_maxrss_kb'] / 1024:8.1f} MB")
    print(
        f"  records produced {info['records_produced']:,}, consumed {info['records_consumed']:,}"
        f", failed tasks {info['failed_tasks'] or 'none'}"
    )
    peak_mb = max(peak / mb, info["ru_maxrss_kb"] / 1024)
    print(f"  peak {peak_mb:.1f} MB vs target <= 250 MB")
    return {"peak_rss_mb": peak_mb}


if __name__ == "__main__":
    result = main()
    if result:
        c.emit("bench_memory", result)
