"""A sink's record traces reach Zipkin through an OpenTelemetry Collector, read back from Zipkin.

The path an operator with a Zipkin sets up: the worker exports OTLP (HTTP) to a collector
(:mod:`connectrt.testing.otel_collector`, built once from the Go module proxy into the user
cache) whose ``zipkin`` exporter posts Zipkin JSON to a real Zipkin server
(:mod:`connectrt.testing.zipkin`, its jar fetched by Maven once). The test plays the producer
with the OpenTelemetry SDK through the same collector and reads each trace back through
Zipkin's own API (``/api/v2/trace/{id}``), the one its UI shows. The UI itself is pictured by
scripts/trace_screenshot.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from confluent_kafka import Producer
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.tracing.tracer import format_traceparent
from connectrt.storage.states import State
from connectrt.testing.harness import WorkerHarness, create_topic
from connectrt.testing.otel_collector import ZipkinCollector, collector_binary
from connectrt.testing.zipkin import ZipkinServer

pytestmark = [pytest.mark.integration, pytest.mark.java]

RECORDS = 3
STAGES = ["convert", "transform stamp", "transform rename", "put", "offset commit"]


class ZipkinPath(NamedTuple):
    """The Zipkin server and the collector in front of it (what the worker exports to)."""

    zipkin: ZipkinServer
    collector: ZipkinCollector


@pytest.fixture(scope="module")
def zipkin_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZipkinPath]:
    binary = collector_binary()
    with ZipkinServer() as zipkin:
        workdir = tmp_path_factory.mktemp("otelcol")
        with ZipkinCollector(binary, workdir, zipkin.spans_endpoint) as collector:
            yield ZipkinPath(zipkin, collector)


def _wait_spans(zipkin: ZipkinServer, trace_id: str, count: int) -> list[dict[str, Any]]:
    """The trace's spans once Zipkin holds ``count`` of them (they come in several exports)."""
    deadline = time.monotonic() + 60
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        spans = zipkin.trace(trace_id)
        if len(spans) >= count:
            return spans
        time.sleep(0.5)
    raise AssertionError(f"trace {trace_id}: {len(spans)} of {count} spans in Zipkin: {spans}")


def test_sink_record_trace_in_zipkin(
    broker: EmbeddedBroker,
    zipkin_path: ZipkinPath,
    tmp_path: Path,
    unique_name: Any,
) -> None:
    topic = unique_name("zipkin")
    create_topic(broker.bootstrap_servers, topic)
    out = tmp_path / "out.txt"
    worker_props = {
        "tracing.enabled": "true",
        "tracing.otlp.endpoint": zipkin_path.collector.otlp_http,
        "tracing.sampler.ratio": "1.0",
        "tracing.service.name": "connectrt-sink",
    }
    provider = TracerProvider(resource=Resource.create({"service.name": "test-client"}))
    provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=zipkin_path.collector.otlp_http + "/v1/traces")
        )
    )
    tracer: trace.Tracer = provider.get_tracer("test")
    sent: list[tuple[str, str]] = []  # (trace id, producer span id) per record
    with WorkerHarness(broker.bootstrap_servers, worker_props) as h:
        h.start_connector(
            "zipkin-sink",
            {
                "connector.class": "FileStreamSink",
                "file": str(out),
                "topics": topic,
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
                "transforms": "stamp,rename",
                "transforms.stamp.type": "InsertField$Value",
                "transforms.stamp.static.field": "via",
                "transforms.stamp.static.value": "connectrt",
                "transforms.rename.type": "ReplaceField$Value",
                "transforms.rename.renames": "n:number",
            },
        )
        try:
            h.wait_until(
                lambda: [s.state for s in h.task_states("zipkin-sink")] == [State.RUNNING],
                60,
                "the sink task RUNNING",
            )
            producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
            for n in range(RECORDS):
                with tracer.start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER) as s:
                    context = s.get_span_context()
                    producer.produce(
                        topic,
                        json.dumps({"n": n}).encode(),
                        headers=[("traceparent", format_traceparent(context))],
                    )
                sent.append((f"{context.trace_id:032x}", f"{context.span_id:016x}"))
            assert producer.flush(30) == 0
            h.wait_until(
                lambda: h.metrics("zipkin-sink")[0].records_committed >= RECORDS,
                60,
                "the sink's offsets of every record committed",
            )
        finally:
            h.running.delete_connector("zipkin-sink")
            provider.shutdown()
    written = out.read_text().splitlines()  # both transformations applied to every record
    assert len(written) == RECORDS
    assert all("number" in line and "via" in line for line in written), written
    zipkin = zipkin_path.zipkin
    for n, (trace_id, producer_span) in enumerate(sent):
        spans = _wait_spans(zipkin, trace_id, 2 + len(STAGES))
        by_id = {span["id"]: span for span in spans}
        send = by_id[producer_span]
        assert send["localEndpoint"]["serviceName"] == "test-client"
        assert send["kind"] == "PRODUCER"
        assert "parentId" not in send
        process = [s for s in spans if s["name"] == f"process {topic}"]
        assert len(process) == 1, spans
        record = process[0]
        assert record["localEndpoint"]["serviceName"] == "connectrt-sink"
        assert record["kind"] == "CONSUMER"
        assert record["parentId"] == producer_span  # continued from the record's traceparent
        # The sink was waiting in consume() before the record was produced: its processing
        # starts when the record arrived, after its producer's span started.
        assert record["timestamp"] >= send["timestamp"]
        assert record["tags"]["messaging.kafka.offset"] == str(n)
        assert record["tags"]["connectrt.connector"] == "zipkin-sink"
        children = [s for s in spans if s.get("parentId") == record["id"]]
        # By start, then end: a stage that took under a microsecond starts with the next one.
        children.sort(key=lambda s: (s["timestamp"], s["timestamp"] + s.get("duration", 0)))
        assert [c["name"] for c in children] == STAGES
        assert all(c["timestamp"] >= record["timestamp"] for c in children)
