# Why one module over 450 lines: its Python loops are the byte-for-byte oracle of the C loops it
# calls, and both work on one state (the caches, the pool of span ids, the commit ledger).
"""Trace records encoded straight into an OTLP ``ExportTraceServiceRequest`` (protobuf bytes).

The SDK's OTLP encoder spends about 95 µs of CPU per span (measured: 12,600 spans of trace
records, Python 3.11, protobuf 7 upb): tracing 1% of a sink moving 300,000 records/s makes about
20,000 spans/s, more than two cores' worth. This encoder writes the protobuf wire format itself,
from the trace records (:mod:`connectrt.runtime.tracing.tracer` lists their layouts, as
:class:`~connectrt.runtime.tracing.commit_ledger.CommitLedger` resolves them) without making SDK
spans. The spans of one traced record differ only in their span ids, names and times, so it
builds them from byte templates: per batch, each stage's name, kind and times (one piece for
every record of the batch); per traced record, the part its child spans share (trace id,
parent id, attributes, flags; kept for its offset commit span, which comes later); per set of
stages, a ``%``-format with the length prefixes; per span, a span id sliced from a pool of
random bytes. A protobuf message's fields may come in any order, so the pieces are
concatenated as they come. The spans are those
:func:`connectrt.runtime.tracing.sdk_spans.spans` makes (the unit tests decode both and compare).

:meth:`RequestEncoder.requests` takes the records as they come from the tasks' process: a
sink's ``consumed`` batch is made into its spans, and a tracer's ``committed`` record into the
offset commit spans of the records it sent since, through the encoder's own
:class:`~connectrt.runtime.tracing.commit_ledger.CommitLedger` (:attr:`RequestEncoder.ledger`).

The per-record loops (a consumed batch's spans: :meth:`RequestEncoder._consumed`, a sink trace
record's: :meth:`RequestEncoder._sink`, and an offset commit's: :meth:`RequestEncoder._commit`)
run in the optional C extension (``otlp_consumed``, ``otlp_sink_batch``, ``otlp_commit_spans``
in connectrt/_speedups.c) when it is built, writing the same bytes; the Python loops here are
the fallback and the tests' oracle. ``otlp_consumed`` reads a consumed batch's traceparent
headers, draws its ids from the encoder's pool, orders its stages and writes its spans in one
pass, keeping each traced record's shared part (bytes) for its commit rather than a Python
tuple: measured 2026-11-30 on the trace records a sink tracing 1% of 4,000,000 records handed
over (captured from a run on Apache Kafka, replayed; medians of 5 rounds), the encoding from
the wire records to the request bytes took 1.2-1.3 µs of CPU per traced record, against 3.3
through :func:`~connectrt.runtime.tracing.tracer.sink_batch` and ``otlp_sink_batch``. Measured
on
2026-11-29 (a loaded machine: load average 12 to 18; synthetic trace records of a sink tracing
1% of its records, 5 of each batch of 500, 4 to 5 spans per traced record; the Python and C
loops alternating in one process, 5 to 7 rounds, medians): the encoding from the resolved
trace records to the request bytes takes 1.2 µs of CPU per traced record with the C loops, 8.0
µs with the Python loops (9.9 µs before the C loops and the single join of
:meth:`RequestEncoder.request`); the exporter's whole path from the pickled records (ledger and
:func:`~connectrt.runtime.tracing.tracer.sink_batch` included) 3.4 µs against 10.0 (12.3 before).

The byte pieces are in :mod:`connectrt.runtime.tracing.otlp_pieces`. Used by the exporter
process (:mod:`connectrt.runtime.tracing.exporter`).
:class:`RequestEncoder` holds one resource's encoded attributes and caches; one thread uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from types import ModuleType
from typing import Any

from connectrt.runtime.tracing.commit_ledger import CommitLedger
from connectrt.runtime.tracing.otlp_pieces import (
    CONSUMER,
    FLAGS_LOCAL,
    FLAGS_REMOTE,
    INTERNAL,
    LINK_FLAGS_REMOTE,
    LINK_OFFSET_HEADS,
    OFFSET_HEADS,
    PARTITION,
    PRODUCER,
    StageFormats,
    new_pool,
    offset_attribute,
    span_head,
    stage_fields,
    trace_field,
)
from connectrt.runtime.tracing.otlp_wire import (
    CACHE_MAX,
    encode_attributes,
    length_delimited,
    varint,
)
from connectrt.runtime.tracing.tracer import stage_attributes, timeline_of, trace_context
from connectrt.speedups import SPEEDUPS

__all__ = ["RequestEncoder", "encode_attributes"]


def _c_loops(module: ModuleType | None) -> ModuleType | None:
    """``module`` (the C extension) when it has the per-record loops of :meth:`RequestEncoder._sink`
    and :meth:`RequestEncoder._commit`, else None (an extension built before them: Python)."""
    if module is None or not all(
        hasattr(module, name)
        for name in ("otlp_sink_batch", "otlp_commit_spans", "otlp_consumed", "otlp_source_batch")
    ):
        return None
    return module


_SHARED_MAX = 250_000  # sink records awaiting their commit span whose shared part is kept


class RequestEncoder:
    """Encodes trace records into ``ExportTraceServiceRequest`` messages of one resource."""

    def __init__(self, resource_attributes: Mapping[str, Any], scope: str = "connectrt") -> None:
        self._resource = length_delimited(b"\x0a", encode_attributes(resource_attributes, b"\x0a"))
        self._scope = length_delimited(b"\x0a", length_delimited(b"\x0a", scope.encode()))
        self._where: dict[tuple[str, int | None], bytes] = {}
        self._process = encode_attributes({"messaging.operation.type": "process"})
        self._send = encode_attributes({"messaging.operation.type": "send"})
        # per sink record span id, the part its child spans share (trace id field, parent id
        # field, attributes, flags): its offset commit span, later, takes it
        self._shared: dict[int, bytes] = {}
        self._formats = StageFormats()
        self._bases: dict[int, tuple[bytes, bytes]] = {}
        self._topics: dict[str, bytes] = {}
        self._pool = b""  # random span ids, 8 bytes each, drawn POOL_IDS at a time
        self._at = 0
        # the C loops over a batch's records (connectrt/_speedups.c), or None: the Python ones
        self._c = _c_loops(SPEEDUPS)
        self.ledger = CommitLedger()
        """The traced records awaiting their offset commit span, by tracer (see
        :meth:`requests`)."""

    # -- pieces --------------------------------------------------------------------------------
    def _ids(self, n: int) -> int:
        """Where ``n`` new span ids start in ``self._pool`` (none of them zero)."""
        at = self._at
        if at + 8 * n > len(self._pool):
            self._pool, at = new_pool(n), 0
        self._at = at + 8 * n
        return at

    def _children(
        self, shared: bytes, middles: list[bytes], sizes: tuple[int, ...], out: list[bytes]
    ) -> None:
        """One child span per stage (``middles``: their name, kind and times fields; ``sizes``
        their sizes) of a record whose spans share ``shared``, each with a new span id."""
        n = len(middles)
        at = self._at
        if at + 8 * n > len(self._pool):
            at = self._ids(n)
        else:
            self._at = at + 8 * n
        pool = self._pool
        fmt = self._formats[(sizes, len(shared))]
        if n == 1:
            out.append(fmt % (shared, middles[0], pool[at : at + 8]))
            return
        args: list[bytes] = []
        for i, middle in enumerate(middles, at // 8):
            args += (shared, middle, pool[8 * i : 8 * i + 8])
        out.append(fmt % tuple(args))

    def _sink_attributes(self, base: bytes, r: tuple[Any, ...]) -> bytes:
        where = self._where.get((r[3], r[4]))
        if where is None:
            where = self._where_of(r[3], r[4])
        return base + where + offset_attribute(r[5])

    def _source_attributes(self, base: bytes, r: tuple[Any, ...]) -> bytes:
        where = self._where.get((r[2], r[3]))
        if where is None:
            where = self._where_of(r[2], r[3])
        return base + where

    @staticmethod
    def _span(
        trace: bytes, span_id: int, parent: int, middle: bytes, attributes: bytes, flags: bytes
    ) -> bytes:
        """One whole span (its length prefix included)."""
        body = b"".join(
            (
                trace,
                b"\x12\x08",
                span_id.to_bytes(8, "big"),
                b"\x22\x08" + parent.to_bytes(8, "big") if parent else b"",
                middle,
                attributes,
                flags,
            )
        )
        return span_head(len(body)) + body

    # -- the trace records -------------------------------------------------------------------------
    def _sink(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        _tag, base_attributes, topic, size, timeline, batch_ids, records = record[:7]
        batch_trace, batch_span = batch_ids
        base, stage_base = self._base(base_attributes, record[7] if len(record) > 7 else None)
        if len(self._shared) > _SHARED_MAX:
            self._shared.clear()  # records whose commit never came (their task went): let go
        if self._c is not None:
            spans, self._pool, self._at = self._c.otlp_sink_batch(
                record,
                base,
                stage_base,
                self._topic(topic),
                self._process,
                self._shared,
                self._where,
                self._where_of,
                self._pool,
                self._at,
                new_pool,
            )
            out.append(spans)
            return 2 + len(records) * len(timeline)
        start = timeline[0][1]
        end = max(t[2] for t in timeline)
        head = len(out)
        out.append(b"")  # the batch span, made once its links are
        out.append(b"")  # its consume
        stages = [stage_fields(name, INTERNAL, t0, t1) for name, t0, t1 in timeline[1:]]
        links = self._sink_records(records, base, stage_base, end, stages, out)
        batch_attributes = {
            "messaging.operation.type": "process",
            "messaging.destination.name": topic,
            "messaging.batch.message_count": size,
            "connectrt.traced_records": len(records),
        }
        batch_trace_field = trace_field(batch_trace)
        out[head] = self._span(
            batch_trace_field,
            batch_span,
            0,
            stage_fields(f"process {topic} batch", CONSUMER, start, end),
            base + encode_attributes(batch_attributes) + b"".join(links),
            FLAGS_LOCAL,
        )
        # the batch's consume() call (the receive): a child of the batch span
        name, t0, t1 = timeline[0]
        receive = (
            batch_trace_field
            + b"\x22\x08"
            + batch_span.to_bytes(8, "big")
            + base
            + self._topic(topic)
            + FLAGS_LOCAL
        )
        consume = [stage_fields(name, INTERNAL, t0, t1)]
        mark = len(out)
        self._children(receive, consume, (len(consume[0]),), out)
        out[head + 1] = out.pop(mark)
        return 2 + len(records) * (1 + len(stages))

    def _consumed(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        """A ``consumed`` trace record's spans (those of its ``sink`` record: see
        :func:`~connectrt.runtime.tracing.tracer.sink_batch`), its traced records noted in the
        ledger for their commit. The C extension's ``otlp_consumed`` does it in one pass and
        keeps the records' shared parts for the ledger; the Python path makes the ``sink``
        record (its ids drawn from the pool as the C one draws them) and encodes it."""
        key = record[8]
        base, stage_base = self._base(record[1], key)
        if self._c is not None:
            spans, shared, self._pool, self._at, count = self._c.otlp_consumed(
                record,
                base,
                stage_base,
                self._topic,
                self._process,
                self._where,
                self._where_of,
                self._pool,
                self._at,
                new_pool,
                trace_context,
            )
            if count:
                out.append(spans)
                self.ledger.add(key, shared)
            return int(count)
        sink = self._sink_record(record)
        if sink is None:
            return 0
        self.ledger.add(key, sink[6])
        return self._sink(sink, out)

    def _id(self, size: int) -> int:
        """A new id of ``size`` bytes (8 or 16) from the pool."""
        at = self._ids(size // 8)
        return int.from_bytes(self._pool[at : at + size], "big")

    def _sink_record(self, consumed: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The ``sink`` record of a ``consumed`` one, or None when no chosen record is traced:
        :func:`~connectrt.runtime.tracing.tracer.sink_batch` with the ids from the pool, in the
        order ``otlp_consumed`` draws them (per traced record a trace id for one without a
        parent, then its span id; then the batch's trace id and span id)."""
        _tag, base, size, start, arrived, stages, chosen, parent_based, key = consumed
        records = []
        for i in range(0, len(chosen), 5):
            header, topic, partition, offset, stamp = chosen[i : i + 5]
            parent = trace_context(header)
            if parent is not None and parent_based and not parent[2] & 1:
                continue  # its producer did not sample it
            stamp *= 1_000_000
            own_start = arrived if arrived >= stamp else stamp
            trace_id, parent_id = (self._id(16), 0) if parent is None else parent[:2]
            records.append((trace_id, self._id(8), parent_id, topic, partition, offset, own_start))
        if not records:
            return None
        batch = (self._id(16), self._id(8))
        timeline = timeline_of(start, arrived, stages)
        return ("sink", base, records[0][3], size, timeline, batch, records, key)

    def _sink_records(
        self,
        records: list[tuple[Any, ...]],
        base: bytes,
        stage_base: bytes,
        end: int,
        stages: list[bytes],
        out: list[bytes],
    ) -> list[bytes]:
        """The spans of a sink batch's traced records (each its span, attributes ``base``, and
        one child per stage of ``stages``, attributes ``stage_base``), appended to ``out``;
        returns the batch span's links to their parents. The Python loop (the C one:
        ``sink_record_spans`` in connectrt/_speedups.c)."""
        sizes = tuple(len(m) for m in stages)
        n = len(stages)
        process, where_of, shared_of = self._process, self._where, self._shared
        middles: dict[tuple[str, int], bytes] = {}
        links: list[bytes] = []
        for r in records:
            trace_id, span_id_int, parent, topic_r, partition, offset, own_start = r[:7]
            trace = b"\x0a\x10" + trace_id.to_bytes(16, "big")
            span_id = span_id_int.to_bytes(8, "big")
            where = where_of.get((topic_r, partition))
            if where is None:
                where = self._where_of(topic_r, partition)
            number = varint(offset) if offset >= 0 else varint(offset & 0xFFFFFFFFFFFFFFFF)
            record_attributes = where + OFFSET_HEADS[len(number)] + number
            attributes = base + record_attributes
            middle = middles.get((topic_r, own_start))
            if middle is None:
                middle = stage_fields(
                    f"process {topic_r}", CONSUMER, own_start, max(end, own_start)
                )
                middles[(topic_r, own_start)] = middle
            if parent:
                parent_id = parent.to_bytes(8, "big")
                tail = b"\x22\x08" + parent_id + attributes + process + FLAGS_REMOTE
                link = b"\x12\x08".join((trace, parent_id)) + (
                    LINK_OFFSET_HEADS[len(number)] + number + LINK_FLAGS_REMOTE
                )
                links.append(b"\x6a" + varint(len(link)) + link)
            else:
                tail = attributes + process + FLAGS_LOCAL
            out.append(span_head(28 + len(tail) + len(middle)))
            out.append(trace + b"\x12\x08" + span_id + tail + middle)
            shared = trace + b"\x22\x08" + span_id + stage_base + record_attributes + FLAGS_LOCAL
            shared_of[span_id_int] = shared  # for its offset commit span
            if n:
                self._children(shared, stages, sizes, out)
        return links

    def _base(self, attributes: Mapping[str, Any], key: int | None) -> tuple[bytes, bytes]:
        """A tracer's base attributes, encoded, and those its stage spans carry
        (:func:`~connectrt.runtime.tracing.tracer.stage_attributes`); kept by its key: they
        never change."""
        bases = self._bases.get(key) if key is not None else None
        if bases is None:
            bases = (encode_attributes(attributes), encode_attributes(stage_attributes(attributes)))
            if key is not None:
                if len(self._bases) >= CACHE_MAX:
                    self._bases.clear()
                self._bases[key] = bases
        return bases

    def _topic(self, topic: str) -> bytes:
        """The ``messaging.destination.name`` attribute (kept)."""
        encoded = self._topics.get(topic)
        if encoded is None:
            if len(self._topics) >= CACHE_MAX:
                self._topics.clear()
            encoded = encode_attributes({"messaging.destination.name": topic})
            self._topics[topic] = encoded
        return encoded

    def _where_of(self, topic: str, partition: int | None) -> bytes:
        """A record's topic and partition attributes (kept; no partition for a source record
        whose partition the producer chooses)."""
        if len(self._where) >= CACHE_MAX:
            self._where.clear()
        attributes: dict[str, Any] = {"messaging.destination.name": topic}
        if partition is not None:
            attributes[PARTITION] = str(partition)
        where = self._where[(topic, partition)] = encode_attributes(attributes)
        return where

    def _source(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        _tag, base_attributes, timeline, records = record[:4]
        key = record[4] if len(record) > 4 else None
        base = encode_attributes(base_attributes)
        stage_base = encode_attributes(stage_attributes(base_attributes))
        if self._c is not None:  # the loop below in C, the records' shared parts kept as bytes
            spans, shared, self._pool, self._at = self._c.otlp_source_batch(
                record,
                base,
                stage_base,
                self._send,
                self._where,
                self._where_of,
                self._pool,
                self._at,
                new_pool,
            )
            out.append(spans)
            if key is not None:  # its records await their commit
                self.ledger.add(key, shared)
            return len(records) * (1 + len(timeline))
        if key is not None:
            self.ledger.add(key, records)
        start = timeline[0][1]
        end = max(t[2] for t in timeline)
        stages = [stage_fields(name, INTERNAL, t0, t1) for name, t0, t1 in timeline]
        sizes = tuple(len(m) for m in stages)
        n = len(stages)
        send = self._send
        middles: dict[str, bytes] = {}
        for r in records:
            trace = trace_field(r[0])
            attributes = self._source_attributes(base, r)
            middle = middles.get(r[2])
            if middle is None:
                middle = middles[r[2]] = stage_fields(f"send {r[2]}", PRODUCER, start, end)
            out.append(self._span(trace, r[1], 0, middle, attributes + send, FLAGS_LOCAL))
            shared = self._committed_shared(stage_base, r)
            if n:
                self._children(shared, stages, sizes, out)
        return len(records) * (1 + n)

    def _commit(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        _tag, base_attributes, start, end, records = record
        base = encode_attributes(stage_attributes(base_attributes))
        commit = [stage_fields("offset commit", INTERNAL, start, end)]
        if self._c is not None:
            spans, self._pool, self._at = self._c.otlp_commit_spans(
                records,
                commit[0],
                self._shared,
                partial(self._committed_shared, base),
                self._pool,
                self._at,
                new_pool,
            )
            out.append(spans)
            return len(records)
        sizes = (len(commit[0]),)
        children, shared_of = self._children, self._shared
        for r in records:
            if type(r) is bytes:  # a shared part itself (the C extension's otlp_consumed)
                children(r, commit, sizes, out)
                continue
            shared = shared_of.pop(r[1], None) if len(r) > 4 else None
            if shared is None:  # a source record, or one let go of
                shared = self._committed_shared(base, r)
            children(shared, commit, sizes, out)
        return len(records)

    def _committed_shared(self, base: bytes, r: tuple[Any, ...]) -> bytes:
        """The shared part of a record's stage spans (``base``: its tracer's stage attributes),
        made again for a committed one not kept (a source record's, or a sink record's let go
        of)."""
        if len(r) > 4:
            attributes = self._sink_attributes(base, r)
        else:
            attributes = self._source_attributes(base, r)
        return b"".join(
            (trace_field(r[0]), b"\x22\x08", r[1].to_bytes(8, "big"), attributes, FLAGS_LOCAL)
        )

    def _one(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        _tag, name, trace_id, span_id, parent_id, start, end, kind, attributes = record
        out.append(
            self._span(
                trace_field(trace_id),
                span_id,
                parent_id,
                stage_fields(name, int(kind) + 1, start, end),
                encode_attributes(attributes),
                FLAGS_REMOTE if parent_id else FLAGS_LOCAL,
            )
        )
        return 1

    def _encode(self, record: tuple[Any, ...], out: list[bytes]) -> int:
        """Appends the encoded spans of ``record`` to ``out`` (pieces, whole spans together);
        returns how many spans (an unknown tag makes none)."""
        tag = record[0]
        if tag == "consumed":
            return self._consumed(record, out)
        if tag == "sink":
            if len(record) > 7 and record[7] is not None:  # with its tracer's key: its
                self.ledger.add(record[7], record[6])  # records await their commit
            return self._sink(record, out)
        if tag == "commit":
            return self._commit(record, out)
        if tag == "source":
            return self._source(record, out)
        if tag == "span":
            return self._one(record, out)
        return 0

    # -- requests ----------------------------------------------------------------------------------
    def spans(self, records: Iterable[tuple[Any, ...]]) -> list[bytes]:
        """The encoded spans of ``records``, as pieces to concatenate (each a ScopeSpans
        ``spans`` field when joined)."""
        out: list[bytes] = []
        for record in records:
            self._encode(record, out)
        return out

    def request(self, spans: list[bytes]) -> bytes:
        """An ``ExportTraceServiceRequest`` holding ``spans`` (pieces from :meth:`spans`): its
        length prefixes computed first, so the spans are copied once (a request is large)."""
        inner = len(self._scope) + sum(map(len, spans))
        scope_head = b"\x12" + varint(inner)  # ResourceSpans.scope_spans
        outer = len(self._resource) + len(scope_head) + inner
        parts = [b"\x0a" + varint(outer), self._resource, scope_head, self._scope]
        parts += spans
        return b"".join(parts)

    def requests(self, records: Iterable[tuple[Any, ...]], max_spans: int) -> Iterator[bytes]:
        """The requests holding the spans of ``records`` (the wire layouts: a ``consumed``
        record is made into its spans and a ``committed`` one into the commit spans of the
        records its tracer sent since, through :attr:`ledger`; or the span makers' layouts),
        of about ``max_spans`` spans each (a request is cut after a trace record; a commit
        record is cut into parts first, so no request holds more than ``max_spans`` plus one
        batch's spans)."""
        out: list[bytes] = []
        count = 0
        for record in records:
            for part in self._parts(record, max_spans):
                count += self._encode(part, out)
                if count >= max_spans:
                    yield self.request(out)
                    out, count = [], 0
        if count:
            yield self.request(out)

    def _parts(self, record: tuple[Any, ...], max_spans: int) -> Sequence[tuple[Any, ...]]:
        """``record`` as the span makers take it: a ``committed`` record made into the
        ``commit`` of the records its tracer sent since (taken from :attr:`ledger`), and a
        commit of more than ``max_spans`` records cut into parts."""
        if record[0] == "committed":
            _tag, base, start, end, key = record
            record = ("commit", base, start, end, self.ledger.take(key))
        if record[0] != "commit" or len(record[4]) <= max_spans:
            return (record,)
        tag, base, start, end, committed = record
        return [
            (tag, base, start, end, committed[i : i + max_spans])
            for i in range(0, len(committed), max_spans)
        ]
