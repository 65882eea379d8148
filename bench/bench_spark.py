"""Spark executor backend vs the threaded worker: the same source pipeline, 1..N tasks.

Each task of ``bench.spark_connectors.TimedSourceConnector`` produces ``--records``
pre-serialized 100 B values (ByteArrayConverter, batches of 2000) to a topic with one
partition per task, offsets in the Kafka offsets topic (``offset.flush.interval.ms=100``).
Tasks wait at a start barrier until all of them run; a task's time then runs from the start
signal to the first offset commit after its last record (every record acknowledged); total
throughput = all records / (last task done - start). Launch latency (connector created -> all
tasks ready) is printed separately: on Spark it includes submitting the jobs and starting a
Python worker per task.

Runs, in one process: the threaded worker (an in-process ``Worker``) with each task count,
then one local SparkSession ``local[max tasks + 1]`` (one slot stays free, as the backend
requires) running the driver in-process and each task count on its executors. Prints
records/s per task and in total, the scaling ratio (N tasks / 1 task) and Spark/threads.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import uuid
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
            "offset.flush.interval.ms": "100",
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
    """Wait until every task is ready, start them, wait for their timing files."""
    ready = [timing / f"{bid}-{i}.ready" for i in range(tasks)]
    c.wait_for(lambda: all(f.exists() for f in ready), 300, f"{bid}: all tasks ready", 0.01)
    launch = time.time() - created
    (timing / f"{bid}.go").touch()
    files = [timing / f"{bid}-{i}.json" for i in range(tasks)]
    c.wait_for(lambda: all(f.exists() for f in files), 600, f"{bid}: all tasks done", 0.05)
    docs = [json.loads(f.read_text()) for f in files]
    per_task = [d["records"] / (d["done"] - d["first"]) for d in docs]
    total_records = sum(d["records"] for d in docs)
    span = max(d["done"] for d in docs) - min(d["first"] for d in docs)
    return {
        "per_task": statistics.median(per_task),
        "total": total_records / span,
        "seconds": span,
        "launch": launch,
    }


def run_threads(bootstrap: str, counts: list[int], records: int, timing: Path) -> dict[int, Any]:
    out = {}
    worker = c.make_worker(base_props(bootstrap))
    try:
        for n in counts:
            bid, topic = f"threads-{n}-{uuid.uuid4().hex[:6]}", f"bench-threads-{n}"
            c.create_topics(bootstrap, {topic: n})
            created = time.time()
            worker.start_connector(bid, connector_config(topic, n, records, timing, bid))
            out[n] = collect(timing, bid, n, created)
            worker.delete_connector(bid)
            print(f"  threads, {n} task(s): {out[n]['total']:,.0f} rec/s", flush=True)
    finally:
        worker.stop()
    return out


def run_spark(bootstrap: str, counts: list[int], records: int, timing: Path) -> dict[int, Any]:
    from connectrt.process.spark_worker import build_spark_worker
    from connectrt.testing.spark import local_spark_session

    master = f"local[{max(counts) + 1}]"
    t0 = time.monotonic()
    session = local_spark_session(master, app_name="bench-spark")
    print(f"  SparkSession {master} up in {time.monotonic() - t0:.1f} s", flush=True)
    out = {}
    try:
        process, executor = build_spark_worker(base_props(bootstrap), session)
        stop = threading.Event()
        thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
        thread.start()
        c.wait_for(lambda: process.herder.ready, 120, "Spark driver ready", 0.05)
        herder = process.herder
        try:
            for n in counts:
                bid, topic = f"spark-{n}-{uuid.uuid4().hex[:6]}", f"bench-spark-{n}"
                c.create_topics(bootstrap, {topic: n})
                created = time.time()
                herder.create_connector(bid, connector_config(topic, n, records, timing, bid))
                out[n] = collect(timing, bid, n, created)
                herder.delete_connector(bid)
                print(
                    f"  spark {master}, {n} task(s): {out[n]['total']:,.0f} rec/s "
                    f"(launch {out[n]['launch']:.1f} s)",
                    flush=True,
                )
            if executor.cancels:
                raise RuntimeError(f"{executor.cancels} task(s) needed a cancel to stop")
        finally:
            stop.set()
            thread.join(120)
    finally:
        session.stop()
    return out


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="per task")
    ap.add_argument("--tasks", default="1,2", help="task counts, e.g. 1,2,4")
    args = ap.parse_args()
    c.setup_logging()
    counts = sorted({int(x) for x in args.tasks.split(",")})
    print(
        f"bench_spark: {args.records:,} x 100 B per task, tasks {counts}; {c.machine()}",
        flush=True,
    )
    from connectrt.broker import EmbeddedBroker

    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        timing = Path(tmp)
        threads = run_threads(broker.bootstrap_servers, counts, args.records, timing)
        spark = run_spark(broker.bootstrap_servers, counts, args.records, timing)
    print("\n== source -> Kafka, records/s (per task = median task; total = all tasks)")
    print(f"  {'backend':<22} {'tasks':>5} {'per task':>12} {'total':>12} {'launch s':>9}")
    for label, figures in (("threads (in-process)", threads), ("spark executors", spark)):
        for n in counts:
            f = figures[n]
            print(
                f"  {label:<22} {n:>5} {f['per_task']:>12,.0f} {f['total']:>12,.0f} "
                f"{f['launch']:>9.2f}"
            )
    result: dict[str, float] = {}
    lo, hi = counts[0], counts[-1]
    for label, figures in (("threads", threads), ("spark", spark)):
        for n in counts:
            result[f"{label}_{n}_total"] = figures[n]["total"]
            result[f"{label}_{n}_per_task"] = figures[n]["per_task"]
        if hi != lo:
            scaling = figures[hi]["total"] / figures[lo]["total"]
            result[f"{label}_scaling_{hi}_vs_{lo}"] = scaling
            print(f"  {label}: scaling {hi} vs {lo} task(s) = {scaling:.2f}x")
    for n in counts:
        ratio = spark[n]["total"] / threads[n]["total"]
        result[f"spark_vs_threads_{n}"] = ratio
        print(f"  spark/threads at {n} task(s) = {ratio:.2f}")
    return result


if __name__ == "__main__":
    result = main()
    if result:
        c.emit("bench_spark", result)
