"""connectrt beside Kafka Connect 4.4 on one Apache Kafka broker: FileStream source and sink.

Both workers run the whole time, each in a process of its own, on the same broker and with the
same worker settings (distributed mode, their own group and internal topics, StringConverter
keys, ``offset.flush.interval.ms`` 10 s, client defaults untouched on both: each side's producer
and consumer are its own defaults, which connectrt takes from Kafka Connect's):

* Kafka Connect 4.4.0 from its Maven jars (:mod:`connectrt.testing.kafka_connect`, its
  ``connect-file`` 4.3.1 plugin with the ``AppInfoParser`` shim), heap 1 GB;
* connectrt, ``connectrt worker worker.properties`` (``python -m connectrt.cli``).

Cases, each with 1 task and N lines of 101 characters:

* ``source_string`` / ``source_json``: a FileStreamSource reads a file of N lines into a fresh
  one-partition topic (``value.converter`` StringConverter, or JsonConverter with schemas, the
  envelope Kafka Connect writes);
* ``sink_string`` / ``sink_json``: a FileStreamSink writes a one-partition topic of N records
  (plain lines, or JsonConverter envelopes, produced once before the rounds) into a fresh file.

The clock: from just before ``POST /connectors`` (the connector's creation: task start-up,
the sink's group join and fetches are inside it) to the moment the last record is seen: for a
source, the topic's high watermark at N (polled every 5 ms); for a sink, the file at its
expected size, N x 102 bytes (polled every 5 ms; both sinks write each batch straight to the
file). Also shown, apart: the time to the first record seen and the rate after it ("steady",
the connector's start-up, the rebalance a new connector causes and the sink's group join left
out). CPU seconds: user + system time of the worker's whole process tree (every thread of
every process, with reaped children's), read from ``/proc/<pid>/stat`` at both ends of the
clock; an idle worker's background work (heartbeats) falls in the window too, alike on both
sides. Each run creates a connector under a fresh name, checks the count (exactly N records in
the topic, or N lines in the file, first and last checked), and deletes it.

A warm-up round (``--warmup`` lines, every case on both sides, not counted) comes first; then
``--rounds`` rounds, the order of the two sides rotating each round; medians. The output ends
with one line per case and one overall (the geometric mean over the cases of each side's
median records/s)::

    RESULT bench_vs_kafka_connect_<case> connectrt=<rec/s> baseline=<rec/s> ratio=<x>
    RESULT bench_vs_kafka_connect connectrt=<rec/s> baseline=<rec/s> ratio=<x>

the baseline being Kafka Connect. Needs Java 17+ (a JDK: javac) and Maven the first time; Kafka
Connect needs Apache Kafka, so ``--broker embedded`` (the default of the other benches) starts
an Apache Kafka broker instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import _common as c
import httpx
from confluent_kafka import Consumer, Producer, TopicPartition

from connectrt.ports import free_port
from connectrt.testing.kafka_connect import KAFKA_CONNECT_VERSION, KafkaConnect

STRING = c.STRING
JSON = c.JSON
WIDTH = 101  # characters of a line; the file holds WIDTH + 1 bytes per line
VARIANT = "connectrt variant"
CASES = ("source_string", "source_json", "sink_string", "sink_json")
CONVERTERS = {"string": STRING, "json": JSON}
POLL = 0.005
TIMEOUT = 600.0
SETTINGS = {
    "key.converter": STRING,
    "value.converter": JSON,
    "offset.flush.interval.ms": "10000",
    "config.storage.replication.factor": "1",
    "offset.storage.replication.factor": "1",
    "status.storage.replication.factor": "1",
    "offset.storage.partitions": "3",
    "status.storage.partitions": "1",
    "task.shutdown.graceful.timeout.ms": "5000",
}


def line(i: int) -> str:
    head = f"{i:010d} "
    return head + "x" * (WIDTH - len(head))


# -- CPU time of a process tree ----------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, list[str]] | None:
    """(parent pid, the fields after the command name) of ``/proc/<pid>/stat``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields


def tree_cpu(root: int) -> float:
    """User + system seconds of ``root`` and all its descendants (every thread of each; with
    the reaped children's times)."""
    parents: dict[int, int] = {}
    fields_of: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                parents[int(entry)], fields_of[int(entry)] = found
    total = 0.0
    for pid, fields in fields_of.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name.
            total += sum(int(x) for x in fields[11:15]) / _TICK
    return total


# -- the two workers ---------------------------------------------------------------------------


@dataclass
class Side:
    """One worker: its REST URL and the pid whose process tree is its CPU time."""

    name: str
    url: str
    pid: int
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def create(self, name: str, config: dict[str, str]) -> None:
        response = self.http.post("/connectors", json={"name": name, "config": config})
        if response.status_code != 201:
            raise RuntimeError(f"{self.name}: POST /connectors {name}: {response.text}")

    def delete(self, name: str) -> None:
        response = self.http.delete(f"/connectors/{name}")
        if response.status_code not in (204, 404):
            raise RuntimeError(f"{self.name}: DELETE {name}: {response.text}")
        c.wait_for(
            lambda: name not in self.http.get("/connectors").json(),
            TIMEOUT,
            f"{self.name} to delete {name}",
            step=0.05,
        )


@contextmanager
def kafka_connect(bootstrap: str) -> Iterator[Side]:
    connect = KafkaConnect(bootstrap, properties=SETTINGS, heap="1g", startup_timeout=300)
    connect.start()
    try:
        assert connect.pid is not None
        yield Side("Kafka Connect", connect.url, connect.pid)
    finally:
        connect.stop()


@contextmanager
def connectrt_worker(
    bootstrap: str, folder: Path, extra: dict[str, str] | None = None, name: str = "connectrt"
) -> Iterator[Side]:
    """A connectrt worker process with :data:`SETTINGS` (and ``extra`` worker properties on
    top, for a variant such as tuned consumer settings), stopped at the end."""
    run = uuid.uuid4().hex[:8]
    port = free_port()
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": f"connectrt-bench-{run}",
        "config.storage.topic": f"cr-configs-{run}",
        "offset.storage.topic": f"cr-offsets-{run}",
        "status.storage.topic": f"cr-status-{run}",
        **SETTINGS,
        "listeners": f"http://127.0.0.1:{port}",
        "file.connectors.allowed.dirs": tempfile.gettempdir(),
        **(extra or {}),
    }
    path = folder / f"connectrt-worker-{run}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
    log = (folder / f"connectrt-worker-{run}.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "connectrt.cli", "--log-level", "WARNING", "worker", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=c.ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(c.ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    side = Side(name, f"http://127.0.0.1:{port}", proc.pid)

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"connectrt worker exited {proc.returncode}; see {log.name}")
        try:
            return side.http.get("/health").status_code == 200
        except httpx.HTTPError:
            return False

    try:
        c.wait_for(ready, 180, "the connectrt worker to answer GET /health", step=0.1)
        yield side
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# -- the runs ----------------------------------------------------------------------------------


def high_watermark(consumer: Consumer, topic: str) -> int:
    return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])


def fill_topic(bootstrap: str, topic: str, n: int, converter: str) -> None:
    """``n`` records of :func:`line`, as that converter writes them (JSON: the envelope with
    the string schema, as Kafka Connect's JsonConverter writes a FileStreamSource's lines)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for i in range(n):
        text = line(i)
        if converter == JSON:
            text = json.dumps({"schema": {"type": "string", "optional": False}, "payload": text})
        while True:
            try:
                producer.produce(topic, value=text.encode())
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError(f"could not fill {topic}")


@dataclass
class Measure:
    records: int
    seconds: float
    cpu: float
    first: float  # seconds from the POST to the first record seen

    @property
    def steady(self) -> float:
        """Records/s after the first one was seen (the connector's start-up left out)."""
        return c.rate(self.records - 1, self.seconds - self.first)

    @property
    def rate(self) -> float:
        return c.rate(self.records, self.seconds)

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.records * 1e6


@dataclass(frozen=True)
class Medians:
    """One side's medians over the rounds of a case."""

    rate: float
    cpu_us: float
    first: float
    steady: float

    @classmethod
    def of(cls, measures: list[Measure]) -> Medians:
        return cls(
            statistics.median(m.rate for m in measures),
            statistics.median(m.cpu_us for m in measures),
            statistics.median(m.first for m in measures),
            statistics.median(m.steady for m in measures),
        )


class Bench:
    def __init__(self, bootstrap: str, folder: Path, n: int, warmup: int) -> None:
        self.bootstrap = bootstrap
        self.folder = folder
        self.sizes = {"timed": n, "warmup": warmup}
        self.files: dict[int, Path] = {}
        self.sink_topics: dict[tuple[str, int], str] = {}
        self.watermarks = Consumer(c.consumer_settings(bootstrap, f"bench-marks-{c.RUN}"))

    def source_file(self, n: int) -> Path:
        if n not in self.files:
            path = self.folder / f"lines-{n}.txt"
            with path.open("w", encoding="utf-8") as f:
                for i in range(n):
                    f.write(line(i) + "\n")
            self.files[n] = path
        return self.files[n]

    def sink_topic(self, conv: str, n: int) -> str:
        key = (conv, n)
        if key not in self.sink_topics:
            topic = c.topic(f"kcbench-sink-{conv}-{n}")
            c.create_topics(self.bootstrap, {topic: 1})
            fill_topic(self.bootstrap, topic, n, CONVERTERS[conv])
            self.sink_topics[key] = topic
        return self.sink_topics[key]

    def run(self, side: Side, case: str, n: int, tag: str) -> Measure:
        kind, conv = case.split("_")
        name = f"{case}-{tag}-{uuid.uuid4().hex[:6]}"
        config = {"tasks.max": "1", "value.converter": CONVERTERS[conv], "key.converter": STRING}
        seen: Callable[[], int]
        if kind == "source":
            topic = c.topic(f"kcbench-{name}")
            c.create_topics(self.bootstrap, {topic: 1})
            config |= {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file": str(self.source_file(n)),
                "topic": topic,
            }

            def seen() -> int:
                return high_watermark(self.watermarks, topic)
        else:
            out = self.folder / f"{name}.txt"
            config |= {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                "file": str(out),
                "topics": self.sink_topic(conv, n),
            }

            def seen() -> int:
                try:
                    return out.stat().st_size // (WIDTH + 1)
                except FileNotFoundError:
                    return 0

        cpu0 = tree_cpu(side.pid)
        t0 = time.perf_counter()
        side.create(name, config)
        c.wait_for(lambda: seen() > 0, TIMEOUT, f"{side.name} {case}: a record", step=POLL)
        first = time.perf_counter() - t0
        c.wait_for(lambda: seen() >= n, TIMEOUT, f"{side.name} {case}: {n} records", step=POLL)
        seconds = time.perf_counter() - t0
        cpu = tree_cpu(side.pid) - cpu0
        side.delete(name)
        if kind == "source":
            got = high_watermark(self.watermarks, topic)
            assert got == n, f"{side.name} {case}: {got} records in {topic}, not {n}"
        else:
            lines = out.read_text("utf-8").splitlines()
            assert len(lines) == n, f"{side.name} {case}: {len(lines)} lines, not {n}"
            assert lines[0] == line(0) and lines[-1] == line(n - 1), f"{side.name} {case}"
            out.unlink()
        return Measure(n, seconds, cpu, first)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--records",
        type=int,
        default=9_000_000,
        help="lines per run (default 9,000,000: 5 s windows up to 1.8M records/s)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=20_000, help="lines per warm-up run")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    ap.add_argument(
        "--variant",
        default="",
        help="worker properties k=v,k=v of a third side, 'connectrt variant' (e.g. "
        "consumer.fetch.min.bytes=65536): a second connectrt worker measured in the same "
        "rounds, shown beside the default one (the RESULT lines stay default vs Kafka Connect)",
    )
    c.add_broker_option(ap)
    args = ap.parse_args()
    c.setup_logging()
    cases = [x for x in args.cases.split(",") if x]
    variant = dict(kv.split("=", 1) for kv in args.variant.split(",") if kv)
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    choice = "kafka" if args.broker in ("", "embedded") else args.broker
    if choice != args.broker:
        print("Kafka Connect needs Apache Kafka: using --broker kafka", flush=True)
    c.print_broker(choice)
    print(f"machine: {c.machine()}; load average at start: {load()}", flush=True)
    print(
        f"Kafka Connect {KAFKA_CONNECT_VERSION} vs connectrt; {args.records:,} lines x "
        f"{args.rounds} rounds, warm-up {args.warmup:,}; cases {', '.join(cases)}",
        flush=True,
    )
    if variant:
        print(f"{VARIANT}: the worker properties {variant} on top", flush=True)
    results: dict[str, dict[str, list[Measure]]] = {k: {} for k in cases}
    with ExitStack() as stack:
        broker = stack.enter_context(c.open_broker(choice))
        bootstrap = broker.bootstrap_servers
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kcbench-")))
        kc = stack.enter_context(kafka_connect(bootstrap))
        ours = stack.enter_context(connectrt_worker(bootstrap, folder))
        sides = [ours, kc]
        if variant:
            sides.append(stack.enter_context(connectrt_worker(bootstrap, folder, variant, VARIANT)))
        bench = Bench(bootstrap, folder, args.records, args.warmup)
        stack.callback(bench.watermarks.close)  # before the broker stops
        for case in cases:  # inputs made before any clock
            if case.startswith("sink"):
                bench.sink_topic(case.split("_")[1], args.warmup)
                bench.sink_topic(case.split("_")[1], args.records)
        bench.source_file(args.warmup)
        bench.source_file(args.records)
        print("\n== warm-up (not counted)", flush=True)
        for case in cases:
            for side in sides:
                m = bench.run(side, case, args.warmup, "warmup")
                print(f"  {case:<14} {side.name:<14} {m.rate:>10,.0f} rec/s", flush=True)
        for r in range(args.rounds):
            print(f"\n== round {r + 1} (load {load()})", flush=True)
            for case in cases:
                for side in c.rotated(sides, r):
                    m = bench.run(side, case, args.records, f"r{r}")
                    results[case].setdefault(side.name, []).append(m)
                    c.window(m.seconds)
                    print(
                        f"  {case:<14} {side.name:<14} {m.records:,} in {m.seconds:6.2f} s = "
                        f"{m.rate:>10,.0f} rec/s (first record at {m.first:5.2f} s, then "
                        f"{m.steady:>9,.0f} rec/s), CPU {m.cpu:6.2f} s = {m.cpu_us:6.2f} us/rec",
                        flush=True,
                    )
        print(f"\nload average at end: {load()}", flush=True)

    print("\n== medians (clock: POST /connectors to the last record seen)")
    print(
        f"  {'case':<14} {'connectrt rec/s':>16} {'Kafka Connect':>14} {'ratio':>6} "
        f"{'CPU us/rec cr':>14} {'CPU us/rec KC':>14} {'CPU ratio':>9} "
        f"{'1st rec s cr/KC':>16} {'steady cr/KC rec/s':>22}"
    )
    medians: dict[str, tuple[float, float]] = {}
    for case in cases:
        m_cr, m_kc = (
            Medians.of(results[case]["connectrt"]),
            Medians.of(results[case]["Kafka Connect"]),
        )
        medians[case] = (m_cr.rate, m_kc.rate)
        print(
            f"  {case:<14} {m_cr.rate:>16,.0f} {m_kc.rate:>14,.0f} {m_cr.rate / m_kc.rate:>6.2f} "
            f"{m_cr.cpu_us:>14.2f} {m_kc.cpu_us:>14.2f} {m_cr.cpu_us / m_kc.cpu_us:>9.2f} "
            f"{m_cr.first:>7.2f} / {m_kc.first:<6.2f} {m_cr.steady:>10,.0f} / {m_kc.steady:<9,.0f}"
        )
        figures = {
            "cpu_us_connectrt": m_cr.cpu_us,
            "cpu_us_kc": m_kc.cpu_us,
            "first_s_connectrt": m_cr.first,
            "first_s_kc": m_kc.first,
        }
        if VARIANT in results[case]:
            m_var = Medians.of(results[case][VARIANT])
            print(
                f"  {'  variant':<14} {m_var.rate:>16,.0f} {'':>14} {m_var.rate / m_kc.rate:>6.2f} "
                f"{m_var.cpu_us:>14.2f} {'':>14} {m_var.cpu_us / m_kc.cpu_us:>9.2f} "
                f"{m_var.first:>7.2f} {'':>8} {m_var.steady:>10,.0f}   (variant / default: "
                f"{m_var.rate / m_cr.rate:.2f} rec/s, {m_var.cpu_us / m_cr.cpu_us:.2f} CPU)"
            )
            figures |= {
                "rate_variant": m_var.rate,
                "cpu_us_variant": m_var.cpu_us,
                "first_s_variant": m_var.first,
            }
        c.emit(f"bench_vs_kafka_connect_{case}", figures)
    print("", flush=True)
    for case, (rate_cr, rate_kc) in medians.items():
        c.case_result("bench_vs_kafka_connect", case, rate_cr, rate_kc)
    geo_cr = math.exp(statistics.fmean(math.log(v[0]) for v in medians.values()))
    geo_kc = math.exp(statistics.fmean(math.log(v[1]) for v in medians.values()))
    c.result("bench_vs_kafka_connect", geo_cr, geo_kc)


if __name__ == "__main__":
    main()
