"""File -> Kafka -> file pipeline: connectrt vs a hand-rolled orjson loop vs Quix Streams.

Design (the same shape for all three, so the figures compare like with like): a text file of
N lines (~100 chars) is read, each line is produced as a JSON envelope
``{"schema":{"type":"string","optional":false},"payload":<line>}`` (key None) to a
1-partition topic, consumed back, and the payload written as a line to an output file. Each
pipeline gets its own topics and runs alone, in this process, with both halves concurrent (on
2 cores, with the broker on the same machine):

* connectrt: an in-process ``Worker`` with ``FileStreamSource`` -> topic -> ``FileStreamSink``,
  ``JsonConverter`` (``schemas.enable=true``) for values and ``StringConverter`` for keys,
  runtime producer/consumer defaults;
* hand-rolled: a producer thread (read lines, ``orjson.dumps`` the envelope, ``produce()``
  with the runtime's producer defaults) and a consumer thread (``consume(500)``,
  ``orjson.loads``, write the payload lines) using the runtime's consumer defaults;
* Quix Streams: the same producer thread serializing through a Quix ``Topic``
  (``value_serializer="json"``) and Quix's producer, and an ``Application`` whose
  ``StreamingDataFrame`` over the topic (``value_deserializer="json"``) writes each payload
  line to the output file (a buffered file write in ``sdf.update``, flushed at the end; like
  the FileStream sink, which writes in ``put()`` and flushes on commit). Quix's own client
  defaults are kept, except the group-join settings and ``auto.offset.reset=earliest``.
  Quix runs its consumer loop in the main thread, so the producer runs in a second thread.

Why file -> topic -> file and not topic -> topic: the FileStream connectors are what connectrt
ships, and a connectrt topic -> topic pass-through needs a sink that produces, which would mostly
measure that custom sink. File -> topic -> file exercises both runtime halves and converters.

The consumer side starts first and its group join is excluded: the clock starts when the
consumer is assigned (connectrt, hand-rolled) or has seen a warm-up record (Quix, where the
warm-up record is produced before the timed lines), and stops when the N-th line has been
handed to the output file. The output is checked line by line afterwards.
Targets: connectrt >= 0.8 x hand-rolled and >= 3 x Quix Streams.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common as c
import orjson
from confluent_kafka import Consumer, Producer

SCHEMA = {"type": "string", "optional": False}


def write_input(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            f.write(f"line {i:09d} " + os.urandom(43).hex() + "\n")  # 101 chars + newline


def check_output(inp: Path, out: Path, n: int) -> None:
    with inp.open() as a, out.open() as b:
        got = 0
        for la, lb in zip(a, b, strict=False):
            if la != lb:
                raise RuntimeError(f"{out.name}: line {got} differs: {la!r} != {lb!r}")
            got += 1
    if got != n:
        raise RuntimeError(f"{out.name}: {got} lines, expected {n}")


# -- connectrt ------------------------------------------------------------------------------
def run_connectrt(bs: str, inp: Path, out: Path, n: int, rnd: int) -> float:
    topic = f"crt-lines-{rnd}"
    props = c.worker_props(
        bs,
        **{
            "key.converter": c.STRING,
            "value.converter": c.JSON,
            "value.converter.schemas.enable": "true",
            "offset.flush.interval.ms": "5000",
        },
    )
    worker = c.make_worker(props)
    try:
        worker.start_connector(
            f"file-sink-{rnd}",
            {
                "connector.class": "FileStreamSink",
                "tasks.max": "1",
                "topics": topic,
                "file": str(out),
            },
        )
        c.wait_for(lambda: bool(worker.runners(f"file-sink-{rnd}")), 30, "sink runner")
        sink = worker.runners(f"file-sink-{rnd}")[0]
        c.wait_for(lambda: bool(sink.assigned), 60, "sink partition assignment", 0.01)
        t0 = time.perf_counter()
        worker.start_connector(
            f"file-source-{rnd}",
            {
                "connector.class": "FileStreamSource",
                "tasks.max": "1",
                "topic": topic,
                "file": str(inp),
            },
        )
        c.wait_for(lambda: sink.metrics.records_put >= n, 600, "sink to put all lines", 0.002)
        elapsed = time.perf_counter() - t0
        if sink.failed:
            raise RuntimeError(f"sink failed: {sink.failed!r}")
    finally:
        worker.stop()  # the sink task flushes and closes the file
    return elapsed


# -- shared producer thread (hand-rolled and Quix) ------------------------------------------
def produce_lines(inp: Path, produce: Any, poll: Any, flush: Any, encode: Any) -> None:
    with inp.open("r", encoding="utf-8") as f:
        for i, line in enumerate(f):
            value = encode(line[:-1])
            while True:
                try:
                    produce(value)
                    break
                except BufferError:
                    poll(0.05)
            if i % 2000 == 0:
                poll(0)
    if flush(60):
        raise RuntimeError("producer: records not acknowledged")


# -- hand-rolled ----------------------------------------------------------------------------
def run_hand_rolled(bs: str, inp: Path, out: Path, n: int, rnd: int) -> float:
    topic = f"raw-lines-{rnd}"
    assigned = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []
    result: dict[str, float] = {}

    def consume() -> None:
        try:
            consumer = Consumer(c.consumer_settings(bs, f"raw-pipeline-{rnd}"))
            consumer.subscribe([topic], on_assign=lambda cons, parts: assigned.set())
            loads = orjson.loads
            count = 0
            with out.open("w", encoding="utf-8") as f:
                while count < n:
                    msgs = consumer.consume(500, 0.5)
                    lines = []
                    for m in msgs:
                        if m.error() is None:
                            lines.append(loads(m.value())["payload"])
                    if lines:
                        f.write("\n".join(lines))
                        f.write("\n")
                        count += len(lines)
                result["end"] = time.perf_counter()
            consumer.close()
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    t = threading.Thread(target=consume, name="raw-consumer")
    t.start()
    if not assigned.wait(60):
        raise TimeoutError("hand-rolled consumer not assigned")
    producer = Producer(c.producer_settings(bs))
    t0 = time.perf_counter()
    dumps = orjson.dumps
    produce_lines(
        inp,
        lambda v: producer.produce(topic, v),
        producer.poll,
        producer.flush,
        lambda line: dumps({"schema": SCHEMA, "payload": line}),
    )
    done.wait(600)
    t.join()
    if errors:
        raise errors[0]
    return result["end"] - t0


# -- Quix Streams ---------------------------------------------------------------------------
def run_quix(bs: str, inp: Path, out: Path, n: int, rnd: int, state_dir: str) -> float:
    import logging
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # authlib deprecation warnings, via quixstreams
        from quixstreams import Application

    app = Application(
        broker_address=bs,
        consumer_group=f"quix-pipeline-{rnd}",
        auto_offset_reset="earliest",
        consumer_extra_config=dict(c.FAST_GROUP),
        state_dir=state_dir,
        loglevel="WARNING",
        use_changelog_topics=False,
    )
    logging.getLogger("quixstreams").setLevel(logging.WARNING)
    topic = app.topic(f"quix-lines-{rnd}", value_deserializer="json", value_serializer="json")
    warm = threading.Event()
    result: dict[str, float] = {}
    f = out.open("w", encoding="utf-8")
    count = 0

    def write(value: dict[str, Any]) -> None:
        nonlocal count
        payload = value["payload"]
        if payload == "__warmup__":
            warm.set()
            return
        f.write(payload)
        f.write("\n")
        count += 1
        if count == n:
            result["end"] = time.perf_counter()
            app.stop()

    sdf = app.dataframe(topic)
    sdf.update(write)
    errors: list[BaseException] = []

    def ingest() -> None:
        try:
            with app.get_producer() as producer:

                def produce(value: bytes) -> None:
                    producer.produce(topic.name, value)

                def encode(line: str) -> bytes:
                    value = topic.serialize(
                        key=None, value={"schema": SCHEMA, "payload": line}
                    ).value
                    assert isinstance(value, bytes)
                    return value

                produce(encode("__warmup__"))
                producer.flush(30)
                if not warm.wait(120):
                    raise TimeoutError("Quix app did not see the warm-up record")
                result["start"] = time.perf_counter()
                produce_lines(inp, produce, producer.poll, producer.flush, encode)
        except BaseException as e:
            errors.append(e)
            app.stop()

    t = threading.Thread(target=ingest, name="quix-ingest")
    t.start()
    app.run()
    t.join()
    f.close()
    if errors:
        raise errors[0]
    return result["end"] - result["start"]


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="lines per pipeline per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-quix", action="store_true")
    args = ap.parse_args()
    c.setup_logging()
    n = args.records
    print(
        f"bench_file_pipeline: {n:,} lines of 101 chars per pipeline, {args.rounds} rounds "
        f"(median reported); {c.machine()}"
    )
    from connectrt.broker import EmbeddedBroker

    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="crt-bench-") as tmp, EmbeddedBroker() as broker:
        d = Path(tmp)
        bs = broker.bootstrap_servers
        c.create_topics(
            bs,
            {f"{p}-lines-{r}": 1 for p in ("crt", "raw", "quix") for r in range(args.rounds)},
        )
        inp = d / "input.txt"
        write_input(inp, n)
        for r in range(args.rounds):
            for name, fn in (
                ("hand-rolled orjson", lambda o, r=r: run_hand_rolled(bs, inp, o, n, r)),
                ("connectrt FileStream", lambda o, r=r: run_connectrt(bs, inp, o, n, r)),
                ("Quix Streams", lambda o, r=r: run_quix(bs, inp, o, n, r, str(d / f"quix-{r}"))),
            ):
                if name == "Quix Streams" and args.skip_quix:
                    continue
                o = d / f"out-{name.split()[0]}-{r}.txt"
                secs = fn(o)
                check_output(inp, o, n)
                o.unlink()
                times.setdefault(name, []).append(secs)
                print(
                    f"  round {r} {name}: {c.rate(n, secs):,.0f} lines/s (output verified)",
                    flush=True,
                )
    rows = [(name, n, statistics.median(ts)) for name, ts in times.items()]
    rates = c.report("file -> Kafka (JSON envelope) -> file (median round)", rows)
    crt, raw = rates["connectrt FileStream"], rates["hand-rolled orjson"]
    out = {"connectrt": crt, "hand_rolled": raw, "ratio_hand_rolled": crt / raw}
    print(f"  ratio connectrt/hand-rolled = {crt / raw:.2f}  (target >= 0.80)")
    if "Quix Streams" in rates:
        quix = rates["Quix Streams"]
        out.update({"quix": quix, "ratio_quix": crt / quix})
        print(f"  ratio connectrt/Quix Streams = {crt / quix:.2f}  (target >= 3.0)")
    return out


if __name__ == "__main__":
    result = main()
    if result:
        c.emit("bench_file_pipeline", result)
