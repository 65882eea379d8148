"""Per-record cost of a 3-SMT chain: ``TransformationChain.apply`` vs no chain.

Chain (Kafka's class names, resolved as a connector config would be)::

    transforms=insert,rename,route
    transforms.insert.type=org.apache.kafka.connect.transforms.InsertField$Value
    transforms.insert.static.field=origin          transforms.insert.static.value=bench
    transforms.rename.type=org.apache.kafka.connect.transforms.ReplaceField$Value
    transforms.rename.renames=name:full_name,qty:quantity
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=orders-(.*)             transforms.route.replacement=routed-$1

Two parts, both in the same run as their no-chain baseline:

1. **In process** (no broker): N ``SourceRecord`` s with (a) schemaless dict values and
   (b) ``Struct`` values with a schema (5 fields). Each repeat builds fresh records (untimed,
   then frozen out of the collector's scans: they stand for records polled batch by batch),
   then times, per poll batch of 2000 under the worker's GC setting (``tune_gc``), the
   runner's transform step: ``chain.apply_batch(batch)`` (what ``SourceTaskRunner._transform``
   does first; its per-record fallback never runs here), then the value conversion the runner
   does next
   (``JsonConverter.from_connect_data``; schemas.enable false for dicts, true for Structs),
   against the same conversion loop without the chain. Median over repeats of microseconds
   per record; "added" = with chain - without (target <= 1 us at the median).
2. **End to end** (optional, ``--e2e-records 0`` skips it): a ``SourceTaskRunner`` (own thread,
   JsonConverter schemaless values, memory offset store) producing N dict-valued records to a
   fresh broker (``--broker``, embedded by default), with and without the chain, alternating
   rounds. Each run first
   produces one warm-up record and waits until it is readable (librdkafka's idempotent producer
   holds records until it has its producer id, ~1 s in some runs and not others); the clock
   runs from the first real ``poll()`` to the task stopped after its final commit (all records
   acknowledged). Rounds (``--e2e-rounds``, 5 by default) alternate, the order rotating.

The RESULT line compares end-to-end records/s with the chain (connectrt) and without (baseline);
with ``--e2e-records 0``, the in-process rates of convert + chain and convert alone.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import threading
import time
from collections.abc import Mapping

import _common as c

from connectrt.api.records import SourceRecord
from connectrt.api.task import SourceTask
from connectrt.converters.json import JsonConverter
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.transforms.chain import TransformationChain

CHAIN_CONFIG = {
    "transforms": "insert,rename,route",
    "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "bench",
    "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.rename.renames": "name:full_name,qty:quantity",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "orders-(.*)",
    "transforms.route.replacement": "routed-$1",
}

VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("bench.Order")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("qty", Schema.INT32_SCHEMA)
    .field("price", Schema.FLOAT64_SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
PARTITION = {"bench": "transforms"}
POLL_BATCH = 2000  # records per poll() batch, as the runner transforms and converts them


def dict_records(n: int) -> list[SourceRecord]:
    return [
        SourceRecord(
            PARTITION,
            {"n": i},
            "orders-eu",
            value={"id": i, "name": f"item-{i % 1000}", "qty": i % 7, "price": 9.5, "note": None},
        )
        for i in range(n)
    ]


def struct_records(n: int) -> list[SourceRecord]:
    out = []
    for i in range(n):
        s = (
            Struct(VALUE_SCHEMA)
            .put("id", i)
            .put("name", f"item-{i % 1000}")
            .put("qty", i % 7)
            .put("price", 9.5)
            .put("note", None)
        )
        out.append(
            SourceRecord(PARTITION, {"n": i}, "orders-eu", None, None, None, VALUE_SCHEMA, s)
        )
    return out


def _converter(schemas: bool) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true" if schemas else "false"}, False)
    return conv


def time_chain_only(chain: TransformationChain[SourceRecord], records: list[SourceRecord]) -> float:
    """Seconds for the runner's transform loop over ``records``, one poll batch at a time."""
    apply_batch = chain.apply_batch
    routed = 0
    t0 = time.perf_counter()
    for start in range(0, len(records), POLL_BATCH):
        out = apply_batch(records[start : start + POLL_BATCH])
        assert out is not None  # the runner's per-record fallback never runs here
        routed += len(out)
        del out
    elapsed = time.perf_counter() - t0
    assert routed == len(records)
    assert chain.apply(records[0])[0].topic == "routed-eu"
    return elapsed


def time_pipeline(
    chain: TransformationChain[SourceRecord] | None,
    records: list[SourceRecord],
    conv: JsonConverter,
) -> float:
    """Seconds for [transform loop +] value conversion of ``records`` (the runner's order),
    one poll batch at a time; a batch's records are released before the next, as in the
    runner."""
    to_bytes = conv.from_connect_data
    t0 = time.perf_counter()
    for start in range(0, len(records), POLL_BATCH):
        batch = records[start : start + POLL_BATCH]
        if chain is not None:
            out = chain.apply_batch(batch)
            assert out is not None
            batch = out
        for r in batch:
            to_bytes(r.topic, r.value_schema, r.value)
        del batch
    return time.perf_counter() - t0


def in_process(n: int, repeats: int) -> dict[str, float]:
    chain: TransformationChain[SourceRecord] = TransformationChain(CHAIN_CONFIG)
    figures: dict[str, float] = {}
    print(f"\n== in process: {n:,} records x {repeats} repeats, median us/record")
    for kind, make, schemas in (
        ("dict", dict_records, False),
        ("struct", struct_records, True),
    ):
        conv = _converter(schemas)
        time_chain_only(chain, make(1000))  # warm caches (e.g. the updated-schema cache)
        only: list[float] = []
        base: list[float] = []
        full: list[float] = []
        for _ in range(repeats):
            for target, step in ((only, "only"), (base, "base"), (full, "full")):
                records = make(n)
                gc.collect()
                # The pre-made inputs stand for records a task polls batch by batch; keep the
                # collector from scanning all of them at once (the runner never holds them).
                gc.freeze()
                if step == "only":
                    secs = time_chain_only(chain, records)
                else:
                    secs = time_pipeline(chain if step == "full" else None, records, conv)
                target.append(secs / n * 1e6)
                gc.unfreeze()
                del records
        med_only, med_base, med_full = map(statistics.median, (only, base, full))
        added = med_full - med_base
        print(
            f"  {kind:<6} chain.apply loop {med_only:6.3f} us/rec | convert only "
            f"{med_base:6.3f} | chain + convert {med_full:6.3f} | added {added:6.3f} us/rec "
            f"(target <= 1.0) | spread of added: "
            f"{min(f - b for f, b in zip(full, base, strict=True)):.3f}.."
            f"{max(f - b for f, b in zip(full, base, strict=True)):.3f}"
        )
        figures[f"{kind}_chain_us"] = med_only
        figures[f"{kind}_base_us"] = med_base
        figures[f"{kind}_added_us"] = added
    chain.close()
    return figures


class DictSourceTask(SourceTask):
    """Emits one warm-up tombstone to ``warmup_topic``, waits for ``warmed``, then N
    dict-valued records in batches of 2000; records the first real poll's time."""

    def __init__(self, n: int, topic: str, warmup_topic: str) -> None:
        self._remaining = n
        self._topic = topic
        self._warmup_topic: str | None = warmup_topic
        self.warmed = threading.Event()
        self.first: float | None = None
        self.done = threading.Event()
        self._stop = threading.Event()

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        if self._warmup_topic is not None:
            topic, self._warmup_topic = self._warmup_topic, None
            return [SourceRecord(PARTITION, {"n": -1}, topic, value=None)]
        if not self.warmed.is_set():
            self.warmed.wait(0.05)
            return None
        if self._remaining <= 0:
            self._stop.wait(0.05)
            return None
        if self.first is None:
            self.first = time.perf_counter()
        k = min(2000, self._remaining)
        base = self._remaining
        offset = {"n": base}
        topic = self._topic
        records = [
            SourceRecord(
                PARTITION,
                offset,
                topic,
                value={"id": base - i, "name": "item", "qty": i % 7, "price": 9.5, "note": None},
            )
            for i in range(k)
        ]
        self._remaining -= k
        if self._remaining <= 0:
            self.done.set()
        return records

    def stop(self) -> None:
        self._stop.set()


def run_source(bootstrap: str, n: int, topic: str, with_chain: bool, rnd: int) -> float:
    from connectrt.converters.headers import SimpleHeaderConverter
    from connectrt.converters.string import StringConverter
    from connectrt.runtime.source.runner import SourceTaskRunner
    from connectrt.runtime.status import StatusBoard
    from connectrt.runtime.tasks.runner import TaskConverters, TaskId
    from connectrt.runtime.tasks.settings import SourceRunnerSettings
    from connectrt.storage.offsets import MemoryOffsetStore

    key = StringConverter()
    key.configure({}, True)
    header = SimpleHeaderConverter()
    header.configure({})
    warmup = c.topic(f"warmup-{rnd}-{int(with_chain)}")
    c.create_topics(bootstrap, {warmup: 1})
    task = DictSourceTask(n, topic, warmup)
    settings = SourceRunnerSettings(
        task_config={},
        converters=TaskConverters(key, _converter(False), header),
        status=StatusBoard("bench"),
        offset_flush_interval_ms=60_000,
        transforms=TransformationChain(CHAIN_CONFIG) if with_chain else None,
        producer_config=c.producer_settings(bootstrap),
        offset_store=MemoryOffsetStore(),
        offset_flush_timeout_ms=60_000,
    )
    runner = SourceTaskRunner(TaskId(f"bench-smt-{rnd}-{int(with_chain)}", 0), task, settings)
    runner.start()
    c.await_one_record(bootstrap, warmup)  # the producer has its id: start the clock
    task.warmed.set()
    if not task.done.wait(600):
        raise TimeoutError("source task did not emit all records")
    runner.stop()
    runner.join(120)
    end = time.perf_counter()
    m = runner.metrics
    if runner.failed or m.records_produced != n + 1:
        raise RuntimeError(f"source task: failed={runner.failed!r} produced={m.records_produced}")
    assert task.first is not None
    return end - task.first


def end_to_end(choice: str, n: int, rounds: int) -> dict[str, float]:
    plain: list[float] = []
    chained: list[float] = []
    with c.open_broker(choice) as broker:
        bs = broker.bootstrap_servers
        # The chain's RegexRouter routes orders-X to routed-X: the run's tag stays in X.
        first = c.topic("warmup")
        c.create_topics(bs, {first: 1})
        run_source(bs, 20_000, first, False, -1)  # first run of the process: imports etc.
        for r in range(rounds):
            # A fresh topic per round and side (the chain routes orders-X to routed-X, made
            # alike); the order rotates.
            for with_chain in c.rotated((False, True), r):
                times = chained if with_chain else plain
                source = c.topic(f"orders-eu{r}{int(with_chain)}")
                routed = c.topic(f"routed-eu{r}{int(with_chain)}")
                c.create_topics(bs, {source: 1, routed: 1})
                times.append(c.window(run_source(bs, n, source, with_chain, r)))
            print(
                f"  round {r}: no chain {c.rate(n, plain[-1]):,.0f} rec/s, 3-SMT chain "
                f"{c.rate(n, chained[-1]):,.0f} rec/s",
                flush=True,
            )
    rates = c.report(
        "end to end: SourceTaskRunner -> broker, dict values, JsonConverter (median round)",
        [("no chain", n, statistics.median(plain)), ("3-SMT chain", n, statistics.median(chained))],
    )
    base, with_chain = rates["no chain"], rates["3-SMT chain"]
    added = (1 / with_chain - 1 / base) * 1e6
    print(f"  ratio chain/no chain = {with_chain / base:.2f}; added {added:.2f} us/record")
    return {"e2e_no_chain": base, "e2e_chain": with_chain, "e2e_added_us": added}


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="in-process records per repeat")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument(
        "--e2e-records",
        type=int,
        default=None,
        help="records per end-to-end round (default 2,000,000; 400,000 on the embedded "
        "broker); 0 skips the broker part",
    )
    ap.add_argument("--e2e-rounds", type=int, default=5)
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    tune_gc()  # the worker process runs with this collector setting (Worker.start)
    print(f"bench_transforms: 3-SMT chain (InsertField, ReplaceField, RegexRouter); {c.machine()}")
    e2e = c.sized(args.e2e_records, args.broker, 2_000_000, 400_000, "end-to-end records")
    if e2e > 0:
        c.print_broker(args.broker)
    result = in_process(args.records, args.repeats)
    if e2e > 0:
        result.update(end_to_end(args.broker, e2e, args.e2e_rounds))
    return result


def result_figures(figures: dict[str, float]) -> tuple[float, float]:
    """End-to-end records/s with and without the chain; without the end-to-end part, the
    in-process records/s of convert + chain and of convert alone (dict values)."""
    if "e2e_chain" in figures:
        return figures["e2e_chain"], figures["e2e_no_chain"]
    base = figures["dict_base_us"]
    return 1e6 / (base + figures["dict_added_us"]), 1e6 / base


if __name__ == "__main__":
    c.result("bench_transforms", *result_figures(main()))
