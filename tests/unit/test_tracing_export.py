"""The tracing export path: trace records encoded straight into OTLP protobuf (compared with the
SDK's own encoding of the same spans) and the exporter process (a real child process, console
exporter). The tracers: test_tracing.py; a real backend: tests/integration/test_tracing_jaeger.py.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping
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

from connectrt.api import SinkTask
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.sink.runner import SinkTaskRunner
from connectrt.runtime.sink.tracing import SinkTracer
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.settings import SinkRunnerSettings
from connectrt.runtime.tracing import exporter as trace_exporter
from connectrt.runtime.tracing.exporter import ChildOutlet
from connectrt.runtime.tracing.otlp_encoding import RequestEncoder
from connectrt.runtime.tracing.otlp_sender import otlp_sender
from connectrt.runtime.tracing.sdk_spans import spans
from connectrt.testing.fake_kafka import FakeKafka

_SINK_BASE = {
    "messaging.system": "kafka",
    "messaging.consumer.group.name": "connect-c",
    "connectrt.connector": "c",
    "connectrt.task": 0,
}
_SOURCE_BASE = {"messaging.system": "kafka", "connectrt.connector": "src", "connectrt.task": 1}
_TIMELINE = [("consume", 100, 200), ("convert", 200, 300), ("transform a", 300, 350)]
_SINK_RECORDS = [
    (0xA1, 0xB1, 0xC1, "orders", 2, 41, 200),  # continues its producer's span 0xC1
    (0xA2, 0xB2, 0, "orders", 0, 2**40, 260),  # a producer's clock ahead: starts at its time
]
_SOURCE_RECORDS = [(0xD1, 0xE1, "out", None), (0xD2, 0xE2, "out", 3)]
_TRACE_RECORDS: list[tuple[Any, ...]] = [
    ("sink", _SINK_BASE, "orders", 500, _TIMELINE, (0xF1, 0xF2), _SINK_RECORDS, 1),
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
    # the batch and its consume; per sink record its span and 2 stages, and its commit; per
    # source record its span and 2 stages, and its commit; the DLQ write
    n = 2 + 6 + 2 + 6 + 2 + 1
    assert len(got.resource_spans[0].scope_spans[0].spans) == len(sdk_spans) == n
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
    assert [s.name for s in got.resource_spans[0].scope_spans[0].spans][:3] == [
        "process orders batch",
        "consume",
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
    assert len(spans_received) == 8  # the batch and its consume, per record its span and 2 stages


class _SlowSink(SinkTask):
    """A sink whose ``put`` takes a while: its batches reach the outlet at a pace the shipper
    (waking every quarter second) ships well under the bound."""

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: Any) -> None:
        time.sleep(0.3)

    def stop(self) -> None:
        pass


def test_an_offset_commit_of_more_traced_records_than_the_bound_is_exported_whole(
    monkeypatch: Any,
) -> None:
    """A commit covers every record traced since the last one (25,000 at 1% of 500,000 records/s
    and a 5 s interval): its spans must not count against the outlet's bound, which is for the
    batches waiting to be shipped. (The tracers once sent a commit's records again, weighing as
    many, and the outlet dropped it whole: half of a busy sink's traced records.)"""
    import http.server
    import threading

    n, batch = 300, 50
    monkeypatch.setattr(trace_exporter, "MAX_PENDING", 3 * batch)
    kafka = FakeKafka()
    kafka.create_topic("t")
    for i in range(n):
        traceparent = f"00-{i + 1:032x}-{i + 1:016x}-01".encode()
        kafka.append("t", b"v", headers=[("traceparent", traceparent)])
    received: list[ExportTraceServiceRequest] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(ExportTraceServiceRequest.FromString(body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    runner: SinkTaskRunner | None = None

    def consumer(config: dict[str, Any]) -> Any:
        made = kafka.consumer(config)

        def more(c: Any) -> bool:
            if sum(c.positions.values()) < n:
                return True
            assert runner is not None
            runner.stop()  # everything consumed: stop, committing once
            return False

        made.on_consume = more
        return made

    header = SimpleHeaderConverter()
    header.configure({})
    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=TaskConverters(ByteArrayConverter(), ByteArrayConverter(), header),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,  # one commit, at the stop, covering all n records
        consumer_config={"group.id": "connect-c"},
        consumer_factory=consumer,
        max_poll_records=batch,
    )
    url = f"http://127.0.0.1:{server.server_port}"
    tracing = TracingSettings("otlp", url, "http/protobuf", 1.0, "commit-bound")
    outlet = ChildOutlet(tracing)
    try:
        runner = SinkTaskRunner(TaskId("c", 0), _SlowSink(), settings)
        SinkTracer.attach(runner, tracing, outlet)
        runner.start()
        runner.join(60)
        assert not runner.is_alive() and runner.failed is None, runner.failed
    finally:
        outlet.close(timeout=120)  # the exporter process sends everything, then ends
        server.shutdown()
        server.server_close()
    names = Counter(
        span.name
        for request in received
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    )
    assert outlet.dropped == 0
    assert names["process t"] == n
    assert names["offset commit"] == n


def test_ledger_hands_each_tracer_its_records_at_its_commit_and_stays_bounded(
    monkeypatch: Any,
) -> None:
    from connectrt.runtime.tracing import commit_ledger as trace_ledger
    from connectrt.runtime.tracing.commit_ledger import CommitLedger

    ledger = CommitLedger()
    a = [(1, 11, 0, "t", 0, 5, 100)]
    b = [(2, 22, 0, "t", 1, 6, 100), (3, 33, 0, "t", 1, 7, 100)]
    resolved = ledger.resolve(
        [
            ("sink", _SINK_BASE, "t", 9, _TIMELINE, (1, 2), a, 1),
            ("sink", _SINK_BASE, "t", 9, _TIMELINE, (3, 4), b, 2),
            ("committed", _SINK_BASE, 5, 6, 2),
            ("committed", _SINK_BASE, 7, 8, 2),  # nothing traced since: no commit spans
        ]
    )
    assert [r[0] for r in resolved] == ["sink", "sink", "commit"]
    assert resolved[2] == ("commit", _SINK_BASE, 5, 6, b)
    assert ledger.resolve([("committed", _SINK_BASE, 9, 10, 1)]) == [
        ("commit", _SINK_BASE, 9, 10, a)
    ]
    monkeypatch.setattr(trace_ledger, "MAX_UNCOMMITTED", 2)
    monkeypatch.setattr(trace_ledger, "MAX_TRACERS", 2)
    ledger.resolve([("source", _SOURCE_BASE, [], _SOURCE_RECORDS + _SOURCE_RECORDS[:1], 5)])
    assert ledger.skipped == 1  # over the per-tracer bound: no commit span, counted
    ledger.resolve([("source", _SOURCE_BASE, [], _SOURCE_RECORDS[:1], k) for k in (6, 7)])
    assert ledger.resolve([("committed", _SOURCE_BASE, 1, 2, 5)]) == []  # the oldest, let go
    assert ledger.resolve([("committed", _SOURCE_BASE, 1, 2, 7)]) == [
        ("commit", _SOURCE_BASE, 1, 2, _SOURCE_RECORDS[:1])
    ]


def test_a_backend_stalling_4_s_makes_the_tracers_drop_nothing(monkeypatch: Any) -> None:
    """A backend that takes its time answering must not make the tracers drop spans: while the
    exporter process waits for it, the pipe (widened) and the parent's bound hold what comes.
    (With the default 64 KiB pipe, the shipper blocked on it and 4 s of stall dropped 2,000.)"""
    import http.server
    import threading

    monkeypatch.setattr(trace_exporter, "MAX_PENDING", 2_000)
    requests: list[int] = []

    class SlowFirst(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if not requests:
                time.sleep(4)  # the backend stalls on the first request
            request = ExportTraceServiceRequest.FromString(body)
            requests.append(len(request.resource_spans[0].scope_spans[0].spans))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowFirst)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    outlet = ChildOutlet(TracingSettings("otlp", url, "http/protobuf", 1.0, "slow-backend"))
    batches, per_batch = 12, 500  # 500 traced records every 0.3 s: 2,000 wait at most 1.2 s
    ids = random.Random(35).getrandbits
    try:
        for b in range(batches):
            records = [
                (ids(128), ids(64), ids(64), "t", 0, b * per_batch + i, 200)
                for i in range(per_batch)
            ]
            batch = ("sink", _SINK_BASE, "t", per_batch, _TIMELINE, (b + 1, 1), records, 1)
            outlet.put(batch, per_batch)
            outlet.flush()
            time.sleep(0.3)
    finally:
        outlet.close(timeout=120)
        server.shutdown()
        server.server_close()
    assert outlet.dropped == 0
    # per batch: its span and consume, and per record its span and 2 stages
    assert sum(requests) == batches * (2 + 3 * per_batch)


def test_a_consumed_batch_is_made_into_its_sink_record_on_the_exporter_side() -> None:
    """The sink tracer hands over a batch's chosen records unparsed (``consumed``); the ledger
    makes the ``sink`` record: traceparent parsed, parent-based choice, ids, each record's start
    (the batch's arrival, or its timestamp when later), the timeline in order with convert
    ending where the first transformation starts."""
    from connectrt.runtime.tracing.commit_ledger import CommitLedger

    stages = {"convert": [200, 400], "transform a": [250, 300], "put": [400, 450]}
    chosen = [
        b"00-" + b"a1" * 16 + b"-" + b"c1" * 8 + b"-01", "t", 2, 41, 0,  # continues span 0xc1..
        b"00-" + b"a2" * 16 + b"-" + b"c2" * 8 + b"-00", "t", 2, 42, 0,  # not sampled: left out
        None, "t", 3, 7, 1,  # no traceparent: a trace of its own, from its later timestamp
    ]  # fmt: skip
    ledger = CommitLedger()
    (sink,) = ledger.resolve([("consumed", _SINK_BASE, 500, 100, 150, stages, chosen, True, 9)])
    tag, base, topic, size, timeline, (batch_trace, batch_span), records, key = sink
    assert (tag, base, topic, size, key) == ("sink", _SINK_BASE, "t", 500, 9)
    assert timeline == [
        ("consume", 100, 150),
        ("convert", 200, 250),
        ("transform a", 250, 300),
        ("put", 400, 450),
    ]
    assert batch_trace and batch_span
    first, own = records
    assert first[:3] == (int("a1" * 16, 16), first[1], int("c1" * 8, 16))
    assert first[3:] == ("t", 2, 41, 150)
    assert own[0] not in (0, first[0]) and own[2] == 0
    assert own[3:] == ("t", 3, 7, 1_000_000)
    assert first[1] and own[1] and first[1] != own[1]
    # its records wait for their commit like any sink record's
    (commit,) = ledger.resolve([("committed", _SINK_BASE, 600, 650, 9)])
    assert commit == ("commit", _SINK_BASE, 600, 650, records)
    # without parent-based sampling the unsampled one is traced; with none left, no record
    (every,) = ledger.resolve([("consumed", _SINK_BASE, 500, 100, 150, {}, chosen, False, 9)])
    assert [r[5] for r in every[6]] == [41, 42, 7]
    assert ledger.resolve([("consumed", _SINK_BASE, 9, 1, 2, {}, chosen[5:10], True, 9)]) == []


def test_frames_carry_trace_records_by_marshal_and_by_pickle_when_marshal_refuses() -> None:
    """The shipper's frames: marshal for the usual tuples of ints, strings and bytes; pickle
    for a frame holding a value marshal does not take (an enum here); read back in order."""
    import io
    import marshal

    from opentelemetry.trace import SpanKind

    plain = [_TRACE_RECORDS[0], ("committed", _SINK_BASE, 1, 2, 7)]
    odd = [("span", "dlq write", 1, 2, 0, 3, 4, 0, {"kind": SpanKind.CONSUMER})]
    first, second = trace_exporter.encode_frame(plain), trace_exporter.encode_frame(odd)
    assert first[4:5] == b"m" and marshal.loads(first[5:]) == plain
    assert second[4:5] == b"p"
    assert int.from_bytes(first[:4], "big") == len(first) - 4
    read = list(trace_exporter._frames(io.BytesIO(first + second + first[:7])))  # a cut frame
    assert read == [plain, odd]


def test_the_exporter_process_keeps_freed_memory_for_its_next_requests() -> None:
    """glibc takes the exporter's malloc settings (a process of its own, as the exporter is)."""
    import subprocess
    import sys

    code = "from connectrt.runtime.tracing.exporter import keep_freed_memory as k; print(k())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_stage_spans_carry_the_task_and_the_record_and_record_spans_the_messaging_attributes() -> (
    None
):
    encoder = RequestEncoder({"service.name": "svc"})
    got = ExportTraceServiceRequest.FromString(encoder.request(encoder.spans(_TRACE_RECORDS)))
    keys = {}
    for span in got.resource_spans[0].scope_spans[0].spans:
        keys.setdefault(span.name, {a.key for a in span.attributes})
    record = {"messaging.destination.name", "messaging.destination.partition.id"}
    task = {"connectrt.connector", "connectrt.task"}
    assert keys["process orders"] >= record | task | {"messaging.system", "messaging.kafka.offset"}
    assert "messaging.consumer.group.name" in keys["process orders"]
    for stage in ("convert", "transform a", "offset commit"):
        assert keys[stage] == record | task | {"messaging.kafka.offset"}, stage
    assert keys["produce"] == task | {"messaging.destination.name"}  # a source's stage
    assert "messaging.system" in keys["send out"]
