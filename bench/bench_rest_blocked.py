"""REST reads while a plugin call is blocked: ``GET /connectors`` with a connector's ``start()``
blocked, beside the same reads with nothing blocked.

Management never waits on plugin code (issue 27): while a connector's ``start()`` blocks (the
create's ``POST`` then answers only after ``connector.call.timeout.ms``), the worker's other
entry points answer as before, ``GET /connectors`` with a p99 under 100 ms. The integration test
(``tests/integration/test_security_lifecycle.py``) checks that no read waits on the blocked
call; the latency figure lives here, out of the timed tests.

A ``connectrt worker`` (``start_rest_worker``, Kafka-backed config and status topics) on a
fresh broker (``--broker``), with ``connector.call.timeout.ms`` 120 s and ``--idle`` idle source
connectors already created (``bench.blocking_connectors``, ``start()`` not blocking), so that
the reads have a list to answer. Each round has two sides, their order rotating:

* **unblocked**: ``--requests`` ``GET /connectors``;
* **blocked**: a ``POST /connectors`` of a ``BlockedStartConnector`` is sent from a thread; once
  its ``start()`` is blocked, the same ``--requests`` reads; then the ``start()`` is released,
  the ``POST`` answers 201 and the connector is deleted (outside the clock).

Every side first sends 50 unmeasured reads. One keep-alive ``httpx.Client``; latency is wall
time around each call. Prints p50, p99 and the slowest read of each side over all rounds;
the RESULT line compares the blocked side's requests/s (connectrt) with the unblocked side's
(baseline), medians of the rounds: 1.0 means a blocked plugin call costs the readers nothing.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from typing import Any

import _common as c
import httpx

from bench import blocking_connectors as blocking

BLOCKED = "bench.blocking_connectors.BlockedStartConnector"
CALL_TIMEOUT_MS = 120_000


def reads(http: httpx.Client, n: int, latencies: list[float]) -> float:
    """``n`` timed ``GET /connectors`` (after 50 unmeasured); requests/s."""
    for _ in range(50):
        http.get("/connectors").raise_for_status()
    started = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        r = http.get("/connectors")
        latencies.append(time.perf_counter() - t)
        if r.status_code != 200:
            raise RuntimeError(f"GET /connectors: {r.status_code} {r.text}")
    took = time.perf_counter() - started
    c.window(took)
    return n / took


def blocked_reads(http: httpx.Client, url: str, n: int, latencies: list[float]) -> float:
    """:func:`reads` while a connector's ``start()`` is blocked; the connector is created from
    a thread, released after the reads, and deleted."""
    bench_id = uuid.uuid4().hex
    name = f"blocked-{bench_id[:8]}"
    answer: list[Any] = []

    def create() -> None:
        with httpx.Client(base_url=url, timeout=CALL_TIMEOUT_MS / 1000 + 60) as client:
            config = {"connector.class": BLOCKED, "tasks.max": "1", "bench.id": bench_id}
            answer.append(client.post("/connectors", json={"name": name, "config": config}))

    thread = threading.Thread(target=create, name="blocked-create", daemon=True)
    thread.start()
    c.wait_for(lambda: blocking.entered(bench_id), 60, "the connector's start() to block", 0.01)
    try:
        rate = reads(http, n, latencies)
        if answer:
            raise RuntimeError(f"the create answered while start() was blocked: {answer[0]}")
    finally:
        blocking.release(bench_id)
        thread.join(CALL_TIMEOUT_MS / 1000 + 60)
    if not answer or answer[0].status_code != 201:
        raise RuntimeError(f"the create answered {answer}")
    http.delete(f"/connectors/{name}").raise_for_status()
    return rate


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=5000, help="reads per side per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--idle", type=int, default=10, help="idle connectors already running")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    print(f"bench_rest_blocked: GET /connectors with and without a blocked start(); {c.machine()}")
    c.print_broker(args.broker)
    from connectrt.testing.rest import rest_worker_props, start_rest_worker

    latency: dict[str, list[float]] = {"blocked": [], "unblocked": []}
    per_round: dict[str, list[float]] = {"blocked": [], "unblocked": []}
    with c.open_broker(args.broker) as broker:
        props = rest_worker_props(
            broker.bootstrap_servers, **{"connector.call.timeout.ms": str(CALL_TIMEOUT_MS)}
        )
        worker = start_rest_worker(broker.bootstrap_servers, props)
        idle = [f"idle-{i:02d}" for i in range(args.idle)]
        try:
            for name in idle:
                config = {"connector.class": BLOCKED, "block.seconds": "0", "tasks.max": "1"}
                r = worker.http.post("/connectors", json={"name": name, "config": config})
                if r.status_code != 201:
                    raise RuntimeError(f"creating {name}: {r.status_code} {r.text}")
            with httpx.Client(base_url=worker.url, timeout=30) as http:
                sides = {
                    "unblocked": lambda: reads(http, args.requests, latency["unblocked"]),
                    "blocked": lambda: blocked_reads(
                        http, worker.url, args.requests, latency["blocked"]
                    ),
                }
                for i in range(args.rounds):
                    for side in c.rotated(list(sides), i):
                        per_round[side].append(sides[side]())
                    print(
                        f"  round {i + 1}: blocked {per_round['blocked'][-1]:,.0f} req/s, "
                        f"unblocked {per_round['unblocked'][-1]:,.0f} req/s",
                        flush=True,
                    )
        finally:
            worker.delete_connectors(timeout=120)
            worker.stop()

    for side in ("blocked", "unblocked"):
        p = c.latency_ms(latency[side])
        print(
            f"== GET /connectors, {side}: {len(latency[side])} reads: p50 {p['p50']:.2f} ms, "
            f"p99 {p['p99']:.2f} ms, slowest {p['max']:.2f} ms; "
            f"{statistics.median(per_round[side]):,.0f} requests/s (median round)"
        )
    p99 = c.latency_ms(latency["blocked"])["p99"]
    print(
        f"  p99 while blocked {p99:.2f} ms (target < 100 ms): {'met' if p99 < 100 else 'NOT met'}"
    )
    return statistics.median(per_round["blocked"]), statistics.median(per_round["unblocked"])


if __name__ == "__main__":
    c.result("bench_rest_blocked", *main())
