"""Sink throughput: connectrt's SinkTaskRunner vs a hand-written batched confluent-kafka loop.

A topic with 4 partitions is pre-filled with N 100 B values (not timed). Then, in rounds, each
side reads the whole topic with its own consumer group and the same consumer settings
(connectrt's ``CONSUMER_DEFAULTS`` plus ``session.timeout.ms=6000``,
``heartbeat.interval.ms=500`` so the Tansu group join is quick):

* raw: ``subscribe()`` then ``consume(500, 1.0)`` in a loop, reading every message's value
  and summing the lengths; its prefetch sized as the worker sizes a sink task's (one task's
  share of the default ``worker.memory.budget.mb``);
* connectrt: a real in-process ``Worker`` running ``bench.connectors.NoopSink`` (one task,
  ByteArrayConverter for key and value); its ``put()`` sums the lengths of the batch's
  ``values`` column and counts (with ``--records-path``, it iterates the batch's SinkRecords
  instead, as a sink written for Kafka Connect's list does).

Steady state only, the same rule on both sides: the clock starts once ``--warmup`` records
have been received (group join, first fetches and the worker's start are all before it) and
stops at the N-th; the rate is the records in between over that time. Both run under the
worker's GC setting (``tune_gc``, set once before the first round). The order of the two
sides rotates from round to round (``_common.rotated``), so neither always gets the warmer
broker; before each side the script collects garbage and waits ``--settle`` seconds (default
3: without it, 2026-11-29, the rounds where connectrt went first were lower, 0.69-0.87 against
0.89-1.06; with it, 0.73-1.04 against 0.76-0.98); each side's clock is noted as a measurement
window (``_common.window``). Prints each
round, the median rates over the rounds and their ratio (target >= 0.9), and ends with
``RESULT bench_sink connectrt=<rec/s> baseline=<rec/s> ratio=<x>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import _common as c
from confluent_kafka import Consumer, Producer

from bench.connectors import payloads

TOPIC = c.topic("sink-in")


def prefill(bootstrap: str, n: int, size: int) -> None:
    producer = Producer(c.producer_settings(bootstrap))
    values = payloads(2000, size)
    for i in range(n):
        while True:
            try:
                producer.produce(TOPIC, values[i % 2000])
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError("prefill not acknowledged")


def raw_consumer_settings(bootstrap: str, group: str, extra: dict[str, str]) -> dict[str, Any]:
    """The raw loop's consumer settings: the worker's sink consumer's, with the prefetch sized
    from one task's share of the default ``worker.memory.budget.mb`` as the worker sizes it."""
    from connectrt.runtime.config.worker_def import WORKER_CONFIG_DEF
    from connectrt.runtime.executors.memory_budget import apply_share, task_share

    budget = int(WORKER_CONFIG_DEF.parse({})["worker.memory.budget.mb"])
    settings = {**c.consumer_settings(bootstrap, group), **extra}
    return apply_share("consumer", settings, task_share(budget, 1), extra)


def raw_consume(
    bootstrap: str, n: int, warmup: int, group: str, extra: dict[str, str]
) -> tuple[int, float]:
    """(records timed, seconds) of a hand-written loop reading the topic."""
    consumer = Consumer(raw_consumer_settings(bootstrap, group, extra))
    consumer.subscribe([TOPIC])
    count = 0
    nbytes = 0
    start_count = -1
    start = 0.0
    deadline = time.monotonic() + 300
    try:
        while count < n:
            msgs = consumer.consume(500, 1.0)
            if not msgs:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"raw consumer got {count} of {n}")
                continue
            for m in msgs:
                if m.error() is None:
                    v = m.value()
                    nbytes += len(v) if v else 0
                    count += 1
            if start_count < 0 and count >= warmup:
                start_count, start = count, time.perf_counter()
        return count - start_count, time.perf_counter() - start
    finally:
        consumer.close()


def connectrt_consume(
    bootstrap: str, n: int, warmup: int, rnd: str, extra: dict[str, str], reads: str
) -> tuple[int, float, dict[str, Any]]:
    """(records timed, seconds, task metrics) of a worker running the no-op sink."""
    bench_id = f"sink{rnd}"
    props = c.worker_props(bootstrap, **{f"consumer.{k}": v for k, v in extra.items()})
    worker = c.make_worker(props)
    try:
        timed, secs = c.run_noop_sink(
            worker, f"bench-sink-{rnd}", bench_id, TOPIC, n, warmup, reads, 300
        )
        runner = worker.runners(f"bench-sink-{rnd}")[0]
        if rnd.startswith("0-"):
            sized = ("queued.max.messages.kbytes", "fetch.max.bytes", "queued.min.messages")
            print(
                "  worker's sink consumer: "
                + ", ".join(f"{k}={runner._consumer_config.get(k)}" for k in sized),
                flush=True,
            )
        return timed, secs, runner.metrics.snapshot()
    finally:
        worker.stop()


# The consumer defaults as they are, and with librdkafka's fetch.queue.backoff.ms (default
# 1000 ms) lowered: once the prefetch queue passes queued.min.messages (100k per partition) the
# next fetch is postponed by that much, which a consumer doing any per-record work hits.
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "fetch.queue.backoff.ms=50": {"fetch.queue.backoff.ms": "50"},
}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--records",
        type=int,
        default=None,
        help="pre-filled records (default: 10M on Apache Kafka, 1M on the embedded broker)",
    )
    ap.add_argument("--rounds", type=int, default=5, help="rounds per settings variant")
    ap.add_argument("--warmup", type=int, default=0, help="records before the clock starts")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds to wait (after a garbage collection) before each side's run (default 3)",
    )
    ap.add_argument("--tuned", action="store_true", help="also run the tuned-consumer variant")
    ap.add_argument(
        "--records-path",
        action="store_true",
        help="the no-op sink iterates SinkRecords (a sink written for a list) instead of "
        "reading the values column",
    )
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    n = c.sized(args.records, args.broker, 10_000_000, 1_000_000, "pre-filled records")
    warmup = args.warmup or max(n // 20, 1000)
    variants = VARIANTS if args.tuned else {"defaults": VARIANTS["defaults"]}
    reads = "records" if args.records_path else "true"
    print(
        f"bench_sink: {n:,} x {args.size} B in 4 partitions, {args.rounds} rounds per variant, "
        f"clocks start after {warmup:,} records; the sink reads "
        f"{'each SinkRecord' if args.records_path else 'the values column'}; {c.machine()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {load()}"
    )
    c.print_broker(args.broker)
    from connectrt.runtime.executors.gc_tuning import tune_gc

    # The worker raises the young-generation GC threshold when it starts (process-wide): set
    # it now, so the raw loop runs under the same collector setting in every round, the first
    # one included.
    tune_gc()

    rates: dict[str, tuple[list[float], list[float]]] = {v: ([], []) for v in variants}
    with c.open_broker(args.broker) as broker:
        bs = broker.bootstrap_servers
        c.create_topics(bs, {TOPIC: 4})
        t0 = time.perf_counter()
        prefill(bs, n, args.size)
        print(f"  prefilled in {time.perf_counter() - t0:.1f} s", flush=True)
        for r in range(args.rounds):
            for vi, (variant, extra) in enumerate(variants.items()):
                raw_rates, crt_rates = rates[variant]
                done = []
                for side in c.rotated(("raw", "connectrt"), r):
                    if args.settle:
                        done.append(f"[{c.settle(args.settle)}]")
                    if side == "raw":
                        timed, secs = raw_consume(bs, n, warmup, f"raw-group-{r}-{vi}", extra)
                        raw_rates.append(c.rate(timed, c.window(secs)))
                        done.append(f"raw {raw_rates[-1]:,.0f} rec/s")
                    else:
                        timed, secs, metrics = connectrt_consume(
                            bs, n, warmup, f"{r}-{vi}", extra, reads
                        )
                        crt_rates.append(c.rate(timed, c.window(secs)))
                        handle_us = float(metrics["batch_seconds_total"]) / n * 1e6
                        done.append(
                            f"connectrt {crt_rates[-1]:,.0f} rec/s ({metrics['batches']} batches,"
                            f" {handle_us:.3f} us/record from consume()'s result to put()'s end)"
                        )
                print(
                    f"  round {r} [{variant}]: {', '.join(done)}, "
                    f"ratio {crt_rates[-1] / raw_rates[-1]:.2f}",
                    flush=True,
                )
    out: dict[str, float] = {}
    for variant, (raw_rates, crt_rates) in rates.items():
        raw, crt = statistics.median(raw_rates), statistics.median(crt_rates)
        paired = statistics.median(a / b for a, b in zip(crt_rates, raw_rates, strict=True))
        print(f"\n== sink [{variant}]: Kafka -> put() reading the values, steady state")
        print(f"  raw confluent-kafka loop   median {c.fmt_rate(raw)}")
        print(f"  connectrt SinkTaskRunner   median {c.fmt_rate(crt)}")
        print(
            f"  ratio connectrt/raw = {crt / raw:.2f} (median of the rounds' ratios {paired:.2f};"
            f" range {min(crt_rates) / max(raw_rates):.2f}-{max(crt_rates) / min(raw_rates):.2f})"
            "  (target >= 0.90)"
        )
        key = "" if variant == "defaults" else "tuned_"
        out.update({f"{key}raw": raw, f"{key}connectrt": crt, f"{key}ratio": crt / raw})
    print(f"  {load()}")
    return out


if __name__ == "__main__":
    result = main()
    if result:
        records = "--records-path" in sys.argv  # iterating SinkRecords: a row of its own
        c.emit("bench_sink_records" if records else "bench_sink", result)
        c.result(
            "bench_sink_records" if records else "bench_sink", result["connectrt"], result["raw"]
        )
