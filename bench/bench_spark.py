"""Spark executor backend vs the threaded worker: the same source pipeline, 1..N tasks.

Each task of ``bench.spark_connectors.TimedSourceConnector`` first sends one warm-up record and
reports ready once it is acknowledged (the idempotent producer's id wait and every start-up
cost are behind it), then waits at a start barrier; once all tasks are ready the bench starts
them together and each produces ``--records`` pre-serialized 100 B values (ByteArrayConverter,
batches of 2000) to a topic with one partition per task, offsets in the Kafka offsets topic. A
task's clock runs from its first timed poll to the first offset commit after its last record
(every record acknowledged; commits every ``offset.flush.interval.ms`` = 200 ms, so the end is
up to 200 ms late: use enough records that this is small); total throughput = all records /
(last task done - first task started). Start-up inside the clocks (start signal -> first timed
poll) is printed as a share of the task clocks (target < 5%); launch latency (connector created
-> all tasks ready: on Spark, submitting the jobs, starting a Python worker per task and the
warm-up) is printed separately.

Rounds (``--rounds``, at least 5 by default), each on a fresh broker (``--broker``: embedded by
default, where Tansu keeps every record in memory, or a single-node Apache Kafka; an external
``HOST:PORT`` broker is shared by the rounds, each with its own topics): the threaded worker (an
in-process ``Worker``) and the Spark backend (the driver in-process, ``build_spark_worker``, on
one SparkSession ``local[max tasks + 1]`` made once: one slot stays free, as the backend
requires), in an order that rotates each round, each with every task count. Prints per-task and
total records/s (medians), scaling (N tasks / 1 task) and Spark/threads; the RESULT line
compares Spark (connectrt's scale-out backend) with the threaded worker at the largest task
count. Figures are printed, never asserted."""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

CONNECTOR = "bench.spark_connectors.TimedSourceConnector"


def base_props(bootstrap: str) -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    return c.worker_props(
        bootstrap,
        **{
            "offset.storage.type": "kafka",
            "offset.storage.topic": f"bench-offsets-{run}",
            "offset.storage.partitions": "4",
            "config.storage.topic": f"bench-configs-{run}",
            "status.storage.topic": f"bench-status-{run}",
            "group.id": f"bench-{run}",
            "offset.flush.interval.ms": "200",
            "task.shutdown.graceful.timeout.ms": "20000",
        },
    )


def connector_config(
    topic: str, tasks: int, records: int, timing: Path, bid: str
) -> dict[str, str]:
    return {
        "connector.class": CONNECTOR,
        "tasks.max": str(tasks),
        "topic": topic,
        "records": str(records),
        "record.bytes": "100",
        "batch.size": "2000",
        "bench.id": bid,
        "timing.dir": str(timing),
    }


def collect(timing: Path, bid: str, tasks: int, created: float) -> dict[str, float]:
    """Wait until every task is ready (warmed up), start them, wait for their timing files."""
    ready = [timing / f"{bid}-{i}.ready" for i in range(tasks)]
    c.wait_for(lambda: all(f.exists() for f in ready), 300, f"{bid}: all tasks ready", 0.01)
    launch = time.time() - created
    go = time.time()
    (timing / f"{bid}.go").touch()
    files = [timing / f"{bid}-{i}.json" for i in range(tasks)]
    c.wait_for(lambda: all(f.exists() for f in files), 600, f"{bid}: all tasks done", 0.05)
    docs = [json.loads(f.read_text()) for f in files]
    clocks = [d["done"] - d["first"] for d in docs]
    total_records = sum(d["records"] for d in docs)
    span = max(d["done"] for d in docs) - min(d["first"] for d in docs)
    return {
        "per_task": statistics.median(d["records"] / t for d, t in zip(docs, clocks, strict=True)),
        "total": total_records / span,
        "seconds": span,
        "launch": launch,
        "startup_share": max(d["first"] - go for d in docs) / min(clocks),
    }


Runner = Callable[[int, str], dict[str, float]]
"""Runs a connector of ``n`` tasks producing to ``topic``; returns :func:`collect`'s figures."""


def with_threads(
    bootstrap: str, records: int, timing: Path, body: Callable[[Runner], None]
) -> None:
    worker = c.make_worker(base_props(bootstrap))
    try:

        def run(n: int, topic: str) -> dict[str, float]:
            bid = f"threads-{n}-{uuid.uuid4().hex[:6]}"
            created = time.time()
            worker.start_connector(bid, connector_config(topic, n, records, timing, bid))
            try:
                return collect(timing, bid, n, created)
            finally:
                worker.delete_connector(bid)

        body(run)
    finally:
        worker.stop()


def with_spark(
    bootstrap: str, session: Any, records: int, timing: Path, body: Callable[[Runner], None]
) -> None:
    from connectrt.process.spark_worker import build_spark_worker

    process, executor = build_spark_worker(base_props(bootstrap), session)
    stop = threading.Event()
    thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
    thread.start()
    try:
        c.wait_for(lambda: process.herder.ready, 120, "Spark driver ready", 0.05)
        herder = process.herder

        def run(n: int, topic: str) -> dict[str, float]:
            bid = f"spark-{n}-{uuid.uuid4().hex[:6]}"
            created = time.time()
            herder.create_connector(bid, connector_config(topic, n, records, timing, bid))
            try:
                return collect(timing, bid, n, created)
            finally:
                herder.delete_connector(bid)

        body(run)
        if executor.cancels:
            raise RuntimeError(f"{executor.cancels} task(s) needed a cancel to stop")
    finally:
        stop.set()
        thread.join(120)


def run_counts(
    bs: str,
    rnd: int,
    backend: str,
    counts: list[int],
    figures: dict[str, dict[int, list[dict[str, float]]]],
    run: Runner,
) -> None:
    """One backend's turn in a round: a connector of each task count, one after the other."""
    for n in counts:
        topic = c.topic(f"bench-{backend}-{n}-r{rnd}")
        c.create_topics(bs, {topic: n})
        f = run(n, topic)
        figures[backend][n].append(f)
        c.window(f["seconds"])
        print(
            f"  round {rnd} {backend:<7} {n} task(s): {f['total']:>10,.0f} rec/s total, launch "
            f"{f['launch']:.1f} s, start-up {f['startup_share']:.1%} of a task's clock",
            flush=True,
        )


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000, help="per task")
    ap.add_argument("--tasks", default="1,2", help="task counts, e.g. 1,2,4")
    ap.add_argument("--rounds", type=int, default=5)
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    counts = sorted({int(x) for x in args.tasks.split(",")})
    print(
        f"bench_spark: {args.records:,} x 100 B per task, tasks {counts}, {args.rounds} rounds "
        f"(backend order rotating, medians); {c.machine()}",
        flush=True,
    )
    c.print_broker(args.broker)
    from connectrt.testing.spark import local_spark_session

    master = f"local[{max(counts) + 1}]"
    t0 = time.monotonic()
    session = local_spark_session(master, app_name="bench-spark")
    print(f"  SparkSession {master} up in {time.monotonic() - t0:.1f} s", flush=True)
    figures: dict[str, dict[int, list[dict[str, float]]]] = {
        "threads": {n: [] for n in counts},
        "spark": {n: [] for n in counts},
    }
    try:
        for r in range(args.rounds):
            with c.open_broker(args.broker) as broker, tempfile.TemporaryDirectory() as tmp:
                bs, timing = broker.bootstrap_servers, Path(tmp)
                for backend in c.rotated(["threads", "spark"], r):
                    body = functools.partial(run_counts, bs, r, backend, counts, figures)
                    if backend == "threads":
                        with_threads(bs, args.records, timing, body)
                    else:
                        with_spark(bs, session, args.records, timing, body)
    finally:
        session.stop()
    med: dict[str, dict[int, dict[str, float]]] = {
        backend: {
            n: {k: statistics.median(f[k] for f in fs) for k in fs[0]} for n, fs in per.items()
        }
        for backend, per in figures.items()
    }
    print("\n== source -> Kafka, records/s (medians; per task = median task; total = all tasks)")
    print(
        f"  {'backend':<22} {'tasks':>5} {'per task':>12} {'total':>12} {'launch s':>9} "
        f"{'start-up':>9}"
    )
    for label, backend in (("threads (in-process)", "threads"), ("spark executors", "spark")):
        for n in counts:
            f = med[backend][n]
            print(
                f"  {label:<22} {n:>5} {f['per_task']:>12,.0f} {f['total']:>12,.0f} "
                f"{f['launch']:>9.2f} {f['startup_share']:>9.1%}"
            )
    lo, hi = counts[0], counts[-1]
    for backend in ("threads", "spark"):
        if hi != lo:
            scaling = med[backend][hi]["total"] / med[backend][lo]["total"]
            print(f"  {backend}: scaling {hi} vs {lo} task(s) = {scaling:.2f}x")
    for n in counts:
        ratio = med["spark"][n]["total"] / med["threads"][n]["total"]
        print(f"  spark/threads at {n} task(s) = {ratio:.2f}")
    worst = max(f["startup_share"] for per in figures.values() for fs in per.values() for f in fs)
    print(f"  start-up inside a task's clock: at most {worst:.1%} (target < 5%)")
    return med["spark"][hi]["total"], med["threads"][hi]["total"]


if __name__ == "__main__":
    c.result("bench_spark", *main())
