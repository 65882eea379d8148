"""Sink throughput: connectrt's SinkTaskRunner vs a raw batched confluent-kafka consume loop.

A topic with 4 partitions is pre-filled with N 100 B values (not timed). Then, in alternating
rounds, each side reads the whole topic with its own consumer group and the same consumer
settings (connectrt's ``CONSUMER_DEFAULTS`` plus ``session.timeout.ms=6000``,
``heartbeat.interval.ms=500`` so the Tansu group join is quick):

* raw: ``subscribe()`` then ``consume(500, 1.0)`` in a loop, touching ``msg.value()``;
* connectrt: a real in-process ``Worker`` running ``bench.connectors.NoopSink`` (one task,
  ByteArrayConverter for key and value, ``put()`` only counts).

Group join is excluded from both: the clock runs from the first record received (first
non-empty ``consume()`` / first ``put()``) to the N-th. Prints the median round's records/s
and the ratio (target >= 0.8).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import _common as c
from confluent_kafka import Consumer, Producer

from bench.connectors import PROGRESS, payloads

TOPIC = "sink-in"


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


def raw_consume(bootstrap: str, n: int, group: str, extra: dict[str, str]) -> float:
    consumer = Consumer({**c.consumer_settings(bootstrap, group), **extra})
    consumer.subscribe([TOPIC])
    count = 0
    first = 0.0
    nbytes = 0
    deadline = time.monotonic() + 300
    try:
        while count < n:
            msgs = consumer.consume(500, 1.0)
            if not msgs:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"raw consumer got {count} of {n}")
                continue
            if not first:
                first = time.perf_counter()
            for m in msgs:
                if m.error() is None:
                    v = m.value()
                    nbytes += len(v) if v else 0
                    count += 1
        return time.perf_counter() - first
    finally:
        consumer.close()


def connectrt_consume(
    bootstrap: str, n: int, rnd: str, extra: dict[str, str]
) -> tuple[float, dict[str, Any]]:
    bench_id = f"sink{rnd}"
    props = c.worker_props(bootstrap, **{f"consumer.{k}": v for k, v in extra.items()})
    worker = c.make_worker(props)
    try:
        worker.start_connector(
            f"bench-sink-{rnd}",
            {
                "connector.class": "bench.connectors.NoopSinkConnector",
                "tasks.max": "1",
                "topics": TOPIC,
                "expected": str(n),
                "bench.id": bench_id,
            },
        )
        c.wait_for(lambda: f"{bench_id}-0" in PROGRESS, 30, "sink task start")
        p = PROGRESS[f"{bench_id}-0"]
        if not p.done.wait(300):
            raise TimeoutError(f"sink task got {p.count} of {n}")
        assert p.first is not None and p.last is not None
        runner = worker.runners(f"bench-sink-{rnd}")[0]
        return p.last - p.first, runner.metrics.snapshot()
    finally:
        worker.stop()


# The consumer defaults as they are, and with librdkafka's fetch.queue.backoff.ms (default
# 1000 ms) lowered: once the prefetch queue passes queued.min.messages (100k per partition) the
# next fetch is postponed by that much, which a consumer doing any per-record work hits.
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "fetch.queue.backoff.ms=50": {"fetch.queue.backoff.ms": "50"},
}


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="pre-filled records")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per settings variant")
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    c.setup_logging()
    n = args.records
    print(
        f"bench_sink: {n:,} x {args.size} B in 4 partitions, {args.rounds} alternating rounds "
        f"per variant (median reported); {c.machine()}"
    )
    from connectrt.broker import EmbeddedBroker

    times: dict[str, tuple[list[float], list[float]]] = {v: ([], []) for v in VARIANTS}
    with EmbeddedBroker() as broker:
        bs = broker.bootstrap_servers
        c.create_topics(bs, {TOPIC: 4})
        t0 = time.perf_counter()
        prefill(bs, n, args.size)
        print(f"  prefilled in {time.perf_counter() - t0:.1f} s", flush=True)
        for r in range(args.rounds):
            for vi, (variant, extra) in enumerate(VARIANTS.items()):
                raw_t, crt_t = times[variant]
                raw_t.append(raw_consume(bs, n, f"raw-group-{r}-{vi}", extra))
                t, metrics = connectrt_consume(bs, n, f"{r}-{vi}", extra)
                crt_t.append(t)
                print(
                    f"  round {r} [{variant}]: raw {c.rate(n, raw_t[-1]):,.0f} rec/s, "
                    f"connectrt {c.rate(n, t):,.0f} rec/s (batches={metrics['batches']})",
                    flush=True,
                )
    out: dict[str, float] = {}
    for variant, (raw_t, crt_t) in times.items():
        rates = c.report(
            f"sink [{variant}]: Kafka -> no-op put() (median round, join excluded)",
            [
                ("raw confluent-kafka", n, statistics.median(raw_t)),
                ("connectrt SinkTaskRunner", n, statistics.median(crt_t)),
            ],
        )
        raw, crt = rates["raw confluent-kafka"], rates["connectrt SinkTaskRunner"]
        print(f"  ratio connectrt/raw = {crt / raw:.2f}  (target >= 0.80)")
        key = "" if variant == "defaults" else "tuned_"
        out.update({f"{key}raw": raw, f"{key}connectrt": crt, f"{key}ratio": crt / raw})
    return out


if __name__ == "__main__":
    result = main()
    if result:
        c.emit("bench_sink", result)
