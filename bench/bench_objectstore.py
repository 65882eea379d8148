"""Kafka to Parquet files: connectrt's object storage sink vs a hand-written consume + pyarrow loop.

A 4-partition topic is pre-filled (not timed) with N JsonConverter envelopes (schema and
payload: an int64, an int32, a Timestamp, a Decimal and an optional nested struct). Then, in
rounds, each side reads the whole topic with its own consumer group and writes one Parquet file
per ``--flush-size`` records of a partition into a fresh local directory:

* baseline: ``subscribe()``, ``consume(500, 1.0)``, raw values buffered per partition, and per
  full buffer the same JsonConverter the worker uses (``to_connect_columns``), the structs'
  fields transposed into ``pyarrow`` arrays, a RecordBatch and ``pq.write_table`` to a
  temporary file renamed into place: what one would write without the runtime, honouring the
  same converter;
* also shown, not the RESULT's baseline: the same loop decoding the envelopes itself with
  ``orjson`` (no Connect values at all), for what the Connect data model costs;
* connectrt: a real in-process ``Worker`` running the object storage sink (one task,
  JsonConverter values, ``format.class=parquet``, ``flush.size`` the same, snappy on both).

Both sides are timed the same way: by the records in complete Parquet files. The clock starts
when the files hold at least ``--warmup`` records (group join, worker start, first fetches are
before it) and stops when they hold all N; the rate is the records in between over that time.
The order of the sides alternates per round. Prints each round, the medians and their ratio
(target >= 0.8), and ends with
``RESULT bench_objectstore connectrt=<rec/s> baseline=<rec/s> ratio=<x>``.
"""

from __future__ import annotations

import argparse
import base64
import decimal
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as c
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer

# bench/connectors.py (the benches' own plugins) would shadow the repository's ``connectors``
# package, whose object storage sink the worker imports by name: put the root first.
if sys.path[0] != str(c.ROOT):
    sys.path.insert(0, str(c.ROOT))

TOPIC = c.topic("objectstore-in")
PARTITIONS = 4
SCHEMA = {
    "type": "struct",
    "name": "order",
    "optional": False,
    "fields": [
        {"field": "n", "type": "int64", "optional": False},
        {"field": "p", "type": "int32", "optional": False},
        {
            "field": "at",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
            "optional": False,
        },
        {
            "field": "amount",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2"},
            "optional": False,
        },
        {
            "field": "customer",
            "type": "struct",
            "optional": True,
            "fields": [
                {"field": "name", "type": "string", "optional": False},
                {"field": "tier", "type": "int32", "optional": True},
            ],
        },
    ],
}
ARROW_SCHEMA = pa.schema(
    [
        pa.field("n", pa.int64(), nullable=False),
        pa.field("p", pa.int32(), nullable=False),
        pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("amount", pa.decimal128(38, 2), nullable=False),
        pa.field(
            "customer",
            pa.struct(
                [pa.field("name", pa.string(), nullable=False), pa.field("tier", pa.int32())]
            ),
        ),
    ]
)
T0 = 1_700_000_000_000


def envelope(n: int) -> bytes:
    cents = n * 7 + 5
    unscaled = cents.to_bytes((cents.bit_length() + 8) // 8, "big", signed=True)
    payload = {
        "n": n,
        "p": n % PARTITIONS,
        "at": T0 + n,
        "amount": base64.b64encode(unscaled).decode(),
        "customer": None if n % 5 == 0 else {"name": f"c{n % 17}", "tier": n % 3 or None},
    }
    return json.dumps({"schema": SCHEMA, "payload": payload}).encode()


def prefill(bootstrap: str, n: int) -> None:
    producer = Producer(c.producer_settings(bootstrap))
    for i in range(n):
        while True:
            try:
                producer.produce(TOPIC, envelope(i), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError("prefill not acknowledged")


def _rows_written(root: Path, flush_size: int) -> int:
    """Records in complete Parquet files under ``root`` (every file holds flush_size)."""
    return sum(1 for _ in root.rglob("*.parquet")) * flush_size


class _Clock:
    """Warm-up, then the clock: fed the records written so far."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.start_count = -1
        self.start = 0.0

    def seen(self, written: int) -> None:
        if self.start_count < 0 and written >= self.warmup:
            self.start_count, self.start = written, time.perf_counter()

    def measured(self, written: int) -> tuple[int, float]:
        return written - self.start_count, c.window(time.perf_counter() - self.start)


def _write_parquet(root: Path, part: int, start: int, arrays: list[pa.Array]) -> None:
    batch = pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
    directory = root / f"partition={part}"
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{TOPIC}+{part}+{start:010d}.parquet"
    temp = directory / f".{final.name}.tmp"
    pq.write_table(pa.Table.from_batches([batch]), temp, compression="snappy")
    os.replace(temp, final)


def baseline(bootstrap: str, n: int, warmup: int, flush: int, group: str, root: Path) -> float:
    """The hand-written loop decoding with the same JsonConverter as the worker (so both sides
    do the same deserialization into Connect values) and writing Parquet with pyarrow."""
    from connectrt.converters.json import JsonConverter

    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    consumer = Consumer(c.consumer_settings(bootstrap, group))
    consumer.subscribe([TOPIC])
    buffers: dict[int, list[bytes]] = {}
    starts: dict[int, int] = {}
    written = 0
    clock = _Clock(warmup)
    customer_type = ARROW_SCHEMA.field("customer").type
    deadline = time.monotonic() + 600
    try:
        while written < n:
            msgs = consumer.consume(500, 1.0)
            if not msgs and time.monotonic() > deadline:
                raise TimeoutError(f"baseline wrote {written} of {n}")
            for m in msgs:
                if m.error() is not None:
                    continue
                part = m.partition()
                raws = buffers.get(part)
                if raws is None:
                    raws = buffers[part] = []
                    starts[part] = m.offset()
                raws.append(m.value())
                if len(raws) >= flush:
                    values = converter.to_connect_columns(TOPIC, raws).values
                    ns, ps, ats, amounts, customers = zip(*[v._values for v in values], strict=True)
                    _write_parquet(
                        root,
                        part,
                        starts[part],
                        [
                            pa.array(ns, pa.int64()),
                            pa.array(ps, pa.int32()),
                            pa.array(ats, pa.timestamp("ms", tz="UTC")),
                            pa.array(amounts, pa.decimal128(38, 2)),
                            pa.array(
                                [
                                    None
                                    if x is None
                                    else {"name": x._values[0], "tier": x._values[1]}
                                    for x in customers
                                ],
                                customer_type,
                            ),
                        ],
                    )
                    del buffers[part]
                    written += len(values)
                    clock.seen(written)
        timed, secs = clock.measured(written)
        return c.rate(timed, secs)
    finally:
        consumer.close()


def baseline_orjson(
    bootstrap: str, n: int, warmup: int, flush: int, group: str, root: Path
) -> float:
    """The hand-written loop decoding the envelopes itself with orjson (no Connect values):
    shown for what the Connect data model costs, not the RESULT's baseline."""
    consumer = Consumer(c.consumer_settings(bootstrap, group))
    consumer.subscribe([TOPIC])
    buffers: dict[int, tuple[list[Any], ...]] = {}
    starts: dict[int, int] = {}
    written = 0
    clock = _Clock(warmup)
    loads = orjson.loads
    scale = decimal.Decimal(1).scaleb(-2)
    deadline = time.monotonic() + 600
    try:
        while written < n:
            msgs = consumer.consume(500, 1.0)
            if not msgs and time.monotonic() > deadline:
                raise TimeoutError(f"baseline wrote {written} of {n}")
            for m in msgs:
                if m.error() is not None:
                    continue
                part = m.partition()
                cols = buffers.get(part)
                if cols is None:
                    cols = buffers[part] = ([], [], [], [], [])
                    starts[part] = m.offset()
                payload = loads(m.value())["payload"]
                cols[0].append(payload["n"])
                cols[1].append(payload["p"])
                cols[2].append(payload["at"])
                raw = base64.b64decode(payload["amount"])
                cols[3].append(decimal.Decimal(int.from_bytes(raw, "big", signed=True)) * scale)
                cols[4].append(payload["customer"])
                if len(cols[0]) >= flush:
                    _write_parquet(
                        root,
                        part,
                        starts[part],
                        [
                            pa.array(cols[0], pa.int64()),
                            pa.array(cols[1], pa.int32()),
                            pa.array(cols[2], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
                            pa.array(cols[3], pa.decimal128(38, 2)),
                            pa.array(cols[4], ARROW_SCHEMA.field("customer").type),
                        ],
                    )
                    del buffers[part]
                    written += len(cols[0])
                    clock.seen(written)
        timed, secs = clock.measured(written)
        return c.rate(timed, secs)
    finally:
        consumer.close()


def connectrt(bootstrap: str, n: int, warmup: int, flush: int, rnd: int, root: Path) -> float:
    props = c.worker_props(
        bootstrap, **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    )
    worker = c.make_worker(props)
    name = f"bench-objectstore-{rnd}"
    try:
        worker.start_connector(
            name,
            {
                "name": name,
                "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                "tasks.max": "1",
                "topics": TOPIC,
                "store.url": root.as_uri(),
                "topics.dir": "",
                "flush.size": str(flush),
                "format.class": "parquet",
                "parquet.codec": "snappy",
            },
        )
        base = root / TOPIC
        clock = _Clock(warmup)
        deadline = time.monotonic() + 600
        while True:
            written = _rows_written(base, flush) if base.exists() else 0
            clock.seen(written)
            if written >= n:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"connectrt wrote {written} of {n}")
            time.sleep(0.005)
        timed, secs = clock.measured(written)
        return c.rate(timed, secs)
    finally:
        worker.stop()


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=250_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flush-size", type=int, default=10_000)
    ap.add_argument("--warmup", type=int, default=0, help="records before the clock starts")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    n, flush = args.records, args.flush_size
    if n % (flush * PARTITIONS):
        raise SystemExit("--records must be a multiple of 4 x --flush-size (only full files)")
    warmup = args.warmup or max(n // 10, flush * PARTITIONS)
    one, five, fifteen = os.getloadavg()
    print(
        f"bench_objectstore: {n:,} records in {PARTITIONS} partitions to Parquet, "
        f"flush.size {flush:,}, {args.rounds} rounds, clocks start after {warmup:,} records; "
        f"{c.machine()}; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}",
        flush=True,
    )
    c.print_broker(args.broker)
    from connectrt.runtime.executors.gc_tuning import tune_gc

    tune_gc()  # the worker sets it process-wide: the same for both sides from the start
    raw_rates: list[float] = []
    crt_rates: list[float] = []
    orjson_rates: list[float] = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-objectstore-"))
    try:
        with c.open_broker(args.broker) as broker:
            bs = broker.bootstrap_servers
            c.create_topics(bs, {TOPIC: PARTITIONS})
            t0 = time.perf_counter()
            prefill(bs, n)
            print(f"  prefilled in {time.perf_counter() - t0:.1f} s", flush=True)
            for r in range(args.rounds):
                done = []
                for side in c.rotated(["baseline", "connectrt", "orjson"], r):
                    root = scratch / f"{side}-{r}"
                    if side == "baseline":
                        raw_rates.append(baseline(bs, n, warmup, flush, f"raw-{r}", root))
                        done.append(f"baseline {raw_rates[-1]:,.0f} rec/s")
                    elif side == "orjson":
                        orjson_rates.append(
                            baseline_orjson(bs, n, warmup, flush, f"orjson-{r}", root)
                        )
                        done.append(f"orjson-only loop {orjson_rates[-1]:,.0f} rec/s")
                    else:
                        crt_rates.append(connectrt(bs, n, warmup, flush, r, root))
                        done.append(f"connectrt {crt_rates[-1]:,.0f} rec/s")
                    shutil.rmtree(root, ignore_errors=True)
                print(
                    f"  round {r}: {', '.join(done)}, ratio {crt_rates[-1] / raw_rates[-1]:.2f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    raw, crt = statistics.median(raw_rates), statistics.median(crt_rates)
    print("\n== Kafka -> Parquet files (local filesystem), steady state")
    plain = statistics.median(orjson_rates)
    print(f"  hand-written loop, JsonConverter + pyarrow  median {c.fmt_rate(raw)}")
    print(f"  connectrt object storage sink               median {c.fmt_rate(crt)}")
    print(f"  ratio connectrt/baseline = {crt / raw:.2f}  (target >= 0.80)")
    print(
        f"  (hand-written loop, orjson + pyarrow, no Connect values: median {c.fmt_rate(plain)};"
        f" connectrt/that = {crt / plain:.2f})"
    )
    one, five, fifteen = os.getloadavg()
    print(f"  load average {one:.2f}, {five:.2f}, {fifteen:.2f}", flush=True)
    return {"connectrt": crt, "baseline": raw}


if __name__ == "__main__":
    result = main()
    c.result("bench_objectstore", result["connectrt"], result["baseline"])
