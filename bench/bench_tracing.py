"""Sink throughput with OpenTelemetry tracing off, at 1% and at 100% of the records.

A topic with 4 partitions is pre-filled with N 100 B values (not timed), each with a sampled
W3C ``traceparent`` header as an instrumented producer writes it. Then, in rounds, three
in-process workers read the whole topic in turn with ``bench.connectors.NoopSinkConnector``
(one task, ByteArrayConverter, the sink sums the values column), each with its own consumer
group: tracing off (the baseline), ``tracing.sampler.ratio=0.01`` and ``=1.0``. The tracing
workers export over OTLP/HTTP to a real Jaeger on loopback (:mod:`connectrt.testing.jaeger`,
built from the Go module proxy on first use), so the export's cost is in the figures: a fresh
Jaeger for each traced case, started before its clock (its in-memory store holds 100,000 traces;
evicting an earlier case's made a case's backend cost depend on the order of the cases). Jaeger
and the exporter process run on the same cores as the worker and the broker, so the figures
include the backend's work, which in production runs elsewhere; their CPU per record is printed
apart; ``--backend null`` exports to a receiver that reads and drops each request instead (the
runtime's cost without a backend's ingest: beside a run to Jaeger, it shows the backend's share),
and ``--backend-nice 19`` runs Jaeger behind everything else.

Steady state only: each clock starts once ``--warmup`` records were received and stops at the
N-th; a tracing case starts its exporter process (:mod:`connectrt.runtime.tracing.exporter`,
which a worker starts once, with its first traced task) before its worker, and ends it after
(it exports the rest), outside the clock. The order of the three cases rotates from round to
round, and each case starts after a garbage collection and ``--settle`` seconds (default 3).
Prints each round (per case the worker process's CPU per record and its task thread's, from
the task's own clock: ``time.thread_time`` over the timed records), the medians, each traced
case's ratio to off within each round (median and range: the machine's speed drifts between
rounds, and a round's cases run within a minute), and ends with
``RESULT bench_tracing connectrt=<1% rec/s> baseline=<off rec/s> ratio=<x>`` (before it,
``RESULT bench_tracing_all`` for 100% against off); with ``--backend null`` the same lines are
``bench_tracing_runtime`` and ``bench_tracing_runtime_all``. Target: 1% costs under 3%.
``--cases off,1%`` runs some of the cases (for A/B comparisons; no RESULT line then).

``--side source`` measures a source instead: ``bench.connectors.PreSerializedSource`` returning
lists of 2,000 ``SourceRecord`` s (the README's style), a fresh topic per round and case, the
clock from its first poll after a warm-up record to the last record's acknowledgement (as
``bench_source.py --records-path``); each traced record gets its ``traceparent`` header, which
the runtime produces with it. RESULT lines ``bench_tracing_source`` (``_runtime`` with
``--backend null``), ``_all`` for 100%.

``--transforms`` runs the sink's records through a chain of two transformations
(:data:`TRANSFORMS`: InsertHeader and RegexRouter, as the issue's tracing test has), so each
record is built and transformed: a pipeline doing some work a record beside the no-op sink's
bare minimum. RESULT lines ``bench_tracing_transforms`` (``_runtime`` with ``--backend null``),
``_all`` for 100%.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import _common as c
from confluent_kafka import Producer

from bench.connectors import payloads
from connectrt.testing.jaeger import JaegerServer

TOPIC = c.topic("tracing-in")

CASES = {"off": None, "1%": "0.01", "100%": "1.0"}

TRANSFORMS = {
    "transforms": "header,route",
    "transforms.header.type": "InsertHeader",
    "transforms.header.header": "pipeline",
    "transforms.header.value.literal": "bench",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "$1-routed",
}
"""``--transforms``: the no-op sink's chain of two transformations (as the issue's tracing test
has), each record through both."""


def prefill(bootstrap: str, n: int, size: int) -> None:
    producer = Producer(c.producer_settings(bootstrap))
    values = payloads(2000, size)
    rng = random.Random(35)
    for i in range(n):
        header = f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01"
        while True:
            try:
                producer.produce(TOPIC, values[i % 2000], headers=[("traceparent", header)])
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError("prefill not acknowledged")


def exporter_cpu(outlet: Any) -> float:
    """The CPU seconds the exporter process of ``outlet`` spent starting: read from
    ``/proc/<pid>/stat`` once it stopped growing (its imports done; at most 5 s), so that a
    case's exporter figure is its steady work (0 where there is no such file)."""
    process = getattr(outlet, "_process", None)
    stat = Path(f"/proc/{process.pid}/stat") if process is not None else None
    if stat is None or not stat.exists():
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    last, deadline = -1.0, time.monotonic() + 5
    while time.monotonic() < deadline:
        now = cpu()
        if now == last:
            break
        last = now
        time.sleep(0.3)
    return last


def run_case(
    bootstrap: str,
    n: int,
    warmup: int,
    rnd: str,
    ratio: str | None,
    receiver: Backend | None,
    side: str = "sink",
    transforms: bool = False,
) -> tuple[int, float, int, float, float, float, float, float]:
    """(records timed, seconds, traced records dropped, CPU µs per record of this process, of
    its task thread (:func:`task_cpu`), of the exporter process (its start excluded:
    :func:`exporter_cpu`) and of Jaeger) of a worker running the no-op sink (with
    :data:`TRANSFORMS` if ``transforms``; ``side`` "source": the list source,
    :func:`_run_source`) with tracing at ``ratio`` (None: off). A traced case ends with its
    exporter process done (it exports the rest before the next case starts). This process's
    CPU is counted from before the worker starts to the N-th record (every thread: the task's,
    the client's, the trace shipper's). Last, the seconds from the N-th record to the exporter
    process's end (the worker's stop and the rest of the export, which the clock leaves out)."""
    bench_id = f"trace{rnd}"
    extra = {}
    if ratio is not None:
        assert receiver is not None
        extra = {
            "tracing.enabled": "true",
            "tracing.sampler.ratio": ratio,
            "tracing.otlp.endpoint": receiver.otlp_http,
            "tracing.service.name": "bench-tracing",
        }
    if ratio is not None:  # the worker's exporter process, started before the clock (a worker
        # starts it once, with its first traced task): steady state is measured
        from connectrt.runtime.config.tracing import tracing_settings
        from connectrt.runtime.tracing.exporter import outlet_for

        values = {k: v for k, v in extra.items() if k != "tracing.enabled"}
        settings = tracing_settings({**values, "tracing.enabled": True})
        assert settings is not None
        started = exporter_cpu(outlet_for(settings))
    else:
        started = 0.0
    cpu = time.process_time()
    backend = receiver.cpu_seconds() if receiver is not None else 0.0
    worker = c.make_worker(c.worker_props(bootstrap, **extra))
    try:
        if side == "source":
            timed = _run_source(worker, bootstrap, n, rnd, bench_id)
        else:
            timed = _run_sink(worker, n, warmup, rnd, bench_id, transforms)
        cpu = time.process_time() - cpu
        clock_stopped = time.monotonic()
    finally:
        worker.stop()
    dropped = 0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ratio is not None:
        from connectrt.runtime.tracing.exporter import close_outlets

        dropped = close_outlets()  # waits for the exporter process: its CPU is counted
    lag = time.monotonic() - clock_stopped  # the worker's stop, and the export's rest
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    exporter = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime - started
    backend = receiver.cpu_seconds() - backend if receiver is not None else 0.0
    task = task_cpu(bench_id, timed[0])
    return (*timed, dropped, cpu * 1e6 / n, task, exporter * 1e6 / n, backend * 1e6 / n, lag)


def _run_sink(
    worker: Any, n: int, warmup: int, rnd: str, bench_id: str, transforms: bool = False
) -> tuple[int, float]:
    """(records timed, seconds) of the no-op sink reading the pre-filled topic on ``worker``
    (through :data:`TRANSFORMS` if ``transforms``)."""
    extra = TRANSFORMS if transforms else None
    name = f"bench-trace-{rnd}"
    return c.run_noop_sink(worker, name, bench_id, TOPIC, n, warmup, "true", 600, extra)


def task_cpu(bench_id: str, timed: int) -> float:
    """The task thread's CPU µs per timed record of the case ``bench_id`` (the no-op sink's from
    its warm-up to its last record, the source's from its first timed poll to its last)."""
    from bench.connectors import PROGRESS

    p = PROGRESS[f"{bench_id}-0"]
    assert p.cpu_first is not None and p.cpu_last is not None
    return (p.cpu_last - p.cpu_first) * 1e6 / timed


def _run_source(worker: Any, bootstrap: str, n: int, rnd: str, bench_id: str) -> tuple[int, float]:
    """(records timed, seconds) of ``bench.connectors.PreSerializedSource`` returning lists of
    2,000 ``SourceRecord`` s (the README's style) to a fresh topic on ``worker``: from its
    first timed ``poll()`` (after a warm-up record was acknowledged) to the N-th record's
    acknowledgement (the task's stop and final commit; as ``bench_source.py``)."""
    topic = c.topic(f"tracing-src-{rnd}")
    p, _, end = c.run_preserialized_source(
        worker, bootstrap, f"bench-trace-{rnd}", bench_id, topic, n, columns=False
    )
    return n, end - p.first


class Backend(Protocol):
    """Where a traced case exports: a Jaeger, or :class:`NullReceiver`."""

    @property
    def otlp_http(self) -> str: ...

    def cpu_seconds(self) -> float: ...

    def stop(self) -> None: ...


_NULL_RECEIVER = """
import socket

# An HTTP/1.1 server of one kept-alive connection at a time that reads each POST's body into
# one reused buffer and answers 200 with an empty body: as little work per byte as a receiver
# can do (measured: 117 µs of CPU per 700 KB request, http.server 283).
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
buffer = memoryview(bytearray(1 << 20))
ANSWER = (
    b"HTTP/1.1 200 OK\\r\\nContent-Type: application/x-protobuf\\r\\nContent-Length: 0\\r\\n\\r\\n"
)


def serve(connection):
    pending = b""
    while True:
        while b"\\r\\n\\r\\n" not in pending:
            chunk = connection.recv(65536)
            if not chunk:
                return
            pending += chunk
        head, _, pending = pending.partition(b"\\r\\n\\r\\n")
        length = 0
        for line in head.split(b"\\r\\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        seen = min(len(pending), length)  # the body's start, read with the head
        pending = pending[seen:]
        length -= seen
        while length > 0:
            n = connection.recv_into(buffer, min(length, len(buffer)))
            if not n:
                return
            length -= n
        connection.sendall(ANSWER)


while True:
    connection, _ = server.accept()
    with connection:
        serve(connection)
"""


class NullReceiver:
    """An OTLP/HTTP endpoint in a process of its own that reads each request and answers 200
    with an empty response (``--backend null``): the export's cost without a backend's ingest,
    so that a run beside one to Jaeger shows the backend's share."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _NULL_RECEIVER], stdout=subprocess.PIPE
        )
        assert self._proc.stdout is not None
        self.otlp_http = f"http://127.0.0.1:{int(self._proc.stdout.readline())}"

    def cpu_seconds(self) -> float:
        """Its CPU time so far (Linux ``/proc``; 0.0 where it cannot be read)."""
        try:
            stat = Path(f"/proc/{self._proc.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(15)


def fresh_backend(kind: str, binary: Path, nice: int) -> Backend:
    """``kind``'s backend for one traced case: a :class:`NullReceiver`, or :func:`fresh_jaeger`."""
    return NullReceiver() if kind == "null" else fresh_jaeger(binary, nice)


def fresh_jaeger(binary: Path, nice: int) -> JaegerServer:
    """A Jaeger started for one traced case (its store empty: a case does not pay for the
    eviction of an earlier case's traces from the in-memory store, which holds 100,000), at
    ``nice`` if not 0."""
    jaeger = JaegerServer(binary, Path(tempfile.mkdtemp(prefix="bench-jaeger-")))
    jaeger.start()
    if nice:
        jaeger.renice(nice)
    return jaeger


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000, help="pre-filled records")
    ap.add_argument("--rounds", type=int, default=1, help="rounds (each runs the three cases)")
    ap.add_argument("--warmup", type=int, default=0, help="records before the clock starts")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds to wait (after a garbage collection) before each case's run (default 3)",
    )
    ap.add_argument(
        "--cases",
        default=",".join(CASES),
        help="the cases to run, comma-separated (default: all; the RESULT lines need off, 1%% "
        "and 100%%: without them the script prints the medians only)",
    )
    ap.add_argument(
        "--backend",
        choices=("jaeger", "null"),
        default="jaeger",
        help="where the traced cases export: Jaeger (the default; RESULT bench_tracing) or a "
        "receiver that reads and drops each request (the runtime's own cost, without a "
        "backend's ingest on the same cores; RESULT bench_tracing_runtime)",
    )
    ap.add_argument(
        "--backend-nice",
        type=int,
        default=0,
        help="run Jaeger at this nice value (default 0: the priority of the worker; a backend "
        "is another machine's work in production, here it takes the same two cores)",
    )
    ap.add_argument(
        "--side",
        choices=("sink", "source"),
        default="sink",
        help="sink (the default): the no-op sink over a pre-filled topic whose records carry "
        "traceparent headers; source: a task returning lists of 2,000 SourceRecords, each case "
        "to a fresh topic, each traced record given its traceparent header "
        "(RESULT bench_tracing_source, bench_tracing_source_runtime)",
    )
    ap.add_argument(
        "--transforms",
        action="store_true",
        help="the sink's records through a chain of two transformations (InsertHeader and "
        "RegexRouter, the record built per record) rather than straight to the no-op sink "
        "(RESULT bench_tracing_transforms, bench_tracing_transforms_runtime)",
    )
    c.add_broker_option(ap)
    args = ap.parse_args()
    if args.transforms and args.side == "source":
        ap.error("--transforms is for the sink side")
    c.setup_logging()
    n = args.records
    source = args.side == "source"
    warmup = args.warmup or max(n // 20, 1000)
    one, five, fifteen = os.getloadavg()
    what = (
        f"a source task's lists of 2,000 x {args.size} B SourceRecords, {n:,} per case"
        if source
        else f"{n:,} x {args.size} B with traceparent headers in 4 partitions"
        + (", through two transformations" if args.transforms else "")
    )
    clock = (
        "clocks from the first poll after a warm-up record"
        if source
        else f"clocks start after {warmup:,} records"
    )
    print(
        f"bench_tracing: {what}, {args.rounds} round(s), {clock}; {c.machine()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {one:.2f}, {five:.2f}, {fifteen:.2f}"
    )
    c.print_broker(args.broker)
    from connectrt.runtime.executors.gc_tuning import tune_gc
    from connectrt.testing.jaeger import jaeger_binary

    tune_gc()
    binary = jaeger_binary()
    label = "Jaeger" if args.backend == "jaeger" else "receiver"
    cases = [case for case in CASES if case in args.cases.split(",")]
    rates: dict[str, list[float]] = {case: [] for case in cases}
    cpus: dict[str, list[float]] = {case: [] for case in cases}
    tasks: dict[str, list[float]] = {case: [] for case in cases}
    export: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
    with c.open_broker(args.broker) as broker:
        bs = broker.bootstrap_servers
        if source:  # a fresh topic (and warm-up topic) per round and case
            names = [c.topic(f"tracing-src-{r}-{i}") for r in range(args.rounds) for i in range(3)]
            c.create_topics(bs, {t: 1 for name in names for t in (name, f"{name}-warmup")})
        else:
            c.create_topics(bs, {TOPIC: 4})
            t0 = time.perf_counter()
            prefill(bs, n, args.size)
            print(f"  prefilled in {time.perf_counter() - t0:.1f} s", flush=True)
        for r in range(args.rounds):
            done = []
            for case in c.rotated(cases, r):
                if args.settle:
                    c.settle(args.settle)
                rnd = f"{r}-{list(CASES).index(case)}"
                receiver = None
                if CASES[case] is not None:
                    receiver = fresh_backend(args.backend, binary, args.backend_nice)
                try:
                    timed, secs, dropped, cpu, task, exporter, backend, lag = run_case(
                        bs, n, warmup, rnd, CASES[case], receiver, args.side, args.transforms
                    )
                finally:
                    if receiver is not None:
                        receiver.stop()
                rates[case].append(c.rate(timed, c.window(secs)))
                cpus[case].append(cpu)
                tasks[case].append(task)
                export[case].append((exporter, backend))
                note = f"{cpu:.2f} µs CPU/record (task thread {task:.3f})"
                if CASES[case] is not None:
                    note += f" + exporter process {exporter:.3f} + {label} {backend:.3f}"
                    note += f", exporter done {lag:.2f} s after the clock"
                if dropped:
                    note += f", {dropped:,} traced records dropped"
                done.append(f"{case} {rates[case][-1]:,.0f} rec/s ({note})")
            print(f"  round {r}: " + ", ".join(done), flush=True)
    medians = {case: statistics.median(v) for case, v in rates.items()}
    cpu_medians = {case: statistics.median(v) for case, v in cpus.items()}
    task_medians = {case: statistics.median(v) for case, v in tasks.items()}
    off, off_cpu = medians.get("off", math.nan), cpu_medians.get("off", math.nan)
    off_task = task_medians.get("off", math.nan)
    for case, rate in medians.items():  # without an off case (--cases 1%): nan of off
        line = (
            f"  median {case:>5}: {c.fmt_rate(rate)}  ({rate / off:.3f} of off); "
            f"{cpu_medians[case]:.2f} µs CPU/record in the worker's process "
            f"({cpu_medians[case] / off_cpu:.3f} of off), task thread {task_medians[case]:.3f} "
            f"({task_medians[case] / off_task:.3f} of off)"
        )
        if CASES[case] is not None:
            exporter = statistics.median(e for e, _ in export[case])
            backend = statistics.median(b for _, b in export[case])
            line += f", exporter process {exporter:.3f}, {label} {backend:.3f}"
        print(line)
    if "off" in rates:  # each round's cases ran minutes apart at most: beside the medians,
        # the ratio within each round (the machine's speed drifts between rounds)
        for case in cases:
            if case != "off":
                paired = [a / b for a, b in zip(rates[case], rates["off"], strict=True)]
                print(
                    f"  rounds' {case} / off: median {statistics.median(paired):.3f} "
                    f"({min(paired):.3f}-{max(paired):.3f})"
                )
    result: dict[str, Any] = {f"tracing_{k}": v for k, v in medians.items()}
    if len(cases) < len(CASES):
        return result  # a partial run (--cases): no RESULT line
    runtime = args.backend == "null"  # the runtime's own cost: a row of its own
    transforms = args.transforms
    name = (
        "bench_tracing"
        + ("_source" if source else "")
        + ("_transforms" if transforms else "")
        + ("_runtime" if runtime else "")
    )
    c.case_result(name, "all", medians["100%"], medians["off"])
    c.result(  # the name again, as literals (tests/unit/test_bench_scripts.py reads them)
        "bench_tracing_source_runtime"
        if source and runtime
        else "bench_tracing_source"
        if source
        else "bench_tracing_transforms_runtime"
        if transforms and runtime
        else "bench_tracing_transforms"
        if transforms
        else "bench_tracing_runtime"
        if runtime
        else "bench_tracing",
        medians["1%"],
        medians["off"],
    )
    return result


if __name__ == "__main__":
    main()
