"""JSON converter writes, converter alone: connectrt's JsonConverter against Kafka Connect's own
(``org.apache.kafka.connect.json.JsonConverter``, Java, connect-json 4.4.0 from Maven Central),
per record, on the same generated records.

No broker: each side converts in process. ``--broker`` is accepted (run_all.py passes it) and
ignored. Needs Java 17+ with javac, and Maven unless connect-json's jars are cached (the
differential test's, :mod:`connectrt.testing.connect_json_jars`).

Records (seeded): N of ``{id: int64, name: string (one in ten with non-ASCII letters), score:
float64, active: boolean, count: optional int32 (one in five null)}``, written to a file the
Java side reads, so both convert the same values. Three cases:

* ``schemaless_map``: ``schemas.enable=false``, no schema, the record as a map (dict);
* ``schemaless_struct``: ``schemas.enable=false``, the record as a Struct with its schema;
* ``schema_struct``: ``schemas.enable=true`` (the default), the same Struct, in an envelope.

Java (``bench/java/JsonWriteBench.java``, compiled here against the same jars): one JVM for the
run, ``fromConnectData`` per record, a JIT warm-up of ``--warmup-passes`` passes over every case
before any clock. connectrt: as the source runtime calls it on its hot path
(:class:`~connectrt.runtime.source.sender.SourceBatchSender`): ``from_connect_values`` per batch
of ``--batch`` values of one schema, and ``from_connect_data`` per value (each result dropped
at once, as ``produce`` copies it) where that answers None; one warm-up pass per case first.
Before any clock the bytes of both sides are compared for every record of every case (a bench
of a converter that writes other bytes measures nothing).

Rounds (``--rounds``, 5 by default): each case runs both sides, ``--passes`` passes over all
records each, in an order rotating per round. Per side and case, the median over rounds of the
time per record: the wall clock and the converting thread's CPU time (``time.thread_time``,
Java's ``ThreadMXBean``; the JVM's JIT and GC threads are not in it), printed per case.

The RESULT line: the case where connectrt is slowest relative to Java, by the medians of
``--clock`` (``cpu``, the default: the converting thread's CPU time, which a machine shared with
other work leaves nearly intact where it stretches the wall clock severalfold; or ``wall``):
connectrt = its records/s, baseline = Java's. The target is ratio >= 0.667 (connectrt's time
per record within 1.5x of Java's).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

from connectrt.converters.json import JsonConverter
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.testing.connect_json_jars import connect_json_classpath
from connectrt.testing.java_runtime import require_java

CASES = ("schemaless_map", "schemaless_struct", "schema_struct")
SIDES = ("connectrt", "java")
TOPIC = "t"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "JsonWriteBench.java"
JVM_OPTIONS = ("-Xms256m", "-Xmx2g")  # Kafka Connect's connect-distributed.sh heap

SCHEMA = (
    SchemaBuilder.struct()
    .name("bench.Record")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("score", Schema.FLOAT64_SCHEMA)
    .field("active", Schema.BOOLEAN_SCHEMA)
    .field("count", Schema.OPTIONAL_INT32_SCHEMA)
    .build()
)


def generate(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` records as dicts in field order (seeded)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        name = f"user-{rnd.randrange(10**6)}" if i % 10 else f"Zoë Müller-{i}"
        out.append(
            {
                "id": 1_700_000_000_000 + i,
                "name": name,
                "score": round(rnd.uniform(0.01, 50_000.0), rnd.choice((2, 6, 12))),
                "active": rnd.random() < 0.5,
                "count": None if i % 5 == 0 else rnd.randrange(-1000, 100_000),
            }
        )
    return out


class JavaSide:
    """JsonWriteBench in one JVM, driven over its stdin (see its header comment)."""

    def __init__(self, records_file: Path, workdir: Path) -> None:
        java = require_java()
        javac = shutil.which("javac", path=str(Path(java).resolve().parent)) or shutil.which(
            "javac"
        )
        if javac is None:
            raise SystemExit("no javac (a JDK 17+) to compile the Java side")
        classpath = f"{connect_json_classpath()}/*"
        subprocess.run(
            [javac, "-nowarn", "-cp", classpath, "-d", str(workdir), str(JAVA_SOURCE)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        command = [java, *JVM_OPTIONS, "-cp", f"{classpath}:{workdir}", "JsonWriteBench"]
        self.proc = subprocess.Popen(
            [*command, str(records_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise SystemExit(f"the Java side ended (exit code {self.proc.wait(timeout=30)})")
        return answer.strip()

    def run(self, case: str, passes: int) -> tuple[float, float]:
        """(wall seconds, thread CPU seconds) of ``passes`` passes over the records."""
        wall, cpu, _ = self._ask(f"run {case} {passes}").split()
        return int(wall) / 1e9, int(cpu) / 1e9

    def dump(self, case: str, path: Path) -> list[bytes]:
        assert self._ask(f"dump {case} {path}") == "ok"
        return [base64.b64decode(line) for line in path.read_text().splitlines()]

    def close(self) -> None:
        self._ask_quietly()
        self.proc.wait(timeout=60)

    def _ask_quietly(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()


class PythonSide:
    """connectrt's JsonConverter, called as the source runtime calls it."""

    def __init__(self, records: list[dict[str, Any]], batch: int) -> None:
        structs = [_struct(r) for r in records]
        self.values: dict[str, list[Any]] = {
            "schemaless_map": records,
            "schemaless_struct": structs,
            "schema_struct": structs,
        }
        self.batch = batch

    @staticmethod
    def converter(case: str) -> JsonConverter:
        conv = JsonConverter()
        conv.configure({"schemas.enable": str(case == "schema_struct").lower()}, is_key=False)
        return conv

    def convert(self, case: str, conv: JsonConverter, sink: Callable[[bytes | None], Any]) -> None:
        """One pass over the records, each result handed to ``sink`` (the clocked pass drops
        them)."""
        values = self.values[case]
        schema = None if case == "schemaless_map" else SCHEMA
        size = self.batch
        batches = True
        for start in range(0, len(values), size):
            chunk = values[start : start + size]
            converted = conv.from_connect_values(TOPIC, schema, chunk) if batches else None
            if converted is None:
                batches = False  # the runtime stops asking after a None
                one = conv.from_connect_data
                for v in chunk:
                    sink(one(TOPIC, schema, v))
            else:
                for b in converted:
                    sink(b)

    def run(self, case: str, passes: int) -> tuple[float, float]:
        conv = self.converter(case)
        self.convert(case, conv, _drop)  # the schema's plan compiled, as in a running task
        values = self.values[case]
        schema = None if case == "schemaless_map" else SCHEMA
        size = self.batch
        chunks = [values[s : s + size] for s in range(0, len(values), size)]
        batch = conv.from_connect_values
        one = conv.from_connect_data
        cpu0 = time.thread_time()
        t0 = time.perf_counter()
        for _ in range(passes):
            for chunk in chunks:
                converted = batch(TOPIC, schema, chunk)
                if converted is None:
                    for v in chunk:
                        one(TOPIC, schema, v)
                del converted
        return c.window(time.perf_counter() - t0), time.thread_time() - cpu0


def _drop(_: Any) -> None:
    pass


def _struct(record: dict[str, Any]) -> Struct:
    s = Struct(SCHEMA)
    for k, v in record.items():
        s.put(k, v)
    return s


def check_bytes(py: PythonSide, java: JavaSide, workdir: Path) -> None:
    """Every record's bytes, both sides, every case: identical, or the bench stops."""
    for case in CASES:
        mine: list[bytes | None] = []
        py.convert(case, py.converter(case), mine.append)
        theirs = java.dump(case, workdir / f"{case}.b64")
        differ = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
        if differ:
            i = differ[0]
            raise SystemExit(
                f"{case}: {len(differ)} records written differently, e.g. #{i}: "
                f"connectrt {mine[i]!r}, Kafka Connect {theirs[i]!r}"
            )
        print(f"{case}: {len(mine)} records, bytes identical to Kafka Connect's", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1000, help="values per from_connect_values")
    ap.add_argument("--passes", type=int, default=200, help="passes over the records per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup-passes", type=int, default=40, help="Java's JIT warm-up")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="for the RESULT")
    c.add_broker_option(ap, used=False)
    args = ap.parse_args()
    print(c.machine(), flush=True)
    tune_gc()  # the worker's GC setting
    records = generate(args.records, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-json-") as tmp:
        workdir = Path(tmp)
        records_file = workdir / "records.jsonl"
        records_file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        java = JavaSide(records_file, workdir)
        try:
            py = PythonSide(records, args.batch)
            gc.freeze()  # the records live for the run, as a batch does for its conversion
            check_bytes(py, java, workdir)
            for case in CASES:
                java.run(case, args.warmup_passes)
            times: dict[tuple[str, str], list[tuple[float, float]]] = {
                (case, side): [] for case in CASES for side in SIDES
            }
            n = args.records * args.passes
            for r in range(args.rounds):
                for case in CASES:
                    for side in c.rotated(SIDES, r + CASES.index(case)):
                        runner = py if side == "connectrt" else java
                        wall, cpu = runner.run(case, args.passes)
                        times[case, side].append((wall / n, cpu / n))
        finally:
            java.close()
    print(f"per record, median of {args.rounds} rounds of {n} records (us):", flush=True)
    worst: tuple[float, str, float, float] | None = None
    for case in CASES:
        py_wall = statistics.median(w for w, _ in times[case, "connectrt"])
        py_cpu = statistics.median(t for _, t in times[case, "connectrt"])
        j_wall = statistics.median(w for w, _ in times[case, "java"])
        j_cpu = statistics.median(t for _, t in times[case, "java"])
        print(
            f"  {case}: connectrt {py_wall * 1e6:.3f} wall / {py_cpu * 1e6:.3f} cpu, "
            f"Kafka Connect {j_wall * 1e6:.3f} / {j_cpu * 1e6:.3f}; connectrt's time "
            f"{py_wall / j_wall:.2f}x Java's (cpu {py_cpu / j_cpu:.2f}x)",
            flush=True,
        )
        mine, theirs = (py_cpu, j_cpu) if args.clock == "cpu" else (py_wall, j_wall)
        if worst is None or theirs / mine < worst[0]:
            worst = (theirs / mine, case, mine, theirs)
    assert worst is not None
    _, case, mine, theirs = worst
    print(f"slowest relative to Java ({args.clock} time): {case}", flush=True)
    c.result("bench_json_vs_kafka_connect", 1 / mine, 1 / theirs)


if __name__ == "__main__":
    main()
