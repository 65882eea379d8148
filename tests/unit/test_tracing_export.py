"""The tracing export path: trace records encoded straight into OTLP protobuf (compared with the
SDK's own encoding of the same spans) and the exporter process (a real child process, console
exporter). The tracers: test_tracing.py; a real backend: tests/integration/test_tracing_jaeger.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.resources import Resource

from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.tasks import trace_exporter
from connectrt.runtime.tasks.otlp_encoding import RequestEncoder
from connectrt.runtime.tasks.otlp_sender import otlp_sender
from connectrt.runtime.tasks.trace_exporter import ChildOutlet
from connectrt.runtime.tasks.trace_spans import spans

_SINK_BASE = {
    "messaging.system": "kafka",
    "messaging.consumer.group.name": "connect-c",
    "connectrt.connector": "c",
    "connectrt.task": 0,
}
_SOURCE_BASE = {"messaging.system": "kafka", "connectrt.connector": "src", "connectrt.task": 1}
_TIMELINE = [("consume", 100, 200), ("convert", 200, 300), ("transform a", 300, 350)]
_SINK_RECORDS = [
    (0xA1, 0xB1, 0xC1, "orders", 2, 41),  # continues its producer's span 0xC1
    (0xA2, 0xB2, 0, "orders", 0, 2**40),  # no traceparent: a trace of its own
]
_SOURCE_RECORDS = [(0xD1, 0xE1, "out", None), (0xD2, 0xE2, "out", 3)]
_TRACE_RECORDS: list[tuple[Any, ...]] = [
    ("sink", _SINK_BASE, "orders", 500, _TIMELINE, (0xF1, 0xF2), _SINK_RECORDS),
    ("commit", _SINK_BASE, 400, 450, _SINK_RECORDS),
    ("source", _SOURCE_BASE, [("poll", 10, 20), ("produce", 20, 30)], _SOURCE_RECORDS),
    ("commit", _SOURCE_BASE, 40, 50, _SOURCE_RECORDS),
    ("span", "dlq write", 0xA1, 0xB9, 0xC1, 60, 70, 0, {**_SINK_BASE, "error.type": "E"}),
]


def _normalised(request: ExportTraceServiceRequest) -> list[tuple[Any, ...]]:
    """The request's spans, comparable across encoders: the random ids of stage spans (and the
    parent ids naming them) replaced by the parent span's name."""
    out = []
    (resource_spans,) = request.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    by_id = {(s.trace_id, s.span_id): s.name for s in scope_spans.spans}
    for s in scope_spans.spans:
        attributes = sorted((a.key, str(a.value).strip()) for a in s.attributes)
        parent = by_id.get((s.trace_id, s.parent_span_id), s.parent_span_id.hex())
        own = s.span_id.hex() if s.name.startswith(("process", "send", "dlq")) else "stage"
        links = sorted(
            (lk.trace_id.hex(), lk.span_id.hex(), str(list(lk.attributes))) for lk in s.links
        )
        out.append(
            (
                s.trace_id.hex(),
                own,
                parent,
                s.name,
                s.kind,
                s.start_time_unix_nano,
                s.end_time_unix_nano,
                tuple(attributes),
                tuple(links),
                s.flags & 0x300,  # has-is-remote, is-remote (the SDK sets no W3C bits)
            )
        )
    return sorted(out)


def test_direct_encoding_is_the_sdk_encoding_of_the_same_spans() -> None:
    resource = Resource.create({"service.name": "svc"})
    sdk_spans = [span for record in _TRACE_RECORDS for span in spans(record, resource)]
    expected = ExportTraceServiceRequest.FromString(encode_spans(sdk_spans).SerializeToString())
    encoder = RequestEncoder(dict(resource.attributes))
    body = encoder.request(encoder.spans(_TRACE_RECORDS))
    got = ExportTraceServiceRequest.FromString(body)
    assert len(got.resource_spans[0].scope_spans[0].spans) == len(sdk_spans) == 20
    assert _normalised(got) == _normalised(expected)
    got_resource = {a.key: a.value.string_value for a in got.resource_spans[0].resource.attributes}
    assert got_resource["service.name"] == "svc"
    assert got.resource_spans[0].scope_spans[0].scope.name == "connectrt"


def test_exporter_process_exports_what_it_was_given_before_it_ends(
    capfd: pytest.CaptureFixture[str],
) -> None:
    settings = TracingSettings("console", "", "http/protobuf", 1.0, "child-test")
    outlet = ChildOutlet(settings)
    try:
        outlet.put(_TRACE_RECORDS[2], 2)
        outlet.flush()
    finally:
        outlet.close(timeout=120)
    assert outlet._process.returncode == 0
    out = capfd.readouterr().out  # the child writes to the inherited standard output
    assert out.count('"name": "send out"') == 2
    assert out.count('"name": "poll"') == 2 and out.count('"name": "produce"') == 2
    assert f"0x{0xD1:032x}" in out and "child-test" in out


def test_exporter_process_bound_drops_instead_of_queueing(monkeypatch: Any) -> None:
    monkeypatch.setattr(trace_exporter, "SHIP_INTERVAL_S", 3600.0)
    outlet = ChildOutlet(TracingSettings("console", "", "http/protobuf", 1.0, "bound"))
    try:
        outlet.put(_TRACE_RECORDS[0], trace_exporter.MAX_PENDING)
        outlet.put(_TRACE_RECORDS[1], 2)  # over the bound: dropped, counted
        assert outlet.dropped == 2
    finally:
        outlet.close(timeout=120)
    deadline = time.monotonic() + 5
    while outlet._process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert outlet._process.returncode == 0


def _request() -> bytes:
    encoder = RequestEncoder({"service.name": "sent"})
    return encoder.request(encoder.spans(_TRACE_RECORDS[:1]))


def test_sender_posts_the_request_over_http_with_the_otlp_headers_and_gzip() -> None:
    import gzip
    import http.server
    import threading

    received: list[tuple[str, dict[str, str], bytes]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, dict(self.headers), body))
            self.send_response(503 if len(received) == 1 else 200)  # retried once
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%3Dcret",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        }
        send = otlp_sender(f"http://127.0.0.1:{server.server_port}", "http/protobuf", env)
        assert send(_request())
    finally:
        server.shutdown()
        server.server_close()
    assert len(received) == 2
    path, headers, body = received[1]
    assert path == "/v1/traces"
    assert headers["Content-Type"] == "application/x-protobuf"
    assert headers["api-key"] == "s=cret" and headers["Content-Encoding"] == "gzip"
    got = ExportTraceServiceRequest.FromString(gzip.decompress(body))
    assert [s.name for s in got.resource_spans[0].scope_spans[0].spans][:2] == [
        "process orders batch",
        "process orders",
    ]


@pytest.mark.parametrize(("status", "requests"), [(400, 1), (503, 3)])
def test_sender_retries_only_a_retryable_status_and_at_most_three_times(
    status: int, requests: int
) -> None:
    import http.server
    import threading

    received: list[str] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            received.append(self.path)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert not otlp_sender(f"http://127.0.0.1:{server.server_port}", "http/protobuf", {})(
            _request()
        )
    finally:
        server.shutdown()
        server.server_close()
    assert len(received) == requests


def test_sender_calls_the_otlp_grpc_service() -> None:
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[Any] = []

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.append((request, dict(context.invocation_metadata())))
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        env = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "tenant=t1"}
        assert otlp_sender(f"http://127.0.0.1:{port}", "grpc", env)(_request())
    finally:
        server.stop(None)
    ((request, metadata),) = received
    assert metadata["tenant"] == "t1"
    spans_received = request.resource_spans[0].scope_spans[0].spans
    assert len(spans_received) == 9  # the batch, and per record its span and 3 stages
