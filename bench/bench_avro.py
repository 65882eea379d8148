"""Avro pass-through: connectrt's AvroConverter in real tasks vs a hand-rolled fastavro loop.

Records: N ``orders`` from the datagen quickstart (seeded; nested record, decimal, timestamp),
made once before any timing, as Connect ``Struct``s for connectrt and as the equivalent plain
dicts (``datetime``/``Decimal`` values, fastavro does the logical conversions) for the loop.
A standalone built-in schema registry serves both sides; a middleware counts the HTTP requests
it receives.

* produce: hand-rolled = ``schemaless_writer`` into a ``BytesIO`` after the 5-byte Confluent
  header (schema registered once up front) + ``Producer.produce``, final ``flush()``;
  connectrt = a real in-process ``Worker`` running a source task that returns the pre-made
  ``SourceRecord``s (batches of 2000) with ``value.converter=AvroConverter``; clock from its
  first ``poll()`` to the task stopped after its final commit (= all acknowledged).
  Both producers first send one warm-up record and the clock starts once it is acknowledged
  (the hand-rolled loop flushes it; the source task waits until the bench reads it back):
  librdkafka's idempotent producer holds everything until it has its producer id, which on
  this broker took a fixed ~1 s after creation in some runs and not others.
* consume (the topic connectrt produced): hand-rolled = ``consume(500)`` + header check +
  ``schemaless_reader`` with the writer schema looked up once per id; connectrt = a ``Worker``
  running ``bench.connectors.NoopSink`` with ``value.converter=AvroConverter`` (values arrive
  in ``put()`` as ``Struct``s); clock from first record to the N-th (group join excluded).
* pass-through = N / (produce time + consume time) per side; target >= 0.85 x hand-rolled.

Alternating rounds (``--rounds``, 5 by default), the order of the two sides rotating each round
in each phase; medians. The RESULT line is the pass-through.

The pre-made records are frozen out of the garbage collector (``gc.freeze()``) before timing,
and the worker's GC setting (:mod:`connectrt.runtime.executors.gc_tuning`) applies to both sides.
Also: the converter alone (µs/record each way vs fastavro alone), registry lookups by id per
second over HTTP (uncached, keep-alive client), and the registry requests received while the
converter runs in steady state (expected: 0) and during each worker phase (the first lookup).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import statistics
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any

import _common as c
import fastavro
import httpx
from confluent_kafka import Consumer, Producer

from bench.connectors import PROGRESS, progress
from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task
from connectrt.data import Struct
from connectrt.runtime.executors.gc_tuning import tune_gc

AVRO = "io.confluent.connect.avro.AvroConverter"
SCHEMA_FILE = c.ROOT / "schemas" / "orders.avsc"
HEADER = struct.Struct(">bI")

RECORDS: list[SourceRecord] = []
"""The pre-made records the source task returns (set before the worker starts)."""

WARMED = threading.Event()
"""Set by the bench once the source task's warm-up record is readable (its producer is up)."""


class PreMadeSourceConnector(SourceConnector):
    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return "bench"

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return PreMadeSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass


class PreMadeSourceTask(SourceTask):
    """Returns one warm-up tombstone to ``warmup.topic``, waits for ``WARMED``, then returns
    ``RECORDS`` in batches of 2000, then idles."""

    def start(self, config: Mapping[str, str]) -> None:
        self._next = 0
        self._progress = progress(config["bench.id"], len(RECORDS))
        self._stopping = threading.Event()
        self._warmup_topic: str | None = config["warmup.topic"]

    def poll(self) -> list[SourceRecord] | None:
        if self._warmup_topic is not None:
            topic, self._warmup_topic = self._warmup_topic, None
            return [SourceRecord(None, None, topic, None, None, None, None, None)]
        if not WARMED.is_set():
            WARMED.wait(0.05)
            return None
        if self._next >= len(RECORDS):
            self._stopping.wait(0.2)
            return None
        p = self._progress
        if p.first is None:
            p.first = time.perf_counter()
        batch = RECORDS[self._next : self._next + 2000]
        self._next += len(batch)
        if self._next >= len(RECORDS):
            p.last = time.perf_counter()
            p.done.set()
        return batch

    def stop(self) -> None:
        self._stopping.set()


def to_datum(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: to_datum(value.get(f)) for f in value.schema.fields}
    return value


def make_records(n: int, topic: str) -> tuple[list[SourceRecord], list[dict[str, Any]]]:
    from connectors.datagen.config import CONFIG_DEF, load_schema

    loaded = load_schema(CONFIG_DEF.parse({"kafka.topic": topic, "quickstart": "orders"}))
    import random

    rng = random.Random(1)
    structs = [loaded.generate(rng, i) for i in range(n)]
    part = {"bench": "avro"}
    records = [
        SourceRecord(part, {"n": i}, topic, None, None, None, loaded.schema, s)
        for i, s in enumerate(structs)
    ]
    return records, [to_datum(s) for s in structs]


# ---------------------------------------------------------------------------------- registry


class Registry:
    """The built-in registry on its own listener, counting the requests it receives."""

    def __init__(self, bootstrap: str) -> None:
        from connectrt.schema_registry.server import SchemaRegistryServer

        self.server = SchemaRegistryServer(
            bootstrap, c.topic("_schemas_bench"), "http://127.0.0.1:0"
        )
        self.requests = 0

        @self.server.app.middleware("http")
        async def count(request: Any, call_next: Any) -> Any:
            self.requests += 1
            return await call_next(request)

        self.server.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.stop()


# ---------------------------------------------------------------------------------- produce


def raw_produce(bootstrap: str, topic: str, datums: list[dict[str, Any]], schema_id: int) -> float:
    parsed = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    header = HEADER.pack(0, schema_id)
    producer = Producer(c.producer_settings(bootstrap))
    produce, poll = producer.produce, producer.poll
    writer = fastavro.schemaless_writer
    producer.produce(topic, None)  # warm-up: the idempotent producer's id is acquired
    if producer.flush(60):
        raise RuntimeError("raw producer: warm-up record not acknowledged")
    t0 = time.perf_counter()
    for i, datum in enumerate(datums):
        buf = io.BytesIO()
        buf.write(header)
        writer(buf, parsed, datum)
        value = buf.getvalue()
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.05)
        if i % 2000 == 1999:
            poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - t0
    if remaining:
        raise RuntimeError(f"raw producer: {remaining} records not acknowledged")
    return elapsed


def connectrt_produce(
    bootstrap: str, topic: str, url: str, rnd: str
) -> tuple[float, dict[str, Any]]:
    name, bench_id = f"avro-source-{rnd}", f"avrosrc{rnd}"
    warmup = f"{topic}-warmup"
    c.create_topics(bootstrap, {warmup: 1})
    WARMED.clear()
    for r in RECORDS:
        r.topic = topic
    worker = c.make_worker(c.worker_props(bootstrap))
    try:
        worker.start_connector(
            name,
            {
                "connector.class": f"{__name__}.PreMadeSourceConnector",
                "tasks.max": "1",
                "bench.id": bench_id,
                "warmup.topic": warmup,
                "value.converter": AVRO,
                "value.converter.schema.registry.url": url,
            },
        )
        c.await_one_record(bootstrap, warmup)
        WARMED.set()
        c.wait_for(lambda: bench_id in PROGRESS, 30, "source task start")
        p = PROGRESS[bench_id]
        if not p.done.wait(600):
            raise TimeoutError("source task did not emit all records")
        runner = worker.runners(name)[0]
        runner.stop()  # final commit: flush() until every record is acknowledged
        runner.join(120)
        end = time.perf_counter()
        m = runner.metrics
        if runner.failed or m.records_produced != len(RECORDS) + 1:  # + the warm-up record
            raise RuntimeError(f"source task: failed={runner.failed!r} metrics={m}")
        assert p.first is not None
        return end - p.first, m.snapshot()
    finally:
        worker.stop()


# ---------------------------------------------------------------------------------- consume


def raw_consume(bootstrap: str, topic: str, n: int, url: str, group: str) -> float:
    """Writer schemas fetched from the registry once per id (as any real consumer would)."""
    readers: dict[int, Any] = {}
    http = httpx.Client(base_url=url)
    consumer = Consumer(c.consumer_settings(bootstrap, group))
    consumer.subscribe([topic])
    reader = fastavro.schemaless_reader
    unpack = HEADER.unpack_from
    count = 0
    first = 0.0
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
                if m.error() is not None:
                    continue
                data = m.value()
                assert data is not None
                magic, schema_id = unpack(data)
                if magic != 0:
                    raise ValueError("not Confluent Avro")
                parsed = readers.get(schema_id)
                if parsed is None:
                    text = http.get(f"/schemas/ids/{schema_id}").json()["schema"]
                    parsed = readers[schema_id] = fastavro.parse_schema(json.loads(text))
                buf = io.BytesIO(data)
                buf.seek(5)
                reader(buf, parsed, None)
                count += 1
        return time.perf_counter() - first
    finally:
        consumer.close()
        http.close()


def connectrt_consume(
    bootstrap: str, topic: str, n: int, url: str, rnd: str
) -> tuple[float, dict[str, Any]]:
    name, bench_id = f"avro-sink-{rnd}", f"avrosink{rnd}"
    worker = c.make_worker(c.worker_props(bootstrap))
    try:
        config = {"value.converter": AVRO, "value.converter.schema.registry.url": url}
        p = c.start_noop_sink(worker, name, bench_id, topic, n, config, 300)
        assert p.first is not None and p.last is not None
        runner = worker.runners(name)[0]
        return p.last - p.first, runner.metrics.snapshot()
    finally:
        worker.stop()


# --------------------------------------------------------------------------- converter alone


def converter_alone(
    registry: Registry, datums: list[dict[str, Any]], topic: str
) -> dict[str, float]:
    from connectrt.converters.avro import AvroConverter

    conv = AvroConverter()
    conv.configure({"schema.registry.url": registry.url}, False)
    parsed = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    n = len(RECORDS)
    try:
        # warm-up: the schema is registered (or found) and its id cached
        first = conv.from_connect_data(topic, RECORDS[0].value_schema, RECORDS[0].value)
        assert first is not None
        conv.to_connect_data(topic, first)
        before = registry.requests
        t0 = time.perf_counter()
        encoded = [conv.from_connect_data(topic, r.value_schema, r.value) for r in RECORDS]
        t1 = time.perf_counter()
        for data in encoded:
            conv.to_connect_data(topic, data)
        t2 = time.perf_counter()
        steady_requests = registry.requests - before
    finally:
        conv.close()
    t3 = time.perf_counter()
    raw = []
    for datum in datums:
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0\1")
        fastavro.schemaless_writer(buf, parsed, datum)
        raw.append(buf.getvalue())
    t4 = time.perf_counter()
    for data in raw:
        buf = io.BytesIO(data)
        buf.seek(5)
        fastavro.schemaless_reader(buf, parsed, None)
    t5 = time.perf_counter()
    us = 1e6 / n
    out = {
        "conv_write_us": (t1 - t0) * us,
        "conv_read_us": (t2 - t1) * us,
        "fastavro_write_us": (t4 - t3) * us,
        "fastavro_read_us": (t5 - t4) * us,
        "steady_state_registry_requests": float(steady_requests),
    }
    print(f"\n== converter alone, {n:,} orders (in process, no Kafka)")
    print(
        f"  AvroConverter.from_connect_data {out['conv_write_us']:.1f} us/rec vs fastavro "
        f"schemaless_writer {out['fastavro_write_us']:.1f} us/rec"
    )
    print(
        f"  AvroConverter.to_connect_data   {out['conv_read_us']:.1f} us/rec vs fastavro "
        f"schemaless_reader {out['fastavro_read_us']:.1f} us/rec"
    )
    print(
        f"  registry requests received during {2 * n:,} steady-state conversions: {steady_requests}"
    )
    return out


def registry_lookups(registry: Registry, schema_id: int, count: int) -> float:
    with httpx.Client(base_url=registry.url) as http:
        http.get(f"/schemas/ids/{schema_id}").raise_for_status()
        t0 = time.perf_counter()
        for _ in range(count):
            resp = http.get(f"/schemas/ids/{schema_id}")
            if resp.status_code != 200:
                raise RuntimeError(resp.text)
        elapsed = time.perf_counter() - t0
    rate = count / elapsed
    print(f"\n== registry: GET /schemas/ids/{schema_id} x {count:,} (keep-alive httpx client)")
    print(f"  {rate:,.0f} lookups/s ({elapsed / count * 1e3:.2f} ms each)")
    return rate


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000, help="orders per side per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lookups", type=int, default=2000, help="registry lookups by id")
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    n = args.records
    print(
        f"bench_avro: {n:,} datagen orders per side, {args.rounds} alternating rounds (median "
        f"reported); {c.machine()}"
    )
    c.print_broker(args.broker)
    from connectrt.runtime.plugins.registry import registry as plugins

    plugins.register_class(PreMadeSourceConnector)
    records, datums = make_records(n, "unset")
    RECORDS[:] = records
    # The pre-made records (2 x N objects trees) are the harness's, not the system's: keep
    # them out of the garbage collector's scans so neither side pays for them.
    gc.collect()
    gc.freeze()
    # The worker raises the young-generation GC threshold when it starts (process-wide):
    # apply it up front so the hand-rolled loops run under the same setting in every round.
    tune_gc()
    prod: tuple[list[float], list[float]] = ([], [])
    cons: tuple[list[float], list[float]] = ([], [])
    phase_requests: list[int] = []
    with c.open_broker(args.broker) as broker:
        bs = broker.bootstrap_servers
        registry = Registry(bs)
        try:
            schema_text = SCHEMA_FILE.read_text()
            for r in range(args.rounds):
                raw_topic, crt_topic = c.topic(f"avro-raw-{r}"), c.topic(f"avro-crt-{r}")
                c.create_topics(bs, {raw_topic: 1, crt_topic: 1})
                sid = httpx.post(
                    f"{registry.url}/subjects/{raw_topic}-value/versions",
                    json={"schema": schema_text},
                ).json()["id"]
                # Each phase's two sides in an order rotating each round; the consumers read
                # the topic connectrt produced, so the produce phase comes first.
                for side in c.rotated(("raw", "connectrt"), r):
                    if side == "raw":
                        prod[0].append(c.window(raw_produce(bs, raw_topic, datums, sid)))
                    else:
                        before = registry.requests
                        t, _ = connectrt_produce(bs, crt_topic, registry.url, str(r))
                        phase_requests.append(registry.requests - before)
                        prod[1].append(c.window(t))
                for side in c.rotated(("raw", "connectrt"), r):
                    if side == "raw":
                        cons[0].append(
                            c.window(raw_consume(bs, crt_topic, n, registry.url, f"raw-avro-{r}"))
                        )
                    else:
                        before = registry.requests
                        t, _ = connectrt_consume(bs, crt_topic, n, registry.url, str(r))
                        phase_requests.append(registry.requests - before)
                        cons[1].append(c.window(t))
                print(
                    f"  round {r}: produce raw {c.rate(n, prod[0][-1]):,.0f} / connectrt "
                    f"{c.rate(n, prod[1][-1]):,.0f} rec/s; consume raw "
                    f"{c.rate(n, cons[0][-1]):,.0f} / connectrt {c.rate(n, cons[1][-1]):,.0f} "
                    "rec/s",
                    flush=True,
                )
            alone = converter_alone(registry, datums, c.topic("avro-alone"))
            crt_schema_id = _latest_id(registry.url, f"{c.topic('avro-crt-0')}-value")
            lookups = registry_lookups(registry, crt_schema_id, args.lookups)
        finally:
            registry.stop()
    p_raw, p_crt = statistics.median(prod[0]), statistics.median(prod[1])
    c_raw, c_crt = statistics.median(cons[0]), statistics.median(cons[1])
    rates = c.report(
        "Avro orders (median round)",
        [
            ("produce: hand-rolled fastavro", n, p_raw),
            ("produce: connectrt source", n, p_crt),
            ("consume: hand-rolled fastavro", n, c_raw),
            ("consume: connectrt sink", n, c_crt),
            ("pass-through: hand-rolled", n, p_raw + c_raw),
            ("pass-through: connectrt", n, p_crt + c_crt),
        ],
    )
    ratio = rates["pass-through: connectrt"] / rates["pass-through: hand-rolled"]
    p_ratio = rates["produce: connectrt source"] / rates["produce: hand-rolled fastavro"]
    c_ratio = rates["consume: connectrt sink"] / rates["consume: hand-rolled fastavro"]
    print(f"  ratio produce {p_ratio:.2f}, consume {c_ratio:.2f}")
    print(f"  ratio pass-through connectrt/hand-rolled = {ratio:.2f}  (target >= 0.85)")
    print(
        "  registry requests during the worker phases (each starts a fresh converter: the "
        f"first register/lookup only): {phase_requests}"
    )
    return {
        "produce_raw": rates["produce: hand-rolled fastavro"],
        "produce_connectrt": rates["produce: connectrt source"],
        "consume_raw": rates["consume: hand-rolled fastavro"],
        "consume_connectrt": rates["consume: connectrt sink"],
        "passthrough_raw": rates["pass-through: hand-rolled"],
        "passthrough_connectrt": rates["pass-through: connectrt"],
        "ratio": ratio,
        "registry_lookups_per_s": lookups,
        "steady_state_registry_requests": alone["steady_state_registry_requests"],
        "phase_registry_requests_max": float(max(phase_requests)),
    }


def _latest_id(url: str, subject: str) -> int:
    return int(httpx.get(f"{url}/subjects/{subject}/versions/latest").json()["id"])


if __name__ == "__main__":
    figures = main()
    c.result("bench_avro", figures["passthrough_connectrt"], figures["passthrough_raw"])
