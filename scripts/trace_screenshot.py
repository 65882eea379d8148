"""A screenshot of one record's trace in Zipkin's UI, for docs/operators/see-a-pipeline.md.

Starts Zipkin (:mod:`connectrt.testing.zipkin`, its jar fetched by Maven into the user cache)
and, in front of it, an OpenTelemetry Collector that takes OTLP and sends Zipkin JSON
(:mod:`connectrt.testing.otel_collector`, built from the Go module proxy into the user cache the
first time), then the embedded broker and a worker tracing every record
(``tracing.sampler.ratio=1.0``) into the collector. A FileStream sink with two transformations
reads ``orders``; the script plays the producer with the OpenTelemetry SDK (service
``orders-producer``), sending three records each in a span of its own with the span's
``traceparent`` header, so the sink continues the producer's trace. Once Zipkin's API holds the
whole trace of the last record, headless Chromium (:mod:`connectrt.testing.browser`) opens that
trace in Zipkin's UI and saves the page. Run from the checkout:

    .venv/bin/python scripts/trace_screenshot.py [output file]

The default output is docs/operators/images/trace-in-zipkin.png. Takes about half a minute once
the jar and the collector are cached (fetching the jar takes a few minutes, building the
collector several more, the first time).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.tracing.tracer import format_traceparent
from connectrt.storage.states import State
from connectrt.testing import browser as chromium
from connectrt.testing.harness import WorkerHarness, create_topic
from connectrt.testing.otel_collector import ZipkinCollector, collector_binary
from connectrt.testing.zipkin import ZipkinServer

TOPIC = "orders"
SINK = "orders-to-file"
STAGES = ["convert", "transform stamp", "transform rename", "put", "offset commit"]


def _produce(bootstrap: str, otlp_http: str, count: int) -> list[str]:
    """``count`` records, each sent in a producer span; their trace ids."""
    provider = TracerProvider(resource=Resource.create({"service.name": "orders-producer"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(otlp_http + "/v1/traces")))
    tracer = provider.get_tracer("trace_screenshot")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    trace_ids = []
    for n in range(count):
        with tracer.start_as_current_span(f"send {TOPIC}", kind=SpanKind.PRODUCER) as span:
            context = span.get_span_context()
            value = json.dumps({"orderid": 1000 + n, "itemid": f"Item_{n * 7}", "units": n + 1})
            producer.produce(
                TOPIC, value.encode(), headers=[("traceparent", format_traceparent(context))]
            )
            producer.flush(30)
        trace_ids.append(f"{context.trace_id:032x}")
        time.sleep(0.5)  # one record a batch: each trace shows one record's own stage times
    provider.shutdown()
    return trace_ids


def _wait_trace(zipkin: ZipkinServer, trace_id: str, timeout: float = 90.0) -> None:
    """Until Zipkin holds the producer's span, the sink's ``process`` span and every stage."""
    deadline = time.monotonic() + timeout
    names: list[str] = []
    while time.monotonic() < deadline:
        names = [span.get("name", "") for span in zipkin.trace(trace_id)]
        if len(names) >= 2 + len(STAGES):
            return
        time.sleep(0.5)
    raise SystemExit(f"trace {trace_id} incomplete in Zipkin after {timeout:.0f} s: {names}")


def _shoot(zipkin: ZipkinServer, trace_id: str, out: Path) -> None:
    with chromium.launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 940})
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.goto(zipkin.trace_url(trace_id))
        page.get_by_text("transform rename").first.wait_for()
        page.get_by_text(f"process {TOPIC}").first.click()  # its tags show in the side panel
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out))
        context.close()


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "docs/operators/images/trace-in-zipkin.png").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    binary = collector_binary()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ZipkinServer() as zipkin,
        ZipkinCollector(binary, Path(tmp), zipkin.spans_endpoint) as collector,
        EmbeddedBroker() as broker,
    ):
        create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
        props = {
            "tracing.enabled": "true",
            "tracing.otlp.endpoint": collector.otlp_http,
            "tracing.sampler.ratio": "1.0",
            "tracing.service.name": "connectrt-sink",
        }
        output = Path(tmp) / "orders.txt"
        with WorkerHarness(broker.bootstrap_servers, props) as worker:
            worker.start_connector(
                SINK,
                {
                    "connector.class": "FileStreamSink",
                    "topics": TOPIC,
                    "file": str(output),
                    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter.schemas.enable": "false",
                    "transforms": "stamp,rename",
                    "transforms.stamp.type": "InsertField$Value",
                    "transforms.stamp.static.field": "pipeline",
                    "transforms.stamp.static.value": SINK,
                    "transforms.rename.type": "ReplaceField$Value",
                    "transforms.rename.renames": "units:quantity",
                },
            )
            worker.wait_until(
                lambda: [s.state for s in worker.task_states(SINK)] == [State.RUNNING],
                90,
                "the sink task RUNNING",
            )
            time.sleep(3)  # the task's consumer joins its group and is assigned the partition
            trace_ids = _produce(broker.bootstrap_servers, collector.otlp_http, 3)
            worker.wait_until(
                lambda: worker.metrics(SINK)[0].records_committed >= len(trace_ids),
                90,
                "the sink's offsets committed",
            )
        _wait_trace(zipkin, trace_ids[-1])
        _shoot(zipkin, trace_ids[-1], out)
    print(f"wrote {out} (trace {trace_ids[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
