"""A slow sink on one partition: a consumer group (classic) vs a share group, 1/2/4/8 tasks.

The sink (``bench.share_connectors.SlowSink``) takes ``--per-record-ms`` per record (1 ms by
default: a destination answering each record in that time). The topic has one partition, as
a topic whose order matters or whose producer is not yours may: a consumer group reads it with
one task whatever ``tasks.max`` says, a share group (``consumer.group.type=share``, KIP-932)
with all of them. Needs Apache Kafka 4.1+: ``--broker kafka`` starts a single-node
4.4, and so does the default ``embedded`` (the embedded broker has no share groups).

Per case (group type x tasks), on a fresh topic and connector of an in-process worker (task
threads): ``--warmup`` records are produced and written first (every task has joined and
put something, or for a consumer group the one task that can); then the clock starts,
``--records`` are produced and the clock stops when the sink has written them all. Records are
produced in batches of 500 (``batch.num.messages``) and read 500 per poll (connectrt's
default ``max.poll.records``): the broker hands a share group whole record batches. The cases
run in an order that rotates per round; the median round is reported per case.

Ends with ``RESULT bench_share_group connectrt=<share group, 4 tasks> baseline=<consumer
group, 4 tasks> ratio=<x>`` (the issue asks for >= 3 on one partition with 4 tasks), after a
``RESULT bench_share_group_<n>tasks`` line for each task count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import _common as c
from confluent_kafka import Producer

from bench import share_connectors as sink

TASKS = (1, 2, 4, 8)
BATCH = 500  # records per producer batch and per poll
CASES = [(kind, n) for n in TASKS for kind in ("classic", "share")]


def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": BATCH}
    )
    for i in range(start, start + count):
        producer.produce(topic, str(i).encode())
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("records left unsent after 60 s")


def run_case(
    worker: object, bootstrap: str, kind: str, tasks: int, args: argparse.Namespace, rnd: int
) -> float:
    name = f"share-bench-{kind}-{tasks}-r{rnd}"
    topic = c.topic(name)
    c.create_topics(bootstrap, {topic: 1})
    config = {
        "connector.class": "bench.share_connectors.SlowSink",
        "tasks.max": str(tasks),
        "topics": topic,
        "bench.id": name,
        "per.record.ms": str(args.per_record_ms),
        "consumer.override.max.poll.records": str(BATCH),
        "consumer.group.type": kind,
    }
    worker.start_connector(name, config)  # type: ignore[attr-defined]
    try:
        # Warm-up: until every task that can work has written something.
        active = tasks if kind == "share" else 1
        produced = 0
        deadline = time.monotonic() + 120
        while sum(1 for t in range(tasks) if sink.PER_TASK[(name, t)]) < active:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: tasks did not all start writing within 120 s")
            _produce(bootstrap, topic, produced, args.warmup)
            produced += args.warmup
            c.wait_for(
                lambda target=produced: sink.WRITTEN[name] >= target,
                120,
                "the warm-up written",
                0.01,
            )
        t0 = time.perf_counter()
        _produce(bootstrap, topic, produced, args.records)
        end = produced + args.records
        c.wait_for(lambda: sink.WRITTEN[name] >= end, 600, f"{name}: every record written", 0.005)
        elapsed = c.window(time.perf_counter() - t0)
    finally:
        worker.delete_connector(name)  # type: ignore[attr-defined]
    return args.records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=16000, help="per case and round")
    ap.add_argument("--warmup", type=int, default=2000, help="warm-up records per attempt")
    ap.add_argument("--per-record-ms", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    if args.broker.strip() in ("", "embedded"):
        # The embedded broker has no share groups: Apache Kafka is started for the run instead.
        print("bench_share_group: the embedded broker has no share groups; using Apache Kafka")
        args.broker = "kafka"
    load = os.getloadavg()
    print(
        f"bench_share_group: {args.records:,} records per case, {args.per_record_ms} ms per "
        f"record, one partition, {args.rounds} rounds in rotating order (median reported); "
        f"{c.machine()}; load at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    c.print_broker(args.broker)
    rates: dict[tuple[str, int], list[float]] = {case: [] for case in CASES}
    with c.open_broker(args.broker) as broker:
        bootstrap = broker.bootstrap_servers
        worker = c.make_worker(c.worker_props(bootstrap, **{"value.converter": c.STRING}))
        try:
            for rnd in range(args.rounds):
                for kind, tasks in c.rotated(CASES, rnd):
                    r = run_case(worker, bootstrap, kind, tasks, args, rnd)
                    rates[(kind, tasks)].append(r)
                    print(f"  round {rnd}: {kind:<7} {tasks} task(s) {r:>9,.0f} rec/s", flush=True)
        finally:
            worker.stop()
    med = {case: statistics.median(v) for case, v in rates.items()}
    print(f"\n== one partition, {args.per_record_ms} ms per record (median round)")
    print(f"  {'tasks':>5} {'consumer group':>16} {'share group':>14} {'ratio':>7}")
    for n in TASKS:
        classic, share = med[("classic", n)], med[("share", n)]
        print(f"  {n:>5} {classic:>12,.0f} r/s {share:>10,.0f} r/s {share / classic:>7.2f}")
    load = os.getloadavg()
    print(f"  load at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for n in TASKS:
        c.case_result("bench_share_group", f"{n}tasks", med[("share", n)], med[("classic", n)])
    c.result("bench_share_group", med[("share", 4)], med[("classic", 4)])


if __name__ == "__main__":
    main()
