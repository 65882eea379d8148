"""Schema formats, converter alone: ProtobufConverter vs AvroConverter (and JsonSchemaConverter)
per record, write + read, on the same nested Connect schema.

No broker: each converter is used in process, as a task uses it (``from_connect_data`` of a
``Struct`` to Confluent wire bytes, then ``to_connect_data`` of those bytes back to a
``Struct``), against a built-in schema registry (in memory, over real HTTP on the loopback).
``--broker`` is accepted (run_all.py passes it) and ignored.

Records: N ``Struct``s of one nested schema (seeded): int64, int8, optional string / float32 /
bytes, boolean, an array of strings, a map of string to int32, an array of a nested struct with
optional fields, an optional nested struct, an optional Timestamp. Made once before any timing
and frozen out of the garbage collector (``gc.freeze()``); the worker's GC setting applies.

Each side: one converter per round (``wrapper.for.nullables=true`` for Protobuf, so that
optional fields keep their nulls), a warm-up of ``--warmup`` records written and read back
before its clock (the schema registered, its id and writer/reader plans cached), then the
clock over N writes followed by N reads. Per-record throughput = N / (write time + read time).
Every value read back is compared with the original once per run, outside the clocks (a bench
of a converter that loses data measures nothing). Rounds (``--rounds``, 5 by default) run the
three sides in an order rotating each round; medians.

The RESULT line: connectrt = Protobuf's write+read records/s, baseline = Avro's on the same
records; JSON Schema's figure is printed as an info line above it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import _common as c

from connectrt.data import Schema, SchemaBuilder, Struct, Timestamp
from connectrt.runtime.executors.gc_tuning import tune_gc

SIDES = ("protobuf", "avro", "jsonschema")

_LINE = (
    SchemaBuilder.struct()
    .name("com.example.bench.Line")
    .field("sku", Schema.STRING_SCHEMA)
    .field("qty", Schema.OPTIONAL_INT32_SCHEMA)
    .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
    .build()
)
_ADDRESS = (
    SchemaBuilder.struct()
    .name("com.example.bench.Address")
    .field("city", Schema.STRING_SCHEMA)
    .field("zip", Schema.OPTIONAL_STRING_SCHEMA)
    .optional()
    .build()
)
SCHEMA = (
    SchemaBuilder.struct()
    .name("com.example.bench.Invoice")
    .field("id", Schema.INT64_SCHEMA)
    .field("small", Schema.INT8_SCHEMA)
    .field("customer", Schema.STRING_SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("active", Schema.BOOLEAN_SCHEMA)
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("lines", SchemaBuilder.array(_LINE).build())
    .field("ship_to", _ADDRESS)
    .field("seen", Timestamp.builder().optional().build())
    .build()
)
"""The nested schema every side converts."""


def make_records(n: int) -> list[Struct]:
    rng = random.Random(36)
    epoch = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    out = []
    for i in range(n):
        s = Struct(SCHEMA)
        s.put("id", rng.randint(-(2**63), 2**63 - 1))
        s.put("small", rng.randint(-128, 127))
        s.put("customer", f"customer {i}")
        s.put("note", rng.choice([None, f"note {i}"]))
        s.put("ratio", rng.choice([None, 0.5, -2.25]))
        s.put("active", rng.random() < 0.5)
        s.put("blob", rng.choice([None, rng.randbytes(8)]))
        s.put("tags", [f"t{j}" for j in range(rng.randint(0, 3))])
        s.put("attrs", {f"k{j}": rng.randint(-5, 5) for j in range(rng.randint(0, 3))})
        s.put(
            "lines",
            [
                Struct(_LINE)
                .put("sku", f"s{i}-{j}")
                .put("qty", rng.choice([None, j]))
                .put("discount", rng.choice([None, 0.25]))
                for j in range(rng.randint(1, 3))
            ],
        )
        if rng.random() < 0.7:
            s.put(
                "ship_to",
                Struct(_ADDRESS).put("city", f"c{i}").put("zip", rng.choice([None, f"{i:05d}"])),
            )
        s.put("seen", rng.choice([None, epoch + dt.timedelta(milliseconds=i)]))
        out.append(s)
    return out


def plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: plain(value.get(f.name)) for f in value.schema.fields}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def make_converter(side: str, url: str) -> Any:
    """A configured value converter of ``side`` (close it after use)."""
    conv: Any
    if side == "protobuf":
        from connectrt.converters.protobuf import ProtobufConverter

        conv = ProtobufConverter()
        conv.configure({"schema.registry.url": url, "wrapper.for.nullables": "true"}, False)
    elif side == "avro":
        from connectrt.converters.avro import AvroConverter

        conv = AvroConverter()
        conv.configure({"schema.registry.url": url}, False)
    else:
        from connectrt.converters.jsonschema import JsonSchemaConverter

        conv = JsonSchemaConverter()
        conv.configure({"schema.registry.url": url}, False)
    return conv


def measure(
    side: str, url: str, records: list[Struct], warmup: int, rnd: int, passes: int = 1
) -> tuple[float, float]:
    """(write seconds, read seconds) for ``passes`` passes over ``records`` (each pass writes
    them all, then each reads them all back) on a fresh converter of ``side``, after
    ``warmup`` records written and read back untimed. Each round writes to its own topic (its
    own subject), so every round registers its schema once, in the warm-up."""
    topic = f"bench-{side}-{rnd}"
    conv = make_converter(side, url)
    try:
        write: Callable[[str, Schema, Any], bytes | None] = conv.from_connect_data
        read = conv.to_connect_data
        for r in records[:warmup]:
            data = write(topic, SCHEMA, r)
            assert data is not None
            read(topic, data)
        encoded: list[bytes | None] = []
        t0 = time.perf_counter()
        for _ in range(passes):
            encoded = [write(topic, SCHEMA, r) for r in records]
        t1 = time.perf_counter()
        for _ in range(passes):
            for data in encoded:
                read(topic, data)
        t2 = time.perf_counter()
        return c.window(t1 - t0), c.window(t2 - t1)
    finally:
        conv.close()


def verify(side: str, url: str, records: list[Struct]) -> int:
    """Write and read back every record on ``side``; raises on the first value that differs.
    Returns the mean encoded size in bytes."""
    topic = f"bench-{side}-verify"
    conv = make_converter(side, url)
    size = 0
    try:
        for i, r in enumerate(records):
            data = conv.from_connect_data(topic, SCHEMA, r)
            assert data is not None
            size += len(data)
            back = conv.to_connect_data(topic, data).value
            if plain(back) != plain(r):
                raise AssertionError(f"{side}: record {i} differs after write + read")
    finally:
        conv.close()
    return size // max(len(records), 1)


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000, help="records per side per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1000, help="untimed records before each clock")
    ap.add_argument(
        "--passes",
        type=int,
        default=4,
        help="passes over the records per clock (4 x 50k at 16-43 us a record: windows of "
        "3-9 s per direction on a quiet machine)",
    )
    c.add_broker_option(ap, used=False)
    args = ap.parse_args()
    c.setup_logging()
    n = args.records
    timed = n * args.passes  # records converted per clock
    print(
        f"bench_schema_formats: {n:,} nested records x {args.passes} passes per side, "
        f"{args.rounds} rounds (order "
        f"rotating, median reported), converter alone; {c.machine()}"
    )
    c.print_broker(None)
    from connectrt.listener.server import HttpServer
    from connectrt.schema_registry.app import create_registry_app
    from connectrt.schema_registry.store import MemorySchemaStore

    records = make_records(n)
    gc.collect()
    gc.freeze()
    tune_gc()
    server = HttpServer(create_registry_app(MemorySchemaStore()), "http://127.0.0.1:0")
    server.start()
    times: dict[str, list[tuple[float, float]]] = {s: [] for s in SIDES}
    sizes: dict[str, int] = {}
    try:
        for side in SIDES:
            sizes[side] = verify(side, server.url, records)
        for r in range(args.rounds):
            shown = []
            for side in c.rotated(SIDES, r):
                w, rd = measure(side, server.url, records, min(args.warmup, n), r, args.passes)
                times[side].append((w, rd))
                shown.append(f"{side} {c.rate(timed, w + rd):,.0f}")
            print(f"  round {r}: " + " / ".join(shown) + " rec/s (write+read)", flush=True)
    finally:
        server.stop()
    us = 1e6 / timed
    out: dict[str, float] = {}
    print(f"\n== converter alone, {n:,} nested records (median round; all values verified)")
    for side in SIDES:
        w = statistics.median(t[0] for t in times[side])
        rd = statistics.median(t[1] for t in times[side])
        both = statistics.median(t[0] + t[1] for t in times[side])
        out[side] = c.rate(timed, both)
        out[f"{side}_write_us"] = w * us
        out[f"{side}_read_us"] = rd * us
        print(
            f"  {side:<11} write {w * us:6.1f} us/rec  read {rd * us:6.1f} us/rec  "
            f"write+read {c.fmt_rate(out[side])}  ({sizes[side]} B/record)"
        )
    ratio = out["protobuf"] / out["avro"]
    per_round = [
        (a[0] + a[1]) / (p[0] + p[1]) for p, a in zip(times["protobuf"], times["avro"], strict=True)
    ]
    print(
        f"  Protobuf / Avro = {ratio:.2f} (per-round {', '.join(f'{x:.2f}' for x in per_round)};"
        " target >= 0.5, i.e. within 2x of Avro per record)"
    )
    print(
        f"  info: JSON Schema write+read {out['jsonschema']:,.0f} rec/s = "
        f"{out['jsonschema'] / out['avro']:.2f} x Avro"
    )
    c.emit("bench_schema_formats", out)
    return out


if __name__ == "__main__":
    figures = main()
    c.result("bench_schema_formats", figures["protobuf"], figures["avro"])
