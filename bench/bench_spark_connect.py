"""Spark executor backend: classic (SparkContext, RDD jobs) vs Spark Connect (DataFrame jobs
through ``mapInArrow``), the same source connector, in one run.

The parent starts one broker (``--broker``, embedded by default) and one Spark Connect server
(``local[T+1]`` from the installed pyspark), then runs ``--rounds`` rounds; each round runs both
sides, in an order that alternates from round to round, each side in a fresh child process (a
classic SparkSession can share no process with a Spark Connect client):

* ``classic``: a local SparkSession ``local[T+1]`` in the child, the driver in-process;
* ``connect``: a Spark Connect client session on the server, the driver in-process.

Each side first runs a warm-up connector (``--tasks`` tasks, 2,000 records each) to its last
acknowledged record, so Python workers, clients and topics are warm; then the measured
connector: ``bench.spark_connectors.TimedSourceConnector``, ``--tasks`` tasks of
``--records`` pre-serialized 100 B values each, released together by a start barrier once
every task runs; its time runs from the barrier to the first offset commit after the last
record (every record acknowledged). Figures are printed, never asserted; the last line is
``RESULT bench_spark_connect connectrt=<Connect rec/s> baseline=<classic rec/s> ratio=<x>``
(medians over the rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import _common as c
from bench_spark import base_props, collect, connector_config

HERE = Path(__file__).resolve().parent


def run_side(side: str, args: argparse.Namespace) -> dict[str, float]:
    """In a child process: one side's warm-up and measured run; returns the figures."""
    from connectrt.process.spark_worker import build_spark_worker

    if side == "classic":
        from connectrt.testing.spark import local_spark_session

        session: Any = local_spark_session(f"local[{args.tasks + 1}]", app_name="bench-classic")
    else:
        from pyspark.sql import SparkSession

        session = SparkSession.builder.remote(args.remote).getOrCreate()
    timing = Path(args.timing)
    try:
        process, executor = build_spark_worker(base_props(args.bootstrap), session)
        stop = threading.Event()
        thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
        thread.start()
        c.wait_for(lambda: process.herder.ready, 120, f"{side}: driver ready", 0.05)
        herder = process.herder
        figures: dict[str, float] = {}
        try:
            for phase, records in (("warmup", 2000), ("measured", args.records)):
                bid = f"{side}-{phase}-{uuid.uuid4().hex[:6]}"
                topic = f"bench-{bid}"
                c.create_topics(args.bootstrap, {topic: args.tasks})
                created = time.time()
                herder.create_connector(
                    bid, connector_config(topic, args.tasks, records, timing, bid)
                )
                figures = collect(timing, bid, args.tasks, created)
                herder.delete_connector(bid)
                c.wait_for(lambda: executor.slots.held() == 0, 120, f"{bid}: slots free", 0.05)
            if executor.cancels:
                raise RuntimeError(f"{executor.cancels} task(s) needed a cancel to stop")
        finally:
            stop.set()
            thread.join(120)
        return figures
    finally:
        session.stop()


def child(args: argparse.Namespace) -> int:
    c.setup_logging()
    figures = run_side(args.side, args)
    print("SIDE_RESULT " + json.dumps(figures), flush=True)
    return 0


def spawn(side: str, args: argparse.Namespace, bootstrap: str, remote: str, timing: str) -> Any:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--side",
        side,
        "--bootstrap",
        bootstrap,
        "--remote",
        remote,
        "--timing",
        timing,
        "--records",
        str(args.records),
        "--tasks",
        str(args.tasks),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=HERE.parent)
    for line in proc.stdout.splitlines():
        if line.startswith("SIDE_RESULT "):
            return json.loads(line.split(" ", 1)[1])
    raise RuntimeError(f"{side} side failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="per task")
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--side", choices=("classic", "connect"), help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--remote", help=argparse.SUPPRESS)
    ap.add_argument("--timing", help=argparse.SUPPRESS)
    c.add_broker_option(ap)
    args = ap.parse_args()
    if args.side:
        return child(args)
    c.setup_logging()
    print(
        f"bench_spark_connect: {args.tasks} task(s) x {args.records:,} x 100 B, "
        f"{args.rounds} round(s); {c.machine()}",
        flush=True,
    )
    c.print_broker(args.broker)
    from connectrt.testing.spark_connect import SparkConnectServer

    results: dict[str, list[dict[str, float]]] = {"classic": [], "connect": []}
    with (
        c.open_broker(args.broker) as broker,
        tempfile.TemporaryDirectory() as tmp,
        SparkConnectServer(f"local[{args.tasks + 1}]") as server,
    ):
        for round_no in range(args.rounds):
            for side in c.rotated(("classic", "connect"), round_no):
                f = spawn(side, args, broker.bootstrap_servers, server.url, tmp)
                results[side].append(f)
                c.window(args.tasks * args.records / f["total"])
                print(
                    f"  round {round_no + 1} {side:<8} {f['total']:>12,.0f} rec/s total, "
                    f"{f['per_task']:>10,.0f} per task, launch {f['launch']:.1f} s",
                    flush=True,
                )
    classic = statistics.median(r["total"] for r in results["classic"])
    connect = statistics.median(r["total"] for r in results["connect"])
    launch_classic = statistics.median(r["launch"] for r in results["classic"])
    launch_connect = statistics.median(r["launch"] for r in results["connect"])
    print("\n== source -> Kafka, records/s over all tasks (median of rounds)")
    for label, total, launch in (
        ("classic (SparkContext, RDD job per task)", classic, launch_classic),
        ("Spark Connect (mapInArrow job per task)", connect, launch_connect),
    ):
        print(f"  {label:<42} {total:>12,.0f}  launch {launch:.1f} s")
    c.emit(
        "bench_spark_connect",
        {
            "classic_total": classic,
            "connect_total": connect,
            "connect_vs_classic": connect / classic,
            "classic_launch_s": launch_classic,
            "connect_launch_s": launch_connect,
        },
    )
    c.result("bench_spark_connect", connect, classic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
