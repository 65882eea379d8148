"""The demo behind ``connectrt demo`` (and ``make demo``): two pipelines on an embedded broker.

Starts the embedded broker, writes a worker config and three connector configs into the demo
directory and runs a standalone worker in this process that also serves the built-in schema
registry. Pipelines:

* file -> Kafka -> file: FileStreamSource -> topic ``demo-lines`` -> FileStreamSink, while a
  line is appended to the input every 100 ms;
* datagen -> Avro: the datagen ``orders`` quickstart -> topic ``demo-orders`` as Avro
  (AvroConverter through the built-in registry, Confluent wire format).

The topics are created up front with one partition, as Apache Kafka's ``num.partitions``
default would (the embedded broker would auto-create four, and lines spread over four
partitions come out of order); the worker's consumers use a 6 s session timeout, since the
embedded broker holds a group join for half of it. What is printed (:mod:`.demo_report`): a
short banner, one progress line every 2 s, a line when a connector or task changes state,
and a summary at the stop. Unless ``verbose``, only warnings and errors are logged.

At the stop (Ctrl-C, SIGTERM or ``duration``), no more lines are appended and the demo waits
up to :data:`DRAIN_TIMEOUT_S` for the sink to write the lines still in flight (a second Ctrl-C
cuts the wait short), then stops the worker: a source commits what the broker acknowledged, a
sink flushes and commits, and the summary says what, if anything, did not arrive.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from connectrt.broker import KCAT_NOTE, EmbeddedBroker
from connectrt.cli.demo_report import (
    DemoCounts,
    in_order,
    progress_line,
    state_changes,
    summary_lines,
)
from connectrt.cli.output import first_line
from connectrt.ports import free_port
from connectrt.process.assembly import WorkerProcess
from connectrt.runtime.clients.settings import OverridePolicy, admin_config
from connectrt.runtime.config.topic_creation import TopicCreationConfig, TopicCreator
from connectrt.runtime.properties import load_connector_file, load_properties

__all__ = ["DRAIN_TIMEOUT_S", "run_demo"]

TOPIC = "demo-lines"
ORDERS_TOPIC = "demo-orders"
SOURCE_CONNECTOR = "demo-file-source"
SINK_CONNECTOR = "demo-file-sink"
ORDERS_CONNECTOR = "demo-datagen-orders"
ORDERS_RATE = 50  # records/s: enough to watch, little enough for the in-memory broker
REPORT_EVERY_S = 2.0
APPEND_EVERY_S = 0.1
DRAIN_TIMEOUT_S = 15.0

# KIP-158 settings: one partition, the broker's replication factor. The demo creates its topics
# with them before the worker starts; the source configs carry them too, so the files work
# alike when copied to a worker on another cluster.
_ONE_PARTITION_SETTINGS = {
    "topic.creation.default.partitions": "1",
    "topic.creation.default.replication.factor": "-1",
}
_ONE_PARTITION = "".join(f"{k}={v}\n" for k, v in _ONE_PARTITION_SETTINGS.items())


def _lines(path: Path) -> list[bytes]:
    try:
        return path.read_bytes().splitlines()
    except FileNotFoundError:
        return []


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def _write_configs(
    d: Path, bootstrap: str, port: int, registry_url: str
) -> tuple[Path, list[Path]]:
    worker = d / "worker.properties"
    worker.write_text(
        "# Written by `connectrt demo`\n"
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter.schemas.enable=true\n"
        "offset.storage.topic=connect-offsets\n"
        "offset.storage.partitions=5\n"
        "offset.flush.interval.ms=2000\n"
        "# The embedded broker holds a consumer group join for half of session.timeout.ms\n"
        "# (22.5 s at the 45 s default): a short session lets the sink start within seconds.\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "schema.registry.enable=true\n"
        f"schema.registry.listener={registry_url}\n"
        "schema.registry.topic=_schemas\n"
        "# The file connectors may read and write this directory only.\n"
        f"file.connectors.allowed.dirs={d.resolve()}\n"
    )
    source = d / "file-source.properties"
    source.write_text(
        f"name={SOURCE_CONNECTOR}\n"
        "connector.class=FileStreamSource\n"
        "tasks.max=1\n"
        f"file={(d / 'input.txt').resolve()}\n"
        f"topic={TOPIC}\n" + _ONE_PARTITION
    )
    sink = d / "file-sink.properties"
    sink.write_text(
        f"name={SINK_CONNECTOR}\n"
        "connector.class=FileStreamSink\n"
        "tasks.max=1\n"
        f"file={(d / 'output.txt').resolve()}\n"
        f"topics={TOPIC}\n"
    )
    orders = d / "datagen-orders.properties"
    orders.write_text(
        f"name={ORDERS_CONNECTOR}\n"
        "connector.class=io.confluent.kafka.connect.datagen.DatagenConnector\n"
        "tasks.max=1\n"
        "quickstart=orders\n"
        f"kafka.topic={ORDERS_TOPIC}\n"
        f"rate={ORDERS_RATE}\n"
        "value.converter=io.confluent.connect.avro.AvroConverter\n"
        f"value.converter.schema.registry.url={registry_url}\n" + _ONE_PARTITION
    )
    return worker, [source, sink, orders]


def _quiet_logs() -> None:
    """Only warnings and errors from the worker and its libraries (httpx logs every request
    at INFO, the worker its lifecycle)."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("httpx", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)


def run_demo(
    directory: str,
    initial_lines: int,
    duration: float | None,
    port: int = 8083,
    verbose: bool = False,
) -> int:
    """Run the demo until a signal or ``duration`` seconds; the exit status."""
    if not verbose:
        _quiet_logs()
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    input_path, output_path = d / "input.txt", d / "output.txt"
    for p in (input_path, output_path):
        p.unlink(missing_ok=True)
    with input_path.open("w") as f:
        f.writelines(f"demo line {i}\n" for i in range(initial_lines))

    stop, skip_drain = threading.Event(), threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        (skip_drain if stop.is_set() else stop).set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(d, input_path, output_path, initial_lines, duration, port, stop, skip_drain)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(
    d: Path,
    input_path: Path,
    output_path: Path,
    n: int,
    duration: float | None,
    port: int,
    stop: threading.Event,
    skip_drain: threading.Event,
) -> int:
    started = time.monotonic()
    with EmbeddedBroker() as broker:
        registry_url = f"http://127.0.0.1:{free_port()}"
        worker_path, connector_paths = _write_configs(
            d, broker.bootstrap_servers, port, registry_url
        )
        _create_topics(broker.bootstrap_servers, (TOPIC, ORDERS_TOPIC))
        process = WorkerProcess.build(load_properties(worker_path), "standalone")
        initial = [load_connector_file(p) for p in connector_paths]
        worker_stop = threading.Event()
        failure: list[BaseException] = []

        def _work() -> None:
            try:
                process.run(initial, worker_stop)
            except BaseException as e:  # reported on the main thread
                failure.append(e)

        runner = threading.Thread(target=_work, name="demo-worker")
        runner.start()
        while not process.herder.ready and runner.is_alive():
            time.sleep(0.05)
        if failure:
            raise failure[0]
        waited: float | None = 0.0
        try:
            _banner(d, broker.bootstrap_servers, process.rest.url, registry_url)
            n = _feed_and_report(process, input_path, output_path, n, duration, stop, runner)
            waited = _drain(process, input_path, output_path, skip_drain)
            counts = _counts(process, started, input_path, output_path)
        finally:
            worker_stop.set()
            runner.join(60)
    if failure:
        raise failure[0]
    ordered = in_order(_lines(input_path), _lines(output_path))
    for line in summary_lines(counts, ordered, str(output_path), ORDERS_TOPIC, waited):
        print(line)
    return 0


def _create_topics(bootstrap: str, topics: tuple[str, ...]) -> None:
    """Create ``topics`` with one partition before the worker starts (the sink subscribes at
    once and finds its topic there), through the runtime's KIP-158 topic creator and an admin
    client whose librdkafka logs go to Python logging."""
    creation = TopicCreationConfig.from_connector_config(_ONE_PARTITION_SETTINGS)
    assert creation is not None  # both default settings are given
    admin = admin_config(bootstrap, {}, None, OverridePolicy("None"), "connectrt-demo-admin")
    creator = TopicCreator(admin, creation)
    try:
        for topic in topics:
            creator.ensure(topic)
    finally:
        creator.close()


def _banner(d: Path, bootstrap: str, rest_url: str, registry_url: str) -> None:
    print("connectrt demo: an embedded broker and a worker running two pipelines")
    print(f"  lines:   {d / 'input.txt'} -> topic {TOPIC} -> {d / 'output.txt'}")
    print(f"  orders:  quickstart orders, {ORDERS_RATE}/s -> topic {ORDERS_TOPIC} as Avro")
    print(f"  broker:  {bootstrap} (embedded, in memory; not Apache Kafka)")
    print(f"  REST:    {rest_url}")
    print(f"  console: {rest_url}/ui")
    print(f"  schemas: {registry_url}")
    print(f"  configs: {d}/*.properties")
    print(f"  try:     connectrt connectors list --url {rest_url}")
    print(f"           curl -s {registry_url}/subjects")
    print(f"  note:    {KCAT_NOTE}")
    print("A line is appended to the input every 100 ms; Ctrl-C stops the demo.", flush=True)


def _feed_and_report(
    process: WorkerProcess,
    input_path: Path,
    output_path: Path,
    n: int,
    duration: float | None,
    stop: threading.Event,
    runner: threading.Thread,
) -> int:
    """Append a line every 100 ms and report every 2 s until the stop; the input's lines."""
    started = time.monotonic()
    deadline = None if duration is None else started + duration
    last_report = 0.0
    states: dict[str, str] = {}
    while not stop.wait(APPEND_EVERY_S) and runner.is_alive():
        with input_path.open("a") as f:
            f.write(f"demo line {n}\n")
        n += 1
        now = time.monotonic()
        if now - last_report >= REPORT_EVERY_S:
            last_report = now
            now_states, details = _states(process)
            for line in state_changes(states, now_states, details):
                print(line)
            states = now_states
            print(progress_line(_counts(process, started, input_path, output_path)), flush=True)
        if deadline is not None and now >= deadline:
            break
    return n


def _drain(
    process: WorkerProcess, input_path: Path, output_path: Path, skip: threading.Event
) -> float | None:
    """Wait until the sink has written every input line, up to :data:`DRAIN_TIMEOUT_S`, while
    the sink runs; the seconds waited, or None when a second Ctrl-C cut the wait short."""
    started = time.monotonic()
    in_flight = _count_lines(input_path) - _count_lines(output_path)
    if in_flight <= 0:
        return 0.0
    print(
        f"stopping: {in_flight} lines in flight; waiting up to {DRAIN_TIMEOUT_S:.0f}s "
        "for the sink (Ctrl-C to skip)",
        flush=True,
    )
    while time.monotonic() - started < DRAIN_TIMEOUT_S:
        if skip.wait(0.2):
            return None
        if _count_lines(output_path) >= _count_lines(input_path):
            break
        if _states(process)[0].get(SINK_CONNECTOR) != "RUNNING":
            break  # a failed or stopped sink will not catch up
    return time.monotonic() - started


def _states(process: WorkerProcess) -> tuple[dict[str, str], dict[str, str]]:
    """Each connector's and task's state (``name``, ``name task N``), and the first line of
    the trace of those that failed."""
    states: dict[str, str] = {}
    details: dict[str, str] = {}
    for name in process.herder.connectors():
        try:
            status = process.herder.connector_status(name)
        except Exception:  # deleted or not reported yet
            continue
        instances: list[tuple[str, Any]] = [(name, status.connector)]
        instances += [(f"{name} task {i}", info) for i, info in status.tasks]
        for label, info in instances:
            states[label] = info.state
            if info.trace:
                details[label] = first_line(info.trace)
    return states, details


def _counts(
    process: WorkerProcess, started: float, input_path: Path, output_path: Path
) -> DemoCounts:
    states, _ = _states(process)
    connectors = process.herder.connectors()
    running = sum(
        1
        for name in connectors
        if all(s == "RUNNING" for label, s in states.items() if label.split(" task ")[0] == name)
        and states.get(name) == "RUNNING"
    )
    return DemoCounts(
        time.monotonic() - started,
        _count_lines(input_path),
        _count_lines(output_path),
        _produced(process, ORDERS_CONNECTOR),
        running,
        len(connectors),
    )


def _produced(process: WorkerProcess, connector: str) -> int:
    """Records of ``connector``'s tasks acknowledged by the broker so far."""
    try:
        handles = process.herder.worker.runners(connector)
    except Exception:  # not started (yet) or already stopped
        return 0
    return sum(h.metrics.records_produced for h in handles.values())
