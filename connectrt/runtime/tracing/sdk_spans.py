"""Trace records made into OpenTelemetry SDK spans, and the span exporters.

:func:`spans` turns one trace record (the tuples :mod:`connectrt.runtime.tracing.tracer`
describes) into the SDK's finished spans (``ReadableSpan``), with the attributes, parents, kinds
and links the tracing guide lists. It runs in the exporter process
(:mod:`connectrt.runtime.tracing.exporter`), or, through :class:`LocalOutlet`, in the task's
own process (tests, and a process that could not start the exporter process). No tracer or
sampler is involved: the tracers chose the records and timed the stages themselves.

Stateless functions; :class:`LocalOutlet` is thread-safe as its span processor is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from connectrt.runtime.config.tracing import GRPC_PROTOCOL, TracingSettings
from connectrt.runtime.tracing.commit_ledger import CommitLedger
from connectrt.runtime.tracing.tracer import new_id, stage_attributes

__all__ = ["LocalOutlet", "make_exporter", "resource_of", "spans"]

_INSTRUMENTATION = InstrumentationScope("connectrt")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)
_OFFSET = "messaging.kafka.offset"


def _id() -> int:
    return new_id(64) or 1


def make_exporter(settings: TracingSettings) -> SpanExporter:
    """The span exporter ``settings`` name: OTLP over HTTP or gRPC, or the console."""
    if settings.exporter == "console":
        return ConsoleSpanExporter()
    if settings.protocol == GRPC_PROTOCOL:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(
            endpoint=settings.endpoint, insecure=settings.endpoint.startswith("http://")
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=settings.endpoint + "/v1/traces")


def resource_of(settings: TracingSettings) -> Resource:
    """The spans' resource: ``service.name`` (and ``OTEL_RESOURCE_ATTRIBUTES``)."""
    return Resource.create({"service.name": settings.service_name})


def _context(trace_id: int, span_id: int, remote: bool = False) -> SpanContext:
    return SpanContext(trace_id, span_id, remote, _SAMPLED)


def _span(
    resource: Resource,
    name: str,
    context: SpanContext,
    parent: SpanContext | None,
    start: int,
    end: int,
    attributes: dict[str, Any],
    kind: SpanKind = SpanKind.INTERNAL,
    links: tuple[Link, ...] | list[Link] = (),
) -> ReadableSpan:
    return ReadableSpan(
        name,
        context,
        parent,
        resource,
        attributes,
        (),
        links,
        kind,
        None,
        _UNSET,
        start,
        end,
        _INSTRUMENTATION,
    )


def _sink_attributes(base: dict[str, Any], record: tuple[Any, ...]) -> dict[str, Any]:
    topic, partition, offset = record[3:6]
    return {
        **base,
        "messaging.destination.name": topic,
        "messaging.destination.partition.id": str(partition),
        _OFFSET: offset,
    }


def _source_attributes(base: dict[str, Any], record: tuple[Any, ...]) -> dict[str, Any]:
    attributes = {**base, "messaging.destination.name": record[2]}
    if record[3] is not None:
        attributes["messaging.destination.partition.id"] = str(record[3])
    return attributes


def _sink(record: tuple[Any, ...], resource: Resource) -> Iterator[ReadableSpan]:
    _tag, base, topic, size, timeline, (batch_trace, batch_span), records = record[:7]
    start = timeline[0][1]
    end = max(t[2] for t in timeline)
    links = [Link(_context(r[0], r[2], True), {_OFFSET: r[5]}) for r in records if r[2] != 0]
    batch = _context(batch_trace, batch_span)
    yield _span(
        resource,
        f"process {topic} batch",
        batch,
        None,
        start,
        end,
        {
            **base,
            "messaging.operation.type": "process",
            "messaging.destination.name": topic,
            "messaging.batch.message_count": size,
            "connectrt.traced_records": len(records),
        },
        SpanKind.CONSUMER,
        links,
    )
    name, t0, t1 = timeline[0]  # the consume() call (the receive): the batch's
    receive = {**base, "messaging.destination.name": topic}
    yield _span(resource, name, _context(batch_trace, _id()), batch, t0, t1, receive)
    stage_base = stage_attributes(base)
    for r in records:
        trace_id, span_id, parent_id = r[0], r[1], r[2]
        attributes = _sink_attributes(base, r)
        context = _context(trace_id, span_id)
        own_start = r[6]  # the batch's arrival, or the record's timestamp (see SinkTracer)
        yield _span(
            resource,
            f"process {r[3]}",
            context,
            _context(trace_id, parent_id, True) if parent_id else None,
            own_start,
            max(end, own_start),
            {**attributes, "messaging.operation.type": "process"},
            SpanKind.CONSUMER,
        )
        stage = _sink_attributes(stage_base, r)
        for name, t0, t1 in timeline[1:]:
            yield _span(resource, name, _context(trace_id, _id()), context, t0, t1, stage)


def _source(record: tuple[Any, ...], resource: Resource) -> Iterator[ReadableSpan]:
    _tag, base, timeline, records = record[:4]
    start = timeline[0][1]
    end = max(t[2] for t in timeline)
    stage_base = stage_attributes(base)
    for r in records:
        trace_id = r[0]
        attributes = _source_attributes(base, r)
        context = _context(trace_id, r[1])
        yield _span(
            resource,
            f"send {r[2]}",
            context,
            None,
            start,
            end,
            {**attributes, "messaging.operation.type": "send"},
            SpanKind.PRODUCER,
        )
        stage = _source_attributes(stage_base, r)
        for name, t0, t1 in timeline:
            yield _span(resource, name, _context(trace_id, _id()), context, t0, t1, stage)


def _commit(record: tuple[Any, ...], resource: Resource) -> Iterator[ReadableSpan]:
    _tag, base, start, end, records = record
    base = stage_attributes(base)
    for r in records:
        attributes = _sink_attributes(base, r) if len(r) > 4 else _source_attributes(base, r)
        yield _span(
            resource,
            "offset commit",
            _context(r[0], _id()),
            _context(r[0], r[1]),
            start,
            end,
            attributes,
        )


def _one(record: tuple[Any, ...], resource: Resource) -> Iterator[ReadableSpan]:
    _tag, name, trace_id, span_id, parent_id, start, end, kind, attributes = record
    parent = _context(trace_id, parent_id, True) if parent_id else None
    yield _span(
        resource, name, _context(trace_id, span_id), parent, start, end, attributes, SpanKind(kind)
    )


_MAKERS = {"sink": _sink, "source": _source, "commit": _commit, "span": _one}


def spans(record: tuple[Any, ...], resource: Resource) -> Iterator[ReadableSpan]:
    """The finished spans of one trace record, as the ledger resolved it (an unknown tag, and
    an unresolved ``committed`` record, make none)."""
    maker = _MAKERS.get(record[0])
    return maker(record, resource) if maker is not None else iter(())


class LocalOutlet:
    """A :class:`~connectrt.runtime.tracing.tracer.TraceOutlet` making the spans in this process
    and handing them to ``processor`` at once (tests; a process without its exporter process).
    Thread-safe: one lock around the ledger and the processor calls."""

    def __init__(self, processor: SpanProcessor, resource: Resource) -> None:
        self._processor = processor
        self._resource = resource
        self._ledger = CommitLedger()
        self._lock = threading.Lock()

    def put(self, record: tuple[Any, ...], weight: int) -> None:
        with self._lock:
            for resolved in self._ledger.resolve([record]):
                for span in spans(resolved, self._resource):
                    self._processor.on_end(span)

    def flush(self) -> None:
        self._processor.force_flush(10_000)
