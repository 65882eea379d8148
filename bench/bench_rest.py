"""REST API under many connectors: create N FileStreamSource connectors, then status latencies.

A ``connectrt worker`` (Kafka-backed config and status topics) is started with
``connectrt.testing.rest.start_rest_worker`` on a fresh embedded broker. Then:

1. **create**: N connectors (``FileStreamSource``, one task each, each reading its own small
   temp file into its own topic; the topics are created beforehand, outside the clock) are
   created with sequential ``POST /connectors``; the clock runs from the first POST until
   ``GET /connectors?expand=status`` shows every connector and every task RUNNING. Both the
   POST phase alone and the total are printed.
2. **status**: ``GET /connectors/{c}/status`` for random connectors (``--status-requests``).
3. **list**: ``GET /connectors?expand=status`` (``--list-requests``), every answer holding all N.

Requests go through one keep-alive ``httpx.Client``; latency is wall time around each call
(client + server + loopback). p50/p99 are printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as c

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p99 and max in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": q[49], "p99": q[98], "max": ms[-1], "mean": statistics.fmean(ms)}


def all_running(http: Any, names: set[str]) -> bool:
    r = http.get("/connectors", params={"expand": "status"})
    r.raise_for_status()
    body = r.json()
    for name in names:
        status = body.get(name, {}).get("status")
        if not status or status["connector"]["state"] != "RUNNING":
            return False
        tasks = status["tasks"]
        if not tasks or any(t["state"] != "RUNNING" for t in tasks):
            return False
    return True


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connectors", type=int, default=100)
    ap.add_argument("--status-requests", type=int, default=2000)
    ap.add_argument("--list-requests", type=int, default=200)
    ap.add_argument("--lines", type=int, default=20, help="lines in each source file")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    c.setup_logging()
    n = args.connectors
    print(f"bench_rest: {n} FileStreamSource connectors on one REST worker; {c.machine()}")

    from connectrt.broker import EmbeddedBroker
    from connectrt.testing.rest import start_rest_worker

    rng = random.Random(args.seed)
    names = [f"rest-bench-{i:03d}" for i in range(n)]
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as tmp, EmbeddedBroker() as broker:
        bs = broker.bootstrap_servers
        c.create_topics(bs, {f"{name}-topic": 1 for name in names})
        files = []
        for name in names:
            p = Path(tmp) / f"{name}.txt"
            p.write_text("".join(f"{name} line {j}\n" for j in range(args.lines)))
            files.append(p)
        worker = start_rest_worker(bs)
        http = worker.http
        try:
            # -- 1. create N connectors and wait until all (and their tasks) are RUNNING -------
            t0 = time.perf_counter()
            for name, path in zip(names, files, strict=True):
                r = http.post(
                    "/connectors",
                    json={
                        "name": name,
                        "config": {
                            "connector.class": SOURCE,
                            "tasks.max": "1",
                            "file": str(path),
                            "topic": f"{name}-topic",
                        },
                    },
                )
                if r.status_code != 201:
                    raise RuntimeError(f"creating {name}: {r.status_code} {r.text}")
            t_posted = time.perf_counter() - t0
            c.wait_for(lambda: all_running(http, set(names)), 300, "all RUNNING", step=0.05)
            t_running = time.perf_counter() - t0

            # -- 2. GET /connectors/{c}/status --------------------------------------------------
            status_lat = []
            for _ in range(args.status_requests):
                name = rng.choice(names)
                s = time.perf_counter()
                r = http.get(f"/connectors/{name}/status")
                status_lat.append(time.perf_counter() - s)
                if r.status_code != 200:
                    raise RuntimeError(f"status {name}: {r.status_code} {r.text}")

            # -- 3. GET /connectors?expand=status ----------------------------------------------
            list_lat = []
            for _ in range(args.list_requests):
                s = time.perf_counter()
                r = http.get("/connectors", params={"expand": "status"})
                list_lat.append(time.perf_counter() - s)
                if r.status_code != 200 or len(r.json()) != n:
                    raise RuntimeError(f"list: {r.status_code} {len(r.content)} bytes")
            list_bytes = len(r.content)
        finally:
            t_stop = time.perf_counter()
            worker.stop()
            t_stop = time.perf_counter() - t_stop

    st = percentiles(status_lat)
    ls = percentiles(list_lat)
    print(f"\n== create {n} connectors (sequential POST /connectors)")
    print(f"  all POSTs answered           {t_posted:8.2f} s  ({t_posted / n * 1000:.1f} ms each)")
    print(f"  all connectors+tasks RUNNING {t_running:8.2f} s")
    print(f"\n== GET /connectors/{{c}}/status, {args.status_requests} requests, {n} connectors")
    print(
        f"  p50 {st['p50']:.2f} ms   p99 {st['p99']:.2f} ms   max {st['max']:.2f} ms   "
        f"mean {st['mean']:.2f} ms"
    )
    print(f"\n== GET /connectors?expand=status, {args.list_requests} requests ({list_bytes:,} B)")
    print(
        f"  p50 {ls['p50']:.2f} ms   p99 {ls['p99']:.2f} ms   max {ls['max']:.2f} ms   "
        f"mean {ls['mean']:.2f} ms"
    )
    print(f"\n  worker stop (graceful, {n} tasks) {t_stop:.1f} s")
    return {
        "connectors": float(n),
        "create_posts_s": t_posted,
        "create_running_s": t_running,
        "status_p50_ms": st["p50"],
        "status_p99_ms": st["p99"],
        "list_p50_ms": ls["p50"],
        "list_p99_ms": ls["p99"],
    }


if __name__ == "__main__":
    c.emit("bench_rest", main())
