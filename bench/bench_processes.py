"""CPU-bound source throughput: tasks as processes (task.executor=processes) vs as threads.

``bench.process_connectors.CpuBoundSource`` does real per-record Python work (an integer hash,
``--work-rounds`` rounds per record, holding the GIL). Four configurations, each on a fresh
in-process ``Worker`` (memory offset store, ``offset.flush.interval.ms=100``) against one broker
(``--broker``, embedded by default): 1 and 2 tasks on ``processes``, 1 and 2 tasks on
``threads``. Each task emits ``--records`` records into its own partition of a fresh topic.

Clock: each task first emits one warm-up record and waits for a go file; the bench starts the
clock when every task's warm-up record is committed (its producer is up, and for processes the
child is started and its imports are done: process start is outside the clock), creates the go
file, and stops the clock when every task has committed ``records + 1`` (everything
acknowledged). Rate = all tasks' records / elapsed. The round order rotates so each
configuration runs early and late; the median round is reported. RSS of each task process is
read (psutil) once the clock has stopped, while they are still up. "cores busy" is the CPU
time of the worker process and its task processes over the clock: on a machine busy with other
work, fewer cores than tasks were free and the ratios mean little.

Ends with ``RESULT bench_processes connectrt=<2 processes rec/s> baseline=<1 task rec/s>
ratio=<x>``, the baseline being 1 task on processes (on 2 cores the target is >= 1.7); it also
prints 2 threads / 1 thread (which stays near 1: one GIL).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import _common as c
import psutil

from connectrt.runtime.offsets.reader import OffsetStorageReaderImpl

CONFIGS = [("processes", 1), ("processes", 2), ("threads", 1), ("threads", 2)]


def _committed(worker: object, name: str, task: int) -> int:
    reader = OffsetStorageReaderImpl(worker.offset_store, name)  # type: ignore[attr-defined]
    stored = reader.offset({"task": task})
    return int(stored["seq"]) if stored else 0


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of this process (the worker, its task threads and clients) and
    of the given task processes."""
    total = 0.0
    for proc in [psutil.Process(), *(psutil.Process(p) for p in pids)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def run_one(
    bootstrap: str, executor: str, tasks: int, args: argparse.Namespace, rnd: int, tmp: Path
) -> tuple[float, list[float], float]:
    name = f"cpu-{executor}-{tasks}-r{rnd}"
    topic = c.topic(name)
    c.create_topics(bootstrap, {topic: tasks})
    go = tmp / f"{name}.go"
    worker = c.make_worker(
        c.worker_props(bootstrap, **{"task.executor": executor, "offset.flush.interval.ms": "100"})
    )
    try:
        worker.start_connector(
            name,
            {
                "connector.class": "bench.process_connectors.CpuBoundSource",
                "tasks.max": str(tasks),
                "topic": topic,
                "records": str(args.records),
                "batch.size": "200",
                "work.rounds": str(args.work_rounds),
                "go.file": str(go),
            },
        )
        c.wait_for(
            lambda: all(_committed(worker, name, t) >= 1 for t in range(tasks)),
            120,
            "every task's warm-up record committed",
            step=0.01,
        )
        pids = list(worker.task_pids(name).values())
        cpu0 = _cpu_seconds(pids)
        go.touch()
        t0 = time.perf_counter()
        end = args.records + 1
        c.wait_for(
            lambda: all(_committed(worker, name, t) == end for t in range(tasks)),
            600,
            "every record committed",
            step=0.005,
        )
        elapsed = c.window(time.perf_counter() - t0)
        cores = (_cpu_seconds(pids) - cpu0) / elapsed
        rss = [  # the task processes are still up (idle) until the worker stops
            psutil.Process(pid).memory_info().rss / 2**20 for pid in worker.task_pids(name).values()
        ]
        return tasks * args.records / elapsed, rss, cores
    finally:
        worker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=40_000, help="per task per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work-rounds", type=int, default=2000, help="hash rounds per record")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    load = os.getloadavg()
    print(
        f"bench_processes: {args.records:,} records per task, {args.work_rounds} hash rounds "
        f"per record, {args.rounds} rounds in rotating order (median reported); {c.machine()}; "
        f"load at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    c.print_broker(args.broker)

    rates: dict[tuple[str, int], list[float]] = {cfg: [] for cfg in CONFIGS}
    rss: list[float] = []
    with c.open_broker(args.broker) as broker, tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for executor, tasks in c.rotated(CONFIGS, rnd):
                r, child_rss, cores = run_one(
                    broker.bootstrap_servers, executor, tasks, args, rnd, Path(tmp)
                )
                rates[(executor, tasks)].append(r)
                rss.extend(child_rss)
                extra = f", RSS per child {', '.join(f'{x:.0f}' for x in child_rss)} MB"
                print(
                    f"  round {rnd}: {tasks} task(s) on {executor:<9} {r:>10,.0f} rec/s, "
                    f"{cores:.2f} cores busy" + (extra if child_rss else ""),
                    flush=True,
                )
    med = {cfg: statistics.median(v) for cfg, v in rates.items()}
    print("\n== CPU-bound source (median round)")
    for (executor, tasks), r in med.items():
        print(f"  {tasks} task(s) on {executor:<9} {c.fmt_rate(r)}")
    procs2, procs1 = med[("processes", 2)], med[("processes", 1)]
    threads2, threads1 = med[("threads", 2)], med[("threads", 1)]
    ratio = procs2 / procs1
    print(f"  2 processes / 1 task     = {ratio:.2f}  (target >= 1.7 on 2 cores)")
    print(f"  2 processes / 2 threads  = {procs2 / threads2:.2f}")
    print(f"  2 threads / 1 thread     = {threads2 / threads1:.2f}  (one GIL: near 1)")
    print(f"  1 process / 1 thread     = {procs1 / threads1:.2f}")
    print(
        f"  RSS per task process: median {statistics.median(rss):.0f} MB, "
        f"max {max(rss):.0f} MB over {len(rss)} samples"
    )
    load = os.getloadavg()
    print(f"  load at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    c.emit(
        "bench_processes",
        {"threads_2": threads2, "threads_1": threads1, "rss_mb": statistics.median(rss)},
    )
    c.result("bench_processes", procs2, procs1)


if __name__ == "__main__":
    main()
