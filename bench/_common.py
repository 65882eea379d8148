"""Shared helpers for the benchmark scripts: broker, topics, worker, rounds, the RESULT line.

Every script that needs a broker takes ``--broker embedded|kafka|HOST:PORT``
(:func:`add_broker_option`; default: ``embedded``, or ``CONNECTRT_BENCH_BROKER`` when set) and
opens it with :func:`open_broker`: the embedded broker (Tansu, in memory, never frees what it
stores) or a single-node Apache Kafka, each started for the script (or for each of its runs) and
stopped at the end, or a broker someone else runs at ``HOST:PORT``, which is neither started nor
stopped. Topic names carry :data:`RUN` (:func:`topic`), so runs against one external broker
never meet each other's topics; every script creates its topics itself, with the partitions it
needs (Apache Kafka would auto-create them with one). Nothing here asserts timings.

Every script runs each side of its comparison in alternating rounds whose order rotates
(:func:`rotated`), reports medians, and ends with exactly one line (:func:`result`)::

    RESULT <bench> connectrt=<rec/s> baseline=<rec/s> ratio=<x>

which ``run_all.py`` collects (:data:`RESULT_LINE` parses it). With ``CONNECTRT_BENCH_RESULTS``
set to a folder (run_all.py sets it to ``bench/results``), every RESULT line is also written
there as ``<broker>/<bench>.json`` with the date, the commit, the load average and the broker
(:func:`record`), which ``bench/summary.py`` renders into the table and chart of
docs/benchmarks.md.

The method every bench follows (tests/unit/test_bench_scripts.py checks what it can statically):
measurement windows of at least :data:`MIN_WINDOW_S` seconds (each side's clock per round goes
through :func:`window`, and a shorter one is flagged above the RESULT line and in the record),
a fresh topic per round, the round order rotated by :func:`rotated`, Apache Kafka as the default
broker where Java is present (:func:`default_broker`; the embedded broker as a second run), and
hand-rolled baselines as lean as a plain loop.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
# First on the path, so ``bench.connectors.X`` resolves as a plugin class and ``connectors``
# is the repository's package, not this directory's ``connectors.py`` (the script's directory
# comes first otherwise, and an editable install may already have put ROOT further down).
if str(ROOT) in sys.path:
    sys.path.remove(str(ROOT))
sys.path.insert(0, str(ROOT))

from connectrt.process.allocator import allocator_in_use, use_preferred_allocator  # noqa: E402

# A bench script runs both sides of its comparison with the allocator a worker process runs
# with (mimalloc where installed: connectrt.process.allocator); CONNECTRT_MALLOC=system runs
# them with the C library's malloc. This may execute the script again, before anything else.
if Path(sys.argv[0]).resolve().parent == ROOT / "bench":
    use_preferred_allocator()

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from connectrt.runtime.clients.settings import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS  # noqa: E402
from connectrt.testing.broker_choice import broker_from_env, default_test_broker  # noqa: E402
from connectrt.testing.worker_defaults import allow_plugin_packages  # noqa: E402

if TYPE_CHECKING:
    from connectrt.broker import EmbeddedBroker
    from connectrt.testing.broker_choice import ExternalBroker
    from connectrt.testing.kafka_broker import KafkaBroker

# Workers load only discovered plugins: the benchmarks name their connectors by Python path.
allow_plugin_packages("bench", "tests")

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"

# Quick group joins on Tansu (it holds a join for half of session.timeout.ms).
FAST_GROUP = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}


BROKER_ENV = "CONNECTRT_BENCH_BROKER"
"""The environment variable giving ``--broker``'s default (``embedded`` when unset or empty)."""

RUN_ENV = "CONNECTRT_BENCH_RUN"
"""Set by a script for the child processes it starts, so that they use its :data:`RUN`."""

RUN = os.environ.get(RUN_ENV) or uuid.uuid4().hex[:8]
"""This run's tag in topic names (:func:`topic`); a child process inherits its parent's."""


RESULTS_ENV = "CONNECTRT_BENCH_RESULTS"
"""A folder: when set, :func:`record` writes every RESULT line there as JSON (run_all.py
sets it)."""

MIN_WINDOW_S = 5.0
"""The shortest measurement window (one side's clock in one round) a figure should rest on:
shorter ones are dominated by start-up, scheduling and the broker's first fetches."""

_START_LOAD = os.getloadavg()
_windows: list[float] = []
_also: dict[str, dict[str, float]] = {}
_figures: dict[str, dict[str, float]] = {}
_broker_choice: str | None = None


def topic(base: str) -> str:
    """``base`` tagged with this run's :data:`RUN`: a name no other run uses on a shared broker."""
    return f"{base}-{RUN}"


def add_broker_option(ap: argparse.ArgumentParser, *, used: bool = True) -> None:
    """``--broker embedded|kafka|HOST:PORT`` (default ``$CONNECTRT_BENCH_BROKER`` or embedded).

    ``used=False`` for a script that measures without a broker: it accepts the option (run_all.py
    passes it to every script) and says that it ignores it."""
    help_text = (
        "embedded (Tansu, started for the run), kafka (single-node Apache Kafka started for "
        f"the run; Java 17+) or HOST:PORT of a running broker (default: ${BROKER_ENV} or "
        "kafka where Java is present, else embedded)"
    )
    if not used:
        help_text = "accepted and ignored: this bench uses no broker"
    ap.add_argument("--broker", default=default_broker() if used else "embedded", help=help_text)


def default_broker() -> str:
    """``$CONNECTRT_BENCH_BROKER`` when set, else ``kafka`` where an Apache Kafka broker can
    start (Java 17+, its jars cached or Maven on the path), else ``embedded``."""
    return os.environ.get(BROKER_ENV) or default_test_broker()


def broker_label(choice: str) -> str:
    """What ``choice`` (a ``--broker`` value) names, for the output."""
    value = choice.strip()
    if value in ("", "embedded"):
        return "embedded (Tansu, in memory, started for this run)"
    if value == "kafka":
        return "Apache Kafka (single KRaft node from Maven jars, started for this run)"
    return f"external broker at {value} (not started or stopped here)"


def open_broker(choice: str) -> EmbeddedBroker | KafkaBroker | ExternalBroker:
    """The (not yet started) broker ``choice`` names: use it as a context manager, then its
    ``bootstrap_servers``. Raises ConnectError for a value that is none of the three forms.
    Each call gives a fresh embedded or Kafka broker; an external one is only checked to
    answer when entered."""
    return broker_from_env(choice)


def print_broker(choice: str | None) -> None:
    """The line naming the broker, printed once near the top of each script's output (``None``:
    a script that uses no broker)."""
    global _broker_choice
    _broker_choice = choice
    _commit()  # the commit measured: read at the start, not when the result is recorded
    label = "none (this bench uses no broker)" if choice is None else broker_label(choice)
    print(f"broker: {label}", flush=True)


def setup_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("BENCH_LOG", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


# The benches measure with lz4, the throughput setting of a deployment
# (producer.compression.type=lz4), on both sides; connectrt's default is Kafka Connect's: none.
COMPRESSION = "lz4"


def producer_settings(bootstrap: str) -> dict[str, Any]:
    """The runtime's producer defaults with the benches' compression (what a task producer gets
    from the worker_props below)."""
    return {**PRODUCER_DEFAULTS, "compression.type": COMPRESSION, "bootstrap.servers": bootstrap}


def consumer_settings(bootstrap: str, group: str) -> dict[str, Any]:
    """The runtime's consumer defaults plus the fast-join settings the worker also gets."""
    return {
        **CONSUMER_DEFAULTS,
        **FAST_GROUP,
        "bootstrap.servers": bootstrap,
        "group.id": group,
    }


def create_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    """Create each topic with its number of partitions (replication factor 1) and wait until
    the broker has them all; raises if any exists already or cannot be created."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=p, replication_factor=1) for t, p in topics.items()]
    )
    for f in futures.values():
        f.result(30)
    # Apache Kafka answers once the controller has the topics; wait until the broker's metadata
    # shows every partition with a leader, so no client starts on a partly known topic.
    deadline = time.monotonic() + 30
    while True:
        meta = admin.list_topics(timeout=10)
        missing = [
            t
            for t, p in topics.items()
            if t not in meta.topics
            or len(meta.topics[t].partitions) != p
            or any(part.leader < 0 for part in meta.topics[t].partitions.values())
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics without leaders after 30 s: {missing}")
        time.sleep(0.1)


def worker_props(bootstrap: str, **extra: str) -> dict[str, str]:
    props = {
        "bootstrap.servers": bootstrap,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "offset.storage.type": "memory",
        "offset.flush.interval.ms": "5000",
        "producer.compression.type": COMPRESSION,
        "consumer.session.timeout.ms": str(FAST_GROUP["session.timeout.ms"]),
        "consumer.heartbeat.interval.ms": str(FAST_GROUP["heartbeat.interval.ms"]),
        "listeners": "http://127.0.0.1:0",
        # The benchmarks' connectors live in the bench package; the file pipeline writes
        # under the temporary directory.
        "plugin.packages": "bench,tests",
        "file.connectors.allowed.dirs": tempfile.gettempdir(),
    }
    props.update(extra)
    return props


def make_worker(props: Mapping[str, str]) -> Any:
    from connectrt.runtime.config.worker import WorkerConfig
    from connectrt.runtime.offsets.stores import create_offset_store
    from connectrt.runtime.worker.worker import Worker

    wc = WorkerConfig.from_props(dict(props))
    worker = Worker(wc, create_offset_store(wc))
    worker.start()
    return worker


def wait_for(cond: Callable[[], bool], timeout: float, what: str, step: float = 0.002) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


def latency_ms(samples: Sequence[float]) -> dict[str, float]:
    """p50, p99, max and mean of ``samples`` (seconds), in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": q[49], "p99": q[98], "max": ms[-1], "mean": statistics.fmean(ms)}


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("nan")


def fmt_rate(r: float) -> str:
    return f"{r:>12,.0f} rec/s"


def report(title: str, rows: list[tuple[str, int, float]]) -> dict[str, float]:
    """Print one line per (name, records, seconds); return name -> records/s."""
    print(f"\n== {title}")
    out = {}
    for name, n, secs in rows:
        r = rate(n, secs)
        out[name] = r
        print(f"  {name:<28} {n:>10,} records in {secs:7.3f} s = {fmt_rate(r)}")
    return out


def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cpus, {model}, Python {sys.version.split()[0]}, "
        f"malloc {allocator_in_use()}"
    )


T = TypeVar("T")

RESULT_LINE = re.compile(
    r"^RESULT (?P<bench>[a-z0-9_]+) connectrt=(?P<connectrt>\d+(?:\.\d+)?|nan) "
    r"baseline=(?P<baseline>\d+(?:\.\d+)?|nan) ratio=(?P<ratio>\d+\.\d+|nan)$"
)
"""The last line of every bench's output (see the module docstring)."""


def sized(requested: int | None, choice: str, kafka: int, embedded: int, what: str) -> int:
    """The volume to measure: ``requested`` when given, else ``kafka`` (sized for windows of
    :data:`MIN_WINDOW_S` or more on a quiet machine), or ``embedded`` on the embedded broker,
    which keeps every record in memory for the whole run (its windows then come out shorter,
    and :func:`result` says so)."""
    if requested is not None:
        return requested
    if broker_key(choice) == "embedded":
        print(
            f"{what}: {embedded:,} on the embedded broker (it keeps every record in memory), "
            f"{kafka:,} on Apache Kafka",
            flush=True,
        )
        return embedded
    return kafka


def rotated(sides: Sequence[T], round_index: int) -> list[T]:
    """The order in which ``sides`` run in round ``round_index``: rotated by one per round,
    so each side goes first (and last) equally often over ``len(sides)`` rounds."""
    k = round_index % len(sides) if sides else 0
    return [*sides[k:], *sides[:k]]


def settle(seconds: float) -> str:
    """Between two sides of a round: collect garbage, then wait ``seconds`` for what the side
    just ended left running (its threads' exits, its consumer group's leave, the broker's and
    librdkafka's work for it) to be done before the next side's clock. Returns a note: the
    threads alive before and after the wait, and this process's CPU seconds during it."""
    import gc
    import threading

    before = threading.active_count()
    gc.collect()
    cpu = time.process_time()
    time.sleep(seconds)
    return (
        f"threads {before}->{threading.active_count()}, "
        f"{time.process_time() - cpu:.2f} s CPU in the {seconds:.0f} s settle"
    )


def format_result(bench: str, connectrt: float, baseline: float) -> str:
    """``RESULT <bench> connectrt=<rec/s> baseline=<rec/s> ratio=<x>`` (rates rounded to whole
    records per second, the ratio to 3 decimals; ``nan`` where a figure is missing)."""

    def rate(x: float) -> str:
        return "nan" if not math.isfinite(x) else f"{x:.0f}"

    ratio = connectrt / baseline if baseline and math.isfinite(baseline) else float("nan")
    shown = "nan" if not math.isfinite(ratio) else f"{ratio:.3f}"
    return f"RESULT {bench} connectrt={rate(connectrt)} baseline={rate(baseline)} ratio={shown}"


def window(seconds: float) -> float:
    """Note one measurement window (one side's clock in one round, in seconds) and return it.
    :func:`result` says how many there were and flags those under :data:`MIN_WINDOW_S`."""
    _windows.append(seconds)
    return seconds


def also(bench: str, runtime: str, rate: float) -> None:
    """Another runtime's figure on the same path and in the same run (e.g. Quix Streams beside
    the hand-rolled baseline), recorded with ``bench``'s RESULT line for the chart."""
    _also.setdefault(bench, {})[runtime] = rate


def _windows_line() -> str | None:
    if not _windows:
        return None
    short = [w for w in _windows if w < MIN_WINDOW_S]
    text = f"measurement windows: {len(_windows)}, shortest {min(_windows):.2f} s"
    if short:
        text += (
            f"; SHORT: {len(short)} below {MIN_WINDOW_S:.0f} s (raise the record count or "
            "the duration for a figure to rely on)"
        )
    return text


def _commit() -> str:
    """The short commit of the checkout, ``+`` when its code differs from that commit (read
    once, at the script's start: what it measures)."""
    global _start_commit
    if _start_commit is None:
        _start_commit = _read_commit()
    return _start_commit


_start_commit: str | None = None


def _read_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "connectrt", "connectors", "bench"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "?"
    return (head or "?") + ("+" if dirty else "")


def broker_key(choice: str | None) -> str:
    """``kafka``, ``embedded``, ``external`` or ``none``: the folder of a record."""
    if choice is None:
        return "none"
    value = choice.strip()
    if value in ("", "embedded"):
        return "embedded"
    return "kafka" if value == "kafka" else "external"


def record(bench: str, connectrt: float, baseline: float) -> Path | None:
    """Write one RESULT line's figures to ``$CONNECTRT_BENCH_RESULTS/<broker>/<bench>.json``
    (replacing the bench's previous record on that broker) with the UTC date, the commit, the
    load average (1-minute at the start of the script and at the end, and the 15-minute), the
    machine, the shortest window and :func:`also`'s figures. Does nothing without the variable."""
    folder = os.environ.get(RESULTS_ENV)
    if not folder:
        return None
    ratio = connectrt / baseline if baseline and math.isfinite(baseline) else float("nan")
    end = os.getloadavg()
    data = {
        "bench": bench,
        "connectrt": connectrt if math.isfinite(connectrt) else None,
        "baseline": baseline if math.isfinite(baseline) else None,
        "ratio": round(ratio, 3) if math.isfinite(ratio) else None,
        "broker": broker_key(_broker_choice),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        "commit": _commit(),
        "load": [round(_START_LOAD[0], 1), round(end[0], 1), round(end[2], 1)],
        "machine": machine(),
        "shortest_window_s": round(min(_windows), 2) if _windows else None,
        "also": _also.get(bench, {}),
        "figures": _figures.get(bench, {}),
    }
    path = Path(folder) / data["broker"] / f"{bench}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    return path


def result(bench: str, connectrt: float, baseline: float) -> None:
    """Print the bench's last line (see :func:`format_result`), after a line on its
    measurement windows (:func:`window`), and :func:`record` it; call it exactly once, last."""
    note = _windows_line()
    if note:
        print(note, flush=True)
    record(bench, connectrt, baseline)
    print(format_result(bench, connectrt, baseline), flush=True)


def case_result(bench: str, case: str, connectrt: float, baseline: float) -> None:
    """One case's line, ``RESULT <bench>_<case> ...`` (see :func:`format_result`), for a bench
    that measures several cases: printed before its own :func:`result` line, which stays the
    last; run_all.py collects them all (and :func:`record` keeps each)."""
    record(f"{bench}_{case}", connectrt, baseline)
    print(format_result(f"{bench}_{case}", connectrt, baseline), flush=True)


def emit(name: str, result: Mapping[str, float]) -> None:
    """A line of extra figures (``BENCH_RESULT {json}``), printed before the RESULT line by the
    scripts that want their details machine-readable too; run_all.py ignores it, and
    :func:`record` keeps them with the RESULT line of the same name."""
    _figures.setdefault(name, {}).update(result)
    import json

    print(f"BENCH_RESULT {json.dumps({'bench': name, **result})}", flush=True)


def await_one_record(bootstrap: str, topic: str) -> None:
    """Read ``topic`` (partition 0) until one record arrived: it was acknowledged.

    A producing task's warm-up record: librdkafka's idempotent producer holds every record
    until it has its producer id (a fixed ~1 s after creation in some runs), so benches start
    their clocks once a first record is readable."""
    consumer = Consumer(consumer_settings(bootstrap, f"warmup-{topic}"))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                return
        raise TimeoutError(f"warm-up record not readable from {topic}")
    finally:
        consumer.close()


def start_noop_sink(
    worker: Any,
    name: str,
    bench_id: str,
    topic: str,
    n: int,
    config: Mapping[str, str],
    wait_s: float,
) -> Any:
    """Run ``bench.connectors.NoopSinkConnector`` as connector ``name`` on ``worker`` (one
    task reading ``topic``, ``config`` added to its configuration) until it received ``n``
    records (at most ``wait_s`` seconds); its task's ``bench.connectors.Progress``."""
    from bench.connectors import PROGRESS

    worker.start_connector(
        name,
        {
            "connector.class": "bench.connectors.NoopSinkConnector",
            "tasks.max": "1",
            "topics": topic,
            "expected": str(n),
            "bench.id": bench_id,
            **config,
        },
    )
    task_id = f"{bench_id}-0"
    wait_for(lambda: task_id in PROGRESS, 60, "the sink task to start")
    p = PROGRESS[task_id]
    if not p.done.wait(wait_s):
        raise TimeoutError(f"sink task got {p.count} of {n}")
    return p


def run_noop_sink(
    worker: Any,
    name: str,
    bench_id: str,
    topic: str,
    n: int,
    warmup: int,
    reads: str,
    wait_s: float,
    extra: Mapping[str, str] | None = None,
) -> tuple[int, float]:
    """:func:`start_noop_sink` reading ``reads`` (its ``read.values``: ``true`` for the values
    column, ``records`` to iterate the ``SinkRecord`` s) after ``warmup`` records (``extra``:
    more connector keys). Returns (records timed, seconds): from the end of its warm-up records
    to its last."""
    from bench.connectors import WARMED

    config = {"read.values": reads, "warmup.records": str(warmup), **(extra or {})}
    p = start_noop_sink(worker, name, bench_id, topic, n, config, wait_s)
    assert p.last is not None
    start_count, start = WARMED[f"{bench_id}-0"]
    return p.count - start_count, p.last - start


def run_preserialized_source(
    worker: Any,
    bootstrap: str,
    name: str,
    bench_id: str,
    topic: str,
    n: int,
    *,
    columns: bool,
    on_warm: Callable[[], object] | None = None,
    **config: str,
) -> tuple[Any, Any, float]:
    """Run ``bench.connectors.PreSerializedSource`` as connector ``name`` on ``worker`` (one
    task, ``n`` records of 100 B in polls of 2,000 to ``topic``: a ``SourceRecordBatch`` each,
    or with ``columns`` False a list of ``SourceRecord`` s; ``config``: more connector keys)
    to its end: its warm-up record acknowledged (then ``on_warm()``), every timed record
    polled, the task stopped after its final commit (which flushes the producer until every
    record is acknowledged), its metrics checked (``n`` records produced and the warm-up one).
    Returns its progress (``bench.connectors.Progress``: ``first`` is the clock's start), its
    runner and ``perf_counter()`` at its end."""
    from bench.connectors import PROGRESS

    worker.start_connector(
        name,
        {
            "connector.class": "bench.connectors.PreSerializedSourceConnector",
            "tasks.max": "1",
            "topic": topic,
            "records": str(n),
            "record.bytes": "100",
            "batch.size": "2000",
            "bench.id": bench_id,
            "warmup.topic": f"{topic}-warmup",
            "batch.columns": "true" if columns else "false",
            **config,
        },
    )
    wait_for(lambda: f"{bench_id}-0" in PROGRESS, 30, "source task start")
    p = PROGRESS[f"{bench_id}-0"]
    await_one_record(bootstrap, f"{topic}-warmup")
    if on_warm is not None:
        on_warm()
    p.warmed.set()
    if not p.done.wait(600):
        raise TimeoutError(f"source task polled {p.count} of {n} records")
    runner = worker.runners(name)[0]
    runner.stop()  # final commit: flush() until every record is acknowledged
    runner.join(120)
    end = time.perf_counter()
    if runner.failed or runner.metrics.records_produced != n + 1:  # + the warm-up record
        raise RuntimeError(f"source task: failed={runner.failed!r} metrics={runner.metrics}")
    assert p.first is not None
    return p, runner, end
