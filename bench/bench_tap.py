"""The record inspector's cost on a sink task's hot path: no tap (baseline) vs a tap open.

In process (no broker): a real ``SinkTaskRunner`` (a no-op ``SinkTask``, StringConverter keys,
JsonConverter values without schemas, one ``InsertField$Value`` transformation) is handed
consumed batches of 500 messages (``FakeMessage``: librdkafka's accessors over bytes) through
its per-batch step, ``_handle`` (convert, transform, ``put()``, note the offsets), on the
calling thread. Three variants, timed over the same batches:

* ``off``: nobody watches (the production state: the runner's ``tap`` is None);
* ``written``: a watcher on the ``written`` stage at the maximum rate (20 records/s);
* ``transform``: a watcher on ``transform:insert`` at the maximum rate (the sampled records are
  converted again and run through the chain on the task thread).

The watcher's queue is drained between repeats (not timed). Rounds rotate the variants' order;
the figures are medians of records/s over the rounds after a warm-up round. Ends with
``RESULT bench_tap connectrt=<tap open on written, rec/s> baseline=<off, rec/s> ratio=<x>``.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import _common as c

from connectrt.api.task import SinkTask
from connectrt.converters import JsonConverter, SimpleHeaderConverter, StringConverter
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.runtime.sink.runner import SinkTaskRunner
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.settings import SinkRunnerSettings
from connectrt.runtime.tasks.tap import MAX_RATE, TapSubscription
from connectrt.testing.fake_kafka import FakeMessage
from connectrt.transforms.chain import TransformationChain

BATCH = 500


class NoopSink(SinkTask):
    def start(self, props: dict[str, str]) -> None:
        pass

    def put(self, records: Any) -> None:
        pass

    def stop(self) -> None:
        pass


def _runner() -> SinkTaskRunner:
    key, value, header = StringConverter(), JsonConverter(), SimpleHeaderConverter()
    key.configure({}, True)
    value.configure({"schemas.enable": "false"}, False)
    header.configure({})
    chain: TransformationChain[Any] = TransformationChain(
        {
            "transforms": "insert",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "bench",
        }
    )
    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=TaskConverters(key, value, header),
        status=StatusBoard("bench"),
        offset_flush_interval_ms=3_600_000,
        transforms=chain,
        consumer_config={"group.id": "bench"},
    )
    return SinkTaskRunner(TaskId("bench", 0), NoopSink(), settings)


def _batches(n: int) -> list[list[FakeMessage]]:
    out = []
    for b in range(n):
        out.append(
            [
                FakeMessage(
                    "t",
                    0,
                    b * BATCH + i,
                    str(i).encode(),
                    json.dumps({"id": b * BATCH + i, "name": "item", "qty": i % 7}).encode(),
                )
                for i in range(BATCH)
            ]
        )
    return out


def _time(runner: SinkTaskRunner, batches: list[list[FakeMessage]], stage: str | None) -> float:
    sub = None
    if stage is not None:
        sub = TapSubscription(stage, MAX_RATE, size=1_000_000)
        runner.tap_into(sub)
    t0 = time.perf_counter()
    for msgs in batches:
        runner._handle(msgs)
    elapsed = time.perf_counter() - t0
    if sub is not None:
        runner.untap(sub)
    return len(batches) * BATCH / elapsed


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batches", type=int, default=400, help="batches of 500 per timing")
    parser.add_argument("--rounds", type=int, default=5)
    c.add_broker_option(parser, used=False)
    args = parser.parse_args()
    c.setup_logging()
    print(
        f"bench_tap: a sink runner's per-batch step, {args.batches} batches of {BATCH}, "
        f"{args.rounds} rounds after a warm-up, order rotating (median reported); {c.machine()}"
    )
    c.print_broker(None)
    tune_gc()
    runner = _runner()
    batches = _batches(args.batches)
    variants: list[tuple[str, str | None]] = [
        ("off", None),
        ("written", "written"),
        ("transform", "transform:0"),
    ]
    rates: dict[str, list[float]] = {name: [] for name, _ in variants}
    for round_ in range(args.rounds + 1):
        for name, stage in c.rotated(variants, round_):
            rate = _time(runner, batches, stage)
            if round_:  # round 0 warms up
                rates[name].append(rate)
                c.window(len(batches) * BATCH / rate)
        if round_:
            print(f"round {round_}: " + ", ".join(f"{n}={rates[n][-1]:,.0f}" for n, _ in variants))
    med = {n: statistics.median(r) for n, r in rates.items()}
    for n, r in med.items():
        print(f"{n:>9}: {r:,.0f} records/s ({r / med['off']:.3f} of off)")
    return med


if __name__ == "__main__":
    figures = main()
    c.result("bench_tap", figures["written"], figures["off"])
