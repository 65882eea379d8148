"""REST API under many connectors: create N FileStreamSource connectors, then status latencies.

A ``connectrt worker`` (Kafka-backed config and status topics) is started with
``connectrt.testing.rest.start_rest_worker`` on a fresh broker (``--broker``,
embedded by default). Then:

1. **create**: N connectors (``FileStreamSource``, one task each, each reading its own small
   temp file into its own topic; the topics are created beforehand, outside the clock) are
   created with sequential ``POST /connectors``; the clock runs from the first POST until
   ``GET /connectors?expand=status`` shows every connector and every task RUNNING. Both the
   POST phase alone and the total are printed.
2. **status**: ``GET /connectors/{c}/status`` for random connectors (``--status-requests``),
   against ``GET /`` (the worker's version: no herder work, the HTTP and framework floor) as
   the baseline: after 50 warm-up requests of each, ``--rounds`` alternating rounds (order
   rotating) of an equal share of each; requests/s = the median round's.
3. **list**: ``GET /connectors?expand=status`` (``--list-requests``), every answer holding all N.

Requests go through one keep-alive ``httpx.Client``; latency is wall time around each call
(client + server + loopback). p50/p99 are printed, never asserted. The RESULT line compares
status requests/s (connectrt) with ``GET /`` requests/s (baseline).
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


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connectors", type=int, default=100)
    ap.add_argument("--status-requests", type=int, default=2000)
    ap.add_argument("--list-requests", type=int, default=200)
    ap.add_argument("--lines", type=int, default=20, help="lines in each source file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="status vs root rounds")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    n = args.connectors
    print(f"bench_rest: {n} FileStreamSource connectors on one REST worker; {c.machine()}")

    c.print_broker(args.broker)
    from connectrt.testing.rest import start_rest_worker

    rng = random.Random(args.seed)
    names = [f"rest-bench-{i:03d}" for i in range(n)]
    with (
        tempfile.TemporaryDirectory(prefix="bench-rest-") as tmp,
        c.open_broker(args.broker) as broker,
    ):
        bs = broker.bootstrap_servers
        c.create_topics(bs, {c.topic(f"{name}-topic"): 1 for name in names})
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
                            "topic": c.topic(f"{name}-topic"),
                        },
                    },
                )
                if r.status_code != 201:
                    raise RuntimeError(f"creating {name}: {r.status_code} {r.text}")
            t_posted = time.perf_counter() - t0
            c.wait_for(lambda: all_running(http, set(names)), 300, "all RUNNING", step=0.05)
            t_running = time.perf_counter() - t0

            # -- 2. GET /connectors/{c}/status against GET / ---------------------------------
            def get_status() -> None:
                name = rng.choice(names)
                r = http.get(f"/connectors/{name}/status")
                if r.status_code != 200:
                    raise RuntimeError(f"status {name}: {r.status_code} {r.text}")

            def get_root() -> None:
                r = http.get("/")
                if r.status_code != 200:
                    raise RuntimeError(f"root: {r.status_code} {r.text}")

            calls = {"status": get_status, "root": get_root}
            for call in calls.values():
                for _ in range(50):
                    call()
            latency: dict[str, list[float]] = {"status": [], "root": []}
            per_round: dict[str, list[float]] = {"status": [], "root": []}
            share = max(1, args.status_requests // args.rounds)
            for rnd in range(args.rounds):
                for kind in c.rotated(list(calls), rnd):
                    call = calls[kind]
                    r0 = time.perf_counter()
                    for _ in range(share):
                        s = time.perf_counter()
                        call()
                        latency[kind].append(time.perf_counter() - s)
                    per_round[kind].append(share / (time.perf_counter() - r0))
            status_lat = latency["status"]

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

    st = c.latency_ms(status_lat)
    rt = c.latency_ms(latency["root"])
    ls = c.latency_ms(list_lat)
    status_rps = statistics.median(per_round["status"])
    root_rps = statistics.median(per_round["root"])
    print(f"\n== create {n} connectors (sequential POST /connectors)")
    print(f"  all POSTs answered           {t_posted:8.2f} s  ({t_posted / n * 1000:.1f} ms each)")
    print(f"  all connectors+tasks RUNNING {t_running:8.2f} s")
    print(f"\n== GET /connectors/{{c}}/status, {len(status_lat)} requests, {n} connectors")
    print(
        f"  p50 {st['p50']:.2f} ms   p99 {st['p99']:.2f} ms   max {st['max']:.2f} ms   "
        f"mean {st['mean']:.2f} ms   {status_rps:,.0f} requests/s (median round)"
    )
    print(f"== GET / (baseline), {len(latency['root'])} requests")
    print(
        f"  p50 {rt['p50']:.2f} ms   p99 {rt['p99']:.2f} ms   max {rt['max']:.2f} ms   "
        f"mean {rt['mean']:.2f} ms   {root_rps:,.0f} requests/s (median round)"
    )
    print(f"\n== GET /connectors?expand=status, {args.list_requests} requests ({list_bytes:,} B)")
    print(
        f"  p50 {ls['p50']:.2f} ms   p99 {ls['p99']:.2f} ms   max {ls['max']:.2f} ms   "
        f"mean {ls['mean']:.2f} ms"
    )
    print(f"\n  worker stop (graceful, {n} tasks) {t_stop:.1f} s")
    return status_rps, root_rps


if __name__ == "__main__":
    c.result("bench_rest", *main())
