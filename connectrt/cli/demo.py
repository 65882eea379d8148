"""The demo behind ``connectrt demo``: two pipelines on an embedded broker.

Starts the embedded broker, writes a worker config and three connector configs into the demo
directory and runs a standalone worker in this process that also serves the built-in schema
registry. Pipelines:

* file -> Kafka -> file: FileStreamSource -> topic ``demo-lines`` -> FileStreamSink, while
  lines keep being appended to the input file;
* datagen -> Avro: the datagen ``orders`` quickstart -> topic ``demo-orders`` as Avro
  (AvroConverter through the built-in registry, Confluent wire format).

Progress of both is printed every 2 s until Ctrl-C or ``--duration`` seconds.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import FrameType

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.process.assembly import WorkerProcess
from connectrt.runtime.properties import load_connector_file, load_properties
from connectrt.testing.harness import create_topic

__all__ = ["run_demo"]

TOPIC = "demo-lines"
TOPIC_PARTITIONS = 4
ORDERS_TOPIC = "demo-orders"
ORDERS_CONNECTOR = "demo-datagen-orders"
ORDERS_RATE = 50  # records/s: enough to watch, little enough for the in-memory broker


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
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "schema.registry.enable=true\n"
        f"schema.registry.listener={registry_url}\n"
        "schema.registry.topic=_schemas\n"
    )
    source = d / "file-source.properties"
    source.write_text(
        "name=demo-file-source\n"
        "connector.class=FileStreamSource\n"
        "tasks.max=1\n"
        f"file={(d / 'input.txt').resolve()}\n"
        f"topic={TOPIC}\n"
    )
    sink = d / "file-sink.properties"
    sink.write_text(
        "name=demo-file-sink\n"
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
        f"value.converter.schema.registry.url={registry_url}\n"
    )
    return worker, [source, sink, orders]


def run_demo(directory: str, initial_lines: int, duration: float | None, port: int = 8083) -> int:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    input_path, output_path = d / "input.txt", d / "output.txt"
    for p in (input_path, output_path):
        p.unlink(missing_ok=True)
    with input_path.open("w") as f:
        f.writelines(f"demo line {i}\n" for i in range(initial_lines))

    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)

    n = initial_lines
    orders = 0
    with EmbeddedBroker() as broker:
        registry_url = f"http://127.0.0.1:{free_port()}"
        worker_path, connector_paths = _write_configs(
            d, broker.bootstrap_servers, port, registry_url
        )
        # The sink subscribes as soon as it starts: create its topic first, so that it does not
        # wait for a metadata refresh to see the topic the source would create on first produce.
        create_topic(broker.bootstrap_servers, TOPIC, TOPIC_PARTITIONS)
        process = WorkerProcess.build(load_properties(worker_path), "standalone")
        initial = [load_connector_file(p) for p in connector_paths]
        worker_stop = threading.Event()
        failure: list[BaseException] = []

        def _run() -> None:
            try:
                process.run(initial, worker_stop)
            except BaseException as e:  # reported on the main thread
                failure.append(e)

        runner = threading.Thread(target=_run, name="demo-worker")
        runner.start()
        while not process.herder.ready and runner.is_alive():
            time.sleep(0.05)
        if failure:
            raise failure[0]
        try:
            url = process.rest.url
            print(f"connectrt demo running on embedded broker {broker.bootstrap_servers}")
            print(f"  worker config : {worker_path}")
            print(f"  source        : {input_path} -> topic {TOPIC}")
            print(f"  sink          : topic {TOPIC} -> {output_path}")
            print(
                f"  datagen       : quickstart orders, {ORDERS_RATE}/s -> topic {ORDERS_TOPIC} "
                "as Avro (Confluent wire format)"
            )
            print(
                f"  schema registry: {registry_url}  "
                f"(try: curl -s {registry_url}/subjects/{ORDERS_TOPIC}-value/versions/latest)"
            )
            print(f"  REST API      : {url}  (try: curl -s '{url}/connectors?expand=status')")
            print("  lines are appended to the input every 100 ms; Ctrl-C stops the demo")
            deadline = None if duration is None else time.monotonic() + duration
            last_report = 0.0
            status = process.herder.worker.status
            while not stop.wait(0.1) and runner.is_alive():
                with input_path.open("a") as f:
                    f.write(f"demo line {n}\n")
                n += 1
                now = time.monotonic()
                if now - last_report >= 2.0:
                    last_report = now
                    states = {
                        name: (s.state.value if (s := status.connector(name)) else "?")
                        for name in process.herder.connectors()
                    }
                    print(
                        f"  input {n} lines, output {_count_lines(output_path)} lines, "
                        f"orders {_produced(process, ORDERS_CONNECTOR)} Avro records, "
                        f"connectors {states}",
                        flush=True,
                    )
                if deadline is not None and now >= deadline:
                    break
        finally:
            orders = _produced(process, ORDERS_CONNECTOR)
            worker_stop.set()
            runner.join(60)
    if failure:
        raise failure[0]
    print(
        f"demo stopped: input {n} lines, output {_count_lines(output_path)} lines "
        f"({output_path}); orders: {orders} Avro records in topic {ORDERS_TOPIC}"
    )
    return 0


def _produced(process: WorkerProcess, connector: str) -> int:
    """Records of ``connector``'s tasks acknowledged by the broker so far."""
    try:
        handles = process.herder.worker.runners(connector)
    except Exception:  # not started (yet) or already stopped
        return 0
    return sum(h.metrics.records_produced for h in handles.values())
