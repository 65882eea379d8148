"""OpenTelemetry tracing through a sink and a source, read back from a real Jaeger on loopback.

Jaeger v2 is built once from the Go module proxy into the user cache
(:mod:`connectrt.testing.jaeger`; the first run builds for several minutes) and runs with an
in-memory store; the worker exports to it over OTLP (HTTP), and the test reads the traces
through Jaeger's own query API. The test plays the producer and the downstream consumer with
the OpenTelemetry SDK, exporting its own spans to the same Jaeger.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from confluent_kafka import Consumer, Producer
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.tracing.tracer import format_traceparent, parse_traceparent
from connectrt.testing.harness import WorkerHarness, create_topic
from connectrt.testing.jaeger import JaegerServer, jaeger_binary

pytestmark = pytest.mark.integration

SAMPLED = 12
UNSAMPLED = 4


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JaegerServer]:
    server = JaegerServer(jaeger_binary(), tmp_path_factory.mktemp("jaeger"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def test_tracer(jaeger: JaegerServer) -> Iterator[trace.Tracer]:
    """The test's own tracer (service ``test-client``), exporting each span at once."""
    provider = TracerProvider(resource=Resource.create({"service.name": "test-client"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=jaeger.otlp_http + "/v1/traces"))
    )
    yield provider.get_tracer("test")
    provider.shutdown()


def _wait_trace(
    jaeger: JaegerServer, trace_id: str, ready: Any, timeout: float = 90.0
) -> dict[str, Any]:
    """The trace once ``ready(trace)`` holds (spans arrive in several exports)."""
    deadline = time.monotonic() + timeout
    found = None
    while time.monotonic() < deadline:
        found = jaeger.trace(trace_id)
        if found is not None and ready(found):
            return found
        time.sleep(0.5)
    raise AssertionError(f"trace {trace_id} not complete in Jaeger after {timeout}s: {found}")


def _service(trace_doc: dict[str, Any], span: dict[str, Any]) -> str:
    return str(trace_doc["processes"][span["processID"]]["serviceName"])


def _tags(span: dict[str, Any]) -> dict[str, Any]:
    return {t["key"]: t["value"] for t in span.get("tags", [])}


def _parent(span: dict[str, Any]) -> str | None:
    for ref in span.get("references", []):
        if ref["refType"] == "CHILD_OF":
            return str(ref["spanID"])
    return None


def _children(trace_doc: dict[str, Any], parent_id: str) -> list[dict[str, Any]]:
    spans = [s for s in trace_doc["spans"] if _parent(s) == parent_id]
    return sorted(spans, key=lambda s: (s["startTime"], s["operationName"]))


def test_sink_continues_each_sampled_record_trace(
    broker: EmbeddedBroker,
    jaeger: JaegerServer,
    test_tracer: trace.Tracer,
    tmp_path: Path,
    unique_name: Any,
) -> None:
    topic = unique_name("traced")
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    sampled: dict[int, tuple[str, str]] = {}  # n -> (trace id, producer span id)
    unsampled: list[str] = []
    rng = random.Random(35)
    for n in range(SAMPLED + UNSAMPLED):
        if n % 4 == 3:  # a producer that did not sample this record: traceparent flags 00
            trace_id = f"{rng.getrandbits(128):032x}"
            header = f"00-{trace_id}-{rng.getrandbits(64):016x}-00"
            unsampled.append(trace_id)
        else:
            with test_tracer.start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER) as s:
                context = s.get_span_context()
                header = format_traceparent(context)
            sampled[n] = (f"{context.trace_id:032x}", f"{context.span_id:016x}")
        producer.produce(topic, f'{{"n": {n}}}'.encode(), headers=[("traceparent", header)])
    assert producer.flush(30) == 0
    assert len(sampled) == SAMPLED
    out = tmp_path / "out.txt"
    worker_props = {
        "tracing.enabled": "true",
        "tracing.otlp.endpoint": jaeger.otlp_http,
        "tracing.sampler.ratio": "1.0",
        "tracing.service.name": "connectrt-sink",
    }
    with WorkerHarness(broker.bootstrap_servers, worker_props) as h:
        h.start_connector(
            "traced-sink",
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
        h.wait_until(
            lambda: out.exists() and len(out.read_text().splitlines()) == SAMPLED + UNSAMPLED,
            90,
            "every record written by the sink",
        )
        h.wait_until(
            lambda: h.metrics("traced-sink")[0].records_committed >= SAMPLED + UNSAMPLED,
            60,
            "the sink's offsets committed",
        )
    assert "number" in out.read_text() and "via" in out.read_text()
    stages = ["convert", "transform stamp", "transform rename", "put", "offset commit"]
    for n, (trace_id, producer_span) in sampled.items():

        def complete(doc: dict[str, Any]) -> bool:
            return len(doc["spans"]) >= 2 + len(stages)

        doc = _wait_trace(jaeger, trace_id, complete)
        process = [s for s in doc["spans"] if s["operationName"] == f"process {topic}"]
        assert len(process) == 1, doc["spans"]
        record_span = process[0]
        assert _service(doc, record_span) == "connectrt-sink"
        assert _parent(record_span) == producer_span  # continued from the record's traceparent
        (send,) = [s for s in doc["spans"] if s["spanID"] == producer_span]
        assert record_span["startTime"] >= send["startTime"]  # processed after it was produced
        tags = _tags(record_span)
        assert tags["messaging.destination.name"] == topic
        assert tags["messaging.destination.partition.id"] == "0"
        assert tags["messaging.kafka.offset"] == n
        assert tags["connectrt.connector"] == "traced-sink"
        assert tags["connectrt.task"] == 0
        children = _children(doc, record_span["spanID"])
        assert [c["operationName"] for c in children] == stages
        starts = [c["startTime"] for c in children]
        assert starts == sorted(starts)
        for child in children:
            assert child["startTime"] >= record_span["startTime"]
    # The batch span: one trace of its own, linked to the records' producer spans.
    batches = jaeger.get(
        f"/api/traces?service=connectrt-sink&operation=process%20{topic}%20batch&limit=20"
    )["data"]
    assert batches, "no batch span"
    linked: set[str] = set()
    for doc in batches:
        for span in doc["spans"]:
            if span["operationName"] == f"process {topic} batch":
                linked |= {
                    r["spanID"] for r in span["references"] if r["refType"] == "FOLLOWS_FROM"
                }
                assert _tags(span)["messaging.batch.message_count"] >= 1
                receive = _children(doc, span["spanID"])  # the consume() call: the batch's
                assert [c["operationName"] for c in receive] == ["consume"]
    assert {s for _, s in sampled.values()} <= linked
    for trace_id in unsampled:  # parent-based: a record its producer did not sample is not traced
        assert jaeger.trace(trace_id) is None


def test_source_writes_traceparent_that_a_consumer_continues(
    broker: EmbeddedBroker,
    jaeger: JaegerServer,
    test_tracer: trace.Tracer,
    tmp_path: Path,
    unique_name: Any,
) -> None:
    topic = unique_name("traced-src")
    create_topic(broker.bootstrap_servers, topic)  # subscribed before the source's first record
    src = tmp_path / "in.txt"
    lines = 5
    src.write_text("".join(f"line {i}\n" for i in range(lines)))
    worker_props = {
        "tracing.enabled": "true",
        "tracing.otlp.endpoint": jaeger.otlp_http,
        "tracing.sampler.ratio": "1.0",
        "tracing.service.name": "connectrt-source",
    }
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique_name("reader"),
            "auto.offset.reset": "earliest",
        }
    )
    continued: list[tuple[str, str]] = []  # (trace id, the source's send span id)
    with WorkerHarness(broker.bootstrap_servers, worker_props) as h:
        h.start_connector(
            "traced-source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": topic},
        )
        consumer.subscribe([topic])
        deadline = time.monotonic() + 90
        while len(continued) < lines and time.monotonic() < deadline:
            for msg in consumer.consume(10, 0.5):
                if msg.error() is not None:
                    continue
                header = dict(msg.headers() or []).get("traceparent")
                context = parse_traceparent(header)
                assert context is not None, f"no traceparent on {msg.value()!r}: {header!r}"
                parent = trace.set_span_in_context(trace.NonRecordingSpan(context))
                with test_tracer.start_as_current_span(
                    f"process {topic}", context=parent, kind=SpanKind.CONSUMER
                ):
                    pass
                continued.append((f"{context.trace_id:032x}", f"{context.span_id:016x}"))
        consumer.close()
        assert len(continued) == lines, "not every line arrived with a traceparent"
        h.wait_until(
            lambda: h.metrics("traced-source")[0].records_committed >= lines,
            60,
            "the source's offsets committed",
        )
    for trace_id, send_span in continued:

        def complete(doc: dict[str, Any]) -> bool:
            return len(doc["spans"]) >= 5  # send, poll, produce, offset commit, the consumer

        doc = _wait_trace(jaeger, trace_id, complete)
        by_id = {s["spanID"]: s for s in doc["spans"]}
        send = by_id[send_span]
        assert send["operationName"] == f"send {topic}"
        assert _service(doc, send) == "connectrt-source"
        assert _parent(send) is None  # the trace starts at the source's poll()
        children = _children(doc, send_span)
        names = [c["operationName"] for c in children]
        assert names[:2] == ["poll", "produce"]
        assert "offset commit" in names
        consumer_spans = [c for c in children if _service(doc, c) == "test-client"]
        assert [c["operationName"] for c in consumer_spans] == [f"process {topic}"]
