"""Source throughput: connectrt's SourceTaskRunner vs a raw confluent-kafka produce loop.

Both sides send N pre-serialized 100 B values (keys None) to their own topic on one fresh broker
(``--broker``: embedded by default, Apache Kafka, or a running one), with the same producer
settings (connectrt's ``PRODUCER_DEFAULTS``):

* raw: ``produce(topic, value)`` in a loop without per-record callbacks, ``BufferError`` ->
  ``poll(0.05)`` and retry, ``poll(0)`` between batches of 2000, final ``flush()``;
* connectrt: a real in-process ``Worker`` running ``bench.connectors.PreSerializedSource``
  (ByteArrayConverter for key and value, polls of 2000 pre-serialized values, one shared
  source-partition map, one offset map per batch), each poll returning a ``SourceRecordBatch``
  (the values as a column, a fresh list per poll; ``--records-path``: a list of 2000 fresh
  ``SourceRecord`` objects, as a task written for Kafka Connect's list does). The clock
  starts at the task's first ``poll()`` and stops when the task has stopped after its final
  offset commit (which flushes the producer), i.e. when every record is acknowledged; the
  task metrics must then show N records produced (plus the warm-up record).

Both sides first produce one warm-up record and start their clocks once it is acknowledged:
librdkafka's idempotent producer holds every record until it has its producer id, a fixed ~1 s
after creation in some runs and not others. Producer creation and that wait are outside both
clocks, so the figures are steady-state records/s.

Alternating rounds (``--rounds``, at least 5 by default), the order of the two sides rotating
each round, a fresh topic per side and round; a first unmeasured raw run warms the broker.
Prints the median of each side, the ratio (target >= 0.9, for the batch and the list style
alike) and the RESULT line. Also the producing thread's CPU time per record on each side,
which a loaded machine distorts less than the rates.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import _common as c
from confluent_kafka import Producer

from bench.connectors import payloads

BUDGET_MB: int | None = None
"""``--budget-mb``: the worker's ``worker.memory.budget.mb`` (None: the default, which sizes the
task's producer queue to a quarter of the budget's share, smaller than the raw loop's
``PRODUCER_DEFAULTS``; 0: no budget, the same producer settings as the raw loop)."""

RECORDS_PATH = False
"""``--records-path``: the task returns lists of ``SourceRecord`` s instead of a batch."""

TAIL_MS: dict[str, list[float]] = {"raw": [], "connectrt": []}
"""Per round, the time from the end of the producing loop (raw: the last ``produce``;
connectrt: the poll after the last batch) to the end of the clock: acknowledgements still
outstanding, and for connectrt stopping the task, its final commit and the thread's end."""

CPU_US: dict[str, list[float]] = {"raw": [], "connectrt": []}
"""CPU time of the producing thread per record, per round: the raw loop's thread; the task's
thread from its first timed poll to the poll after its last batch (record creation by the
task included; the final flush, mostly waiting, excluded on both sides)."""


def raw_produce(bootstrap: str, topic: str, n: int, size: int, batch: int = 2000) -> float:
    producer = Producer(c.producer_settings(bootstrap))
    values = payloads(batch, size)
    produce, poll = producer.produce, producer.poll
    producer.produce(topic, b"w")  # warm-up: the idempotent producer gets its id first
    if producer.flush(60):
        raise RuntimeError("raw producer: warm-up record not acknowledged")
    t0 = time.perf_counter()
    cpu0 = time.thread_time()
    sent = 0
    while sent < n:
        for v in values[: min(batch, n - sent)]:
            while True:
                try:
                    produce(topic, v)
                    break
                except BufferError:
                    poll(0.05)
        sent += min(batch, n - sent)
        poll(0)
    cpu = time.thread_time() - cpu0
    loop_end = time.perf_counter()
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - t0
    TAIL_MS["raw"].append((t0 + elapsed - loop_end) * 1e3)
    if remaining:
        raise RuntimeError(f"raw producer: {remaining} records not acknowledged")
    CPU_US["raw"].append(cpu / n * 1e6)
    return elapsed


def connectrt_produce(
    bootstrap: str, topic: str, n: int, size: int, rnd: int
) -> tuple[float, dict[str, Any]]:
    name, bench_id = f"bench-source-{rnd}", f"src{rnd}"
    extra = {} if BUDGET_MB is None else {"worker.memory.budget.mb": str(BUDGET_MB)}
    worker = c.make_worker(c.worker_props(bootstrap, **extra))
    try:
        p, runner, end = c.run_preserialized_source(
            worker,
            bootstrap,
            name,
            bench_id,
            topic,
            n,
            columns=not RECORDS_PATH,
            **{"record.bytes": str(size)},
        )
        assert p.first is not None and p.cpu_first is not None and p.cpu_last is not None
        CPU_US["connectrt"].append((p.cpu_last - p.cpu_first) / n * 1e6)
        assert p.last is not None
        TAIL_MS["connectrt"].append((end - p.last) * 1e3)
        return end - p.first, runner.metrics.snapshot()
    finally:
        worker.stop()


def main() -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--records",
        type=int,
        default=None,
        help="per side per round (default: 6M on Apache Kafka, 500k on the embedded broker)",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument(
        "--records-path",
        action="store_true",
        help="the task returns fresh SourceRecord lists instead of a SourceRecordBatch",
    )
    ap.add_argument(
        "--budget-mb",
        type=int,
        default=None,
        help="the worker's worker.memory.budget.mb (default: the worker's default; 0: off, "
        "the task's producer then has the raw loop's settings)",
    )
    c.add_broker_option(ap)
    args = ap.parse_args()
    global RECORDS_PATH, BUDGET_MB
    RECORDS_PATH = args.records_path
    BUDGET_MB = args.budget_mb
    c.setup_logging()
    n = c.sized(args.records, args.broker, 6_000_000, 500_000, "records per side per round")
    print(
        f"bench_source: {n:,} x {args.size} B per side, {args.rounds} alternating rounds "
        f"(median reported), task returns "
        f"{'SourceRecord lists' if RECORDS_PATH else 'SourceRecordBatch columns'}, "
        f"worker.memory.budget.mb={'default' if BUDGET_MB is None else BUDGET_MB}; "
        f"{c.machine()}"
    )
    c.print_broker(args.broker)

    raw_t: list[float] = []
    crt_t: list[float] = []
    with c.open_broker(args.broker) as broker:
        bs = broker.bootstrap_servers
        topics = {c.topic("warmup"): 1}
        for r in range(args.rounds):
            topics[c.topic(f"raw-out-{r}")] = 1
            topics[c.topic(f"crt-out-{r}")] = 1
            topics[f"{c.topic(f'crt-out-{r}')}-warmup"] = 1
        c.create_topics(bs, topics)
        raw_produce(bs, c.topic("warmup"), 20_000, args.size)  # warm the broker and client paths
        for r in range(args.rounds):
            for side in c.rotated(("raw", "connectrt"), r):
                if side == "raw":
                    raw_t.append(c.window(raw_produce(bs, c.topic(f"raw-out-{r}"), n, args.size)))
                else:
                    t, metrics = connectrt_produce(bs, c.topic(f"crt-out-{r}"), n, args.size, r)
                    crt_t.append(c.window(t))
            print(
                f"  round {r} ({' then '.join(c.rotated(('raw', 'connectrt'), r))}): raw "
                f"{c.rate(n, raw_t[-1]):,.0f} rec/s, connectrt {c.rate(n, crt_t[-1]):,.0f} rec/s "
                f"(batches={metrics['batches']})",
                flush=True,
            )
    rates = c.report(
        "source: pre-serialized 100 B values -> Kafka (median round)",
        [
            ("raw confluent-kafka", n, statistics.median(raw_t)),
            ("connectrt SourceTaskRunner", n, statistics.median(crt_t)),
        ],
    )
    raw, crt = rates["raw confluent-kafka"], rates["connectrt SourceTaskRunner"]
    cpu_raw, cpu_crt = (statistics.median(CPU_US[k][-args.rounds :]) for k in ("raw", "connectrt"))
    print(
        f"  producing thread's CPU per record (median): raw {cpu_raw:.3f} us, connectrt "
        f"{cpu_crt:.3f} us (+{cpu_crt - cpu_raw:.3f} us: the task's SourceRecords and the runtime)"
    )
    tail_raw, tail_crt = (
        statistics.median(TAIL_MS[k][-args.rounds :]) for k in ("raw", "connectrt")
    )
    print(
        f"  after the producing loop, until the clock stops (median): raw {tail_raw:.1f} ms "
        f"(flush), connectrt {tail_crt:.1f} ms (stop, final commit, thread end)"
    )
    paired = [r / c for r, c in zip(raw_t, crt_t, strict=True)]  # per round: crt rate / raw
    print(
        f"  per round connectrt/raw: {', '.join(f'{x:.2f}' for x in paired)} "
        f"(median {statistics.median(paired):.2f})"
    )
    print(f"  ratio connectrt/raw = {crt / raw:.2f}  (target >= 0.90)")
    return crt, raw


if __name__ == "__main__":
    crt, raw = main()
    # A task returning SourceRecord lists is a row of its own in the summary.
    c.result("bench_source_list" if RECORDS_PATH else "bench_source", crt, raw)
