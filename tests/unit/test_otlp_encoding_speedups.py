"""The C loops of the OTLP encoder (``otlp_sink_spans`` and ``otlp_commit_spans`` in
connectrt/_speedups.c) against its Python loops, the oracle: the same trace records, span ids
drawn from the same seeded pools, make the same request bytes. And the Python loops when the
extension is not built or lacks them."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from connectrt.runtime.tracing import otlp_encoding, otlp_pieces
from connectrt.runtime.tracing.otlp_encoding import RequestEncoder
from connectrt.speedups import SPEEDUPS

needs_c = pytest.mark.skipif(
    otlp_encoding._c_loops(SPEEDUPS) is None, reason="connectrt._speedups lacks the OTLP loops"
)

_BASE = {
    "messaging.system": "kafka",
    "messaging.consumer.group.name": "connect-c",
    "connectrt.connector": "c",
    "connectrt.task": 0,
}
_SOURCE_BASE = {"messaging.system": "kafka", "connectrt.connector": "src", "connectrt.task": 1}
_STAGES = [
    ("consume", 100, 200),
    ("convert", 200, 300),
    ("transform a", 300, 350),
    ("put", 350, 900),
]
_OFFSETS = [0, 1, 127, 128, 2**40, 2**63 - 1, -1, -(2**63), 2**64 - 1, 16_383, 16_384]


def _sink_records(rng: random.Random, n: int, topics: list[str]) -> list[tuple[Any, ...]]:
    records = []
    for i in range(n):
        parent = rng.getrandbits(64) or 1 if i % 3 else 0
        records.append(
            (
                rng.getrandbits(128) or 1,
                rng.getrandbits(64) or 1,
                parent,
                topics[i % len(topics)],
                i % 5 if i % 7 else 2**31 - 1,
                _OFFSETS[i % len(_OFFSETS)] if i < 40 else rng.getrandbits(40),
                rng.choice([50, 150, 10**18, 2**64 - 1]),  # before, after the batch's end
            )
        )
    return records


def _trace_records() -> list[tuple[Any, ...]]:
    rng = random.Random(3)
    topics = ["orders", "päyments", "t" * 200]  # a non-ASCII name, a name over 127 bytes
    out: list[tuple[Any, ...]] = []
    committed: list[tuple[Any, ...]] = []
    early: list[tuple[Any, ...]] = []
    for b, (n, timeline) in enumerate(
        [
            (5, _STAGES),
            (1, _STAGES[:1]),  # no stages but the consume
            (12, _STAGES[:2]),
            (700, _STAGES),  # more span ids than a pool holds
            (0, _STAGES),
            (3, [("consume", 10, 20), ("put", 5, 2**63)]),
        ]
    ):
        records = _sink_records(rng, n, topics[: 1 + b % 3])
        key = b if b % 2 else None
        out.append(("sink", _BASE, "orders", 500, timeline, (b + 1, 2**64 - 1 - b), records, key))
        committed += records
        if b == 2:  # a commit before the rest: some of the records kept, some not yet sunk
            early = committed[:10] + committed[-2:]
            out.append(("commit", _BASE, 1000, 1100, early))
    never_sunk = _sink_records(rng, 4, ["lost"])  # let go of: shared parts made again
    sources = [(0xD1, 0xE1, "out", None), (0xD2, 0xE2, "out", 3)]
    out.append(("source", _SOURCE_BASE, [("poll", 10, 20), ("produce", 20, 30)], sources))
    out.append(("commit", _BASE, 2000, 2100, [r for r in committed if r not in early] + never_sunk))
    out.append(("commit", _SOURCE_BASE, 40, 50, sources))
    out.append(("commit", _BASE, 3000, 3100, []))
    out.append(("span", "dlq write", 0xA1, 0xB9, 0xC1, 60, 70, 0, {**_BASE, "error.type": "E"}))
    return out


def _encode(c: bool, records: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setattr(otlp_pieces, "new_id", random.Random(11).getrandbits)
    encoder = RequestEncoder({"service.name": "svc"})
    if not c:
        encoder._c = None
    assert (encoder._c is not None) == c
    return b"".join(encoder.requests(records, 50))


@needs_c
def test_the_c_loops_make_the_bytes_of_the_python_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    pb2 = pytest.importorskip(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        reason="opentelemetry-proto is not installed",
    )
    records = _trace_records()
    python = _encode(False, records, monkeypatch)
    c = _encode(True, records, monkeypatch)
    assert c == python
    # and the requests decode (the same spans, each once): the layout is valid protobuf
    encoder = RequestEncoder({"service.name": "svc"})
    for request in encoder.requests(records, 50):
        message = pb2.ExportTraceServiceRequest.FromString(request)
        for span in message.resource_spans[0].scope_spans[0].spans:
            assert len(span.trace_id) == 16 and len(span.span_id) == 8 and span.name
    assert encoder._shared == {}  # every sunk record's shared part was taken by its commit


@needs_c
def test_the_c_loops_keep_the_caches_as_the_python_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp_encoding, "CACHE_MAX", 3)  # a partition's attributes made again
    records = _trace_records()
    encoders = []
    for c in (False, True):
        monkeypatch.setattr(otlp_pieces, "new_id", random.Random(5).getrandbits)
        encoder = RequestEncoder({"service.name": "svc"})
        if not c:
            encoder._c = None
        body = b"".join(encoder.requests(records[:3], 10))
        encoders.append((body, encoder._shared, encoder._where, encoder._pool, encoder._at))
    assert encoders[0] == encoders[1]
    assert len(encoders[0][2]) <= 3


@needs_c
@pytest.mark.parametrize(
    "bad",
    [
        (-1, 1, 0, "t", 0, 0, 0),  # a negative trace id
        (2**128, 1, 0, "t", 0, 0, 0),
        (1, 2**64, 0, "t", 0, 0, 0),
        (1, 1, -5, "t", 0, 0, 0),
        (1, 1, 0, "t", 0, 0, -1),  # a negative start
    ],
)
def test_the_c_loop_refuses_what_the_python_loop_refuses(
    bad: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    record = ("sink", _BASE, "t", 1, _STAGES, (1, 2), [bad], None)
    for c in (False, True):
        encoder = RequestEncoder({"service.name": "svc"})
        if not c:
            encoder._c = None
        with pytest.raises(OverflowError):
            encoder.spans([record])


@pytest.mark.parametrize("module", [None, SimpleNamespace(), SimpleNamespace(otlp_sink_batch=1)])
def test_the_python_loops_are_used_without_the_c_ones(
    module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otlp_encoding, "SPEEDUPS", module)
    records = _trace_records()
    monkeypatch.setattr(otlp_pieces, "new_id", random.Random(11).getrandbits)
    encoder = RequestEncoder({"service.name": "svc"})
    assert encoder._c is None
    got = b"".join(encoder.requests(records, 50))
    monkeypatch.setattr(otlp_encoding, "SPEEDUPS", SPEEDUPS)
    assert got == _encode(False, records, monkeypatch)


@needs_c
def test_the_c_loops_refuse_malformed_arguments() -> None:
    c: Any = otlp_encoding._c_loops(SPEEDUPS)
    record: tuple[Any, ...] = ("sink", _BASE, "t", 1, _STAGES, (1, 2), [], None)
    good: tuple[Any, ...] = (
        record, b"", b"", b"", b"", {}, {}, str, b"", 0, lambda n: b"\x01" * 8 * n
    )  # fmt: skip
    assert c.otlp_sink_batch(*good)[1:] == (b"\x01" * 8, 8)  # no records: the consume's id
    with pytest.raises(TypeError):
        c.otlp_sink_batch(*good[:-1])
    with pytest.raises(TypeError):  # a stage not a (name, start, end) tuple
        c.otlp_sink_batch(("sink", _BASE, "t", 1, [("consume", 1)], (1, 2), []), *good[1:])
    with pytest.raises(TypeError):  # a record too short
        c.otlp_sink_batch(("sink", _BASE, "t", 1, _STAGES, (1, 2), [(1, 2, 0)]), *good[1:])
    with pytest.raises(TypeError):  # a topic not a str
        c.otlp_sink_batch(
            ("sink", _BASE, "t", 1, _STAGES, (1, 2), [(1, 2, 0, 5, 0, 0, 0)]), *good[1:]
        )
    with pytest.raises(ValueError):  # a pool too short for the ids asked
        c.otlp_sink_batch(record, *good[1:-1], lambda n: b"")
    with pytest.raises(TypeError):
        c.otlp_commit_spans([(1, 2)], "not bytes", {}, bytes, b"", 0, bytes)
    spans, pool, at = c.otlp_commit_spans([], b"", {}, bytes, b"", 0, bytes)
    assert (spans, pool, at) == (b"", b"", 0)
    source = ("source", _SOURCE_BASE, [("poll", 1, 2)], [(1, 2, "t", None)], 7)
    where = lambda t, p: b""  # noqa: E731
    tail = (b"", b"", b"", {}, where, b"\x01" * 80, 0, bytes)
    spans, shared, pool, at = c.otlp_source_batch(source, *tail)
    assert len(shared) == 1 and at == 8  # one stage span's id
    with pytest.raises(TypeError):
        c.otlp_source_batch(source, *tail[:-1])
    with pytest.raises(TypeError):  # a record too short
        c.otlp_source_batch((*source[:3], [(1, 2, "t")]), *tail)
    with pytest.raises(TypeError):  # a topic not a str
        c.otlp_source_batch((*source[:3], [(1, 2, 5, None)]), *tail)
    with pytest.raises(OverflowError):  # a negative span id
        c.otlp_source_batch((*source[:3], [(1, -2, "t", None)]), *tail)
    with pytest.raises(TypeError):  # no stage
        c.otlp_source_batch(("source", _SOURCE_BASE, [], []), *tail)


def _chosen(n: int) -> list[Any]:
    """A sink batch's chosen records as the tracer hands them over (header, topic, partition,
    offset, timestamp), in every header form ``trace_context`` reads or refuses."""
    rng = random.Random(5)
    chosen: list[Any] = []
    for i in range(n):
        t, s = rng.getrandbits(128), rng.getrandbits(64)
        header = [
            None,
            f"00-{t:032x}-{s:016x}-00".encode(),  # not sampled
            f"00-{t:032x}-{s:016x}-01",  # a str
            f'"00-{t:032X}-{s:016x}-01"'.encode(),  # quoted by a JSON header converter
            f"01-{t:032x}-{s:016x}-01-more".encode(),  # a later version
            f"00-{0:032x}-{s:016x}-01".encode(),  # a zero trace id: none
            f"00-{t:032x}-{s:016x}-0g".encode(),  # not hex: none
            f"00-{t:032x}-{s:016x}-03".encode(),  # sampled, another flag
            f"00-{t:032x}-{s:016x}-01".encode(),  # the usual form
        ][i % 9]
        chosen += [header, "t", i % 3, i * 7 - 5, rng.choice([0, 1, 2**40, -1])]
    return chosen


@pytest.mark.skipif(
    getattr(SPEEDUPS, "trace_records", None) is None, reason="no trace_records in the extension"
)
@pytest.mark.parametrize("parent_based", [True, False])
@pytest.mark.parametrize("arrived", [0, 10**18, 2**41 * 10**6])
def test_trace_records_in_c_are_the_python_loops(
    monkeypatch: pytest.MonkeyPatch, parent_based: bool, arrived: int
) -> None:
    """``sink_batch``'s loop in C reads every traceparent form as ``trace_context`` does,
    leaves out the unsampled ones with parent-based sampling, and draws the same ids in the
    same order as the Python loop."""
    from connectrt.runtime.tracing import tracer as tracing

    chosen = _chosen(200)
    assert SPEEDUPS is not None
    monkeypatch.setattr(tracing, "new_id", random.Random(9).getrandbits)
    in_c = SPEEDUPS.trace_records(
        chosen, parent_based, arrived, tracing.new_id, tracing.trace_context
    )
    monkeypatch.setattr(tracing, "new_id", random.Random(9).getrandbits)
    in_python = tracing._trace_records(chosen, parent_based, arrived)
    assert in_c == in_python
    assert len(in_c) == (200 - 23 if parent_based else 200)  # 1 in 9 not sampled: 23 of 200


def _consumed_records() -> list[tuple[Any, ...]]:
    """Wire records as an exporter process reads them: consumed batches of every traceparent
    form (from :func:`_chosen`), stage clocks with and without transformations, one whose chosen
    records are all unsampled, and the commits of two tracers between and after them."""
    chosen = _chosen(90)
    stages: list[dict[str, list[int]]] = [
        {
            "convert": [200, 400],
            "transform b": [320, 330],
            "transform a": [300, 310],
            "put": [400, 900],
        },
        {"put": [400, 900], "convert": [200, 300]},  # out of order: sorted by start
        {},  # no stage but the consume
        {"convert": [200, 300], "x": [200, 250]},  # equal starts: the clock's order kept
    ]
    unsampled = [f"00-{7:032x}-{9:016x}-00".encode(), "t", 0, 5, 0]
    out: list[tuple[Any, ...]] = []
    for b in range(12):
        picked = chosen[b * 25 % len(chosen) : b * 25 % len(chosen) + 5 * (1 + b % 4)]
        key = 1 + b % 2
        arrived = [150, 10**18, 2**41 * 10**6][b % 3]
        out.append(("consumed", _BASE, 500, 100, arrived, stages[b % 4], picked, b % 5 != 0, key))
        if b == 5:
            out.append(("committed", _BASE, 1000, 1100, 1))
            out.append(("consumed", _BASE, 500, 100, 150, {}, unsampled * 3, True, 2))
    out.append(("committed", _BASE, 2000, 2100, 1))
    out.append(("committed", _BASE, 2000, 2100, 2))
    out.append(("committed", _BASE, 2000, 2100, 3))  # a tracer that sent nothing
    return out


@needs_c
def test_a_consumed_batch_in_c_makes_the_bytes_of_the_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``otlp_consumed`` (parse, ids from the pool, timeline and spans in one C pass) writes the
    bytes of the Python path that makes the sink record first, and their commits the same."""
    pb2 = pytest.importorskip(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        reason="opentelemetry-proto is not installed",
    )
    records = _consumed_records()
    python = _encode(False, records, monkeypatch)
    c = _encode(True, records, monkeypatch)
    assert c == python
    names: list[str] = []
    encoder = RequestEncoder({"service.name": "svc"})
    for request in encoder.requests(records, 50):
        message = pb2.ExportTraceServiceRequest.FromString(request)
        names += [span.name for span in message.resource_spans[0].scope_spans[0].spans]
    assert encoder.ledger.take(1) == encoder.ledger.take(2) == []  # each commit took its records
    assert "transform a" in names and "offset commit" in names and "x" in names
    # the unsampled batch made no span: every consume belongs to a traced batch
    assert names.count("consume") == sum(1 for n in names if n.endswith(" batch")) == 12


def _none(value: Any) -> None:
    return None


@needs_c
def test_the_timeline_of_a_consumed_batch_in_c_is_the_python_one() -> None:
    from connectrt.runtime.tracing import tracer as tracing

    c: Any = otlp_encoding._c_loops(SPEEDUPS)
    stages = {"convert": [200, 400], "transform a": [300, 310], "put": [150, 900]}
    chosen = [None, "t", 0, 7, 0]
    record = ("consumed", _BASE, 3, 100, 120, stages, chosen, True, None)
    got = c.otlp_consumed(
        record, b"", b"", lambda t: b"", b"", {}, lambda t, p: b"", b"\x01" * 80, 0, bytes, _none
    )
    spans, shared, _pool, at, count = got
    assert count == 2 + 1 * 4 and at == 8 * (2 + 1 + 3 + 3 + 1) and len(shared) == 1
    order = [name for name, _, _ in tracing.timeline_of(100, 120, stages)]
    assert order == ["consume", "put", "convert", "transform a"]
    positions = [spans.index(name.encode()) for name in order[1:]]
    assert positions == sorted(positions)  # the child spans in the timeline's order


@needs_c
def test_otlp_consumed_refuses_malformed_arguments() -> None:
    c: Any = otlp_encoding._c_loops(SPEEDUPS)
    record: tuple[Any, ...] = ("consumed", _BASE, 1, 100, 120, {}, [None, "t", 0, 7, 0], True, 1)
    tail = (b"", b"", lambda t: b"", b"", {}, lambda t, p: b"", b"\x01" * 800, 0, bytes, _none)
    _spans, shared, _pool, at, count = c.otlp_consumed(record, *tail)
    assert count == 3 and len(shared) == 1 and at == 8 * (3 + 3 + 1)
    with pytest.raises(TypeError):
        c.otlp_consumed(record, *tail[:-1])
    with pytest.raises(TypeError):  # chosen not 5 items a record
        c.otlp_consumed((*record[:6], [None, "t"], *record[7:]), *tail)
    with pytest.raises(TypeError):  # stages not a dict
        c.otlp_consumed((*record[:5], [], *record[6:]), *tail)
    with pytest.raises(TypeError):  # a stage without [start, end]
        c.otlp_consumed((*record[:5], {"put": [1]}, *record[6:]), *tail)
    with pytest.raises(OverflowError):  # a timestamp past 2**64 ns
        c.otlp_consumed((*record[:6], [None, "t", 0, 7, 2**63], *record[7:]), *tail)
    with pytest.raises(TypeError):  # topic_of not giving bytes
        c.otlp_consumed(record, b"", b"", lambda t: "x", *tail[3:])
    with pytest.raises(TypeError):  # parse giving something else than None or 3 items
        c.otlp_consumed(record, *tail[:-1], lambda v: (1, 2))
    with pytest.raises(ValueError):  # a pool too short for the ids asked
        c.otlp_consumed(record, *tail[:6], b"", 0, lambda n: b"", _none)
    # nothing traced: no span and no id drawn
    unsampled = [f"00-{7:032x}-{9:016x}-00".encode(), "t", 0, 5, 0]
    got = c.otlp_consumed((*record[:6], unsampled, *record[7:]), *tail)
    assert got[0] == b"" and got[1] == [] and got[3:] == (0, 0)
