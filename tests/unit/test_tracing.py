"""OpenTelemetry tracing: W3C trace context, record picking, stage clocks, and the sink and source
tracers on real runners over the in-memory Kafka with the SDK's in-memory exporter (settings:
test_tracing_settings.py; the real backend: tests/integration/test_tracing_jaeger.py)."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api import SinkRecord, SinkTask, SourceRecord, SourceRecordBatch, SourceTask
from connectrt.api.records import SOURCE_FILLER
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.settings import SinkRunnerSettings, SourceRunnerSettings
from connectrt.storage.offsets import MemoryOffsetStore
from connectrt.testing.fake_kafka import FakeKafka
from connectrt.transforms.chain import TransformationChain

# -- trace context and picking ------------------------------------------------------------------

otel = pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from connectrt.runtime.sink.runner import SinkTaskRunner  # noqa: E402
from connectrt.runtime.sink.tracing import SinkTracer  # noqa: E402
from connectrt.runtime.source.runner import SourceTaskRunner  # noqa: E402
from connectrt.runtime.source.tracing import SourceTracer  # noqa: E402
from connectrt.runtime.tracing.sdk_spans import LocalOutlet  # noqa: E402
from connectrt.runtime.tracing.stage_clock import StageClock  # noqa: E402
from connectrt.runtime.tracing.tracer import (  # noqa: E402
    TRACED_RUN,
    Picker,
    format_traceparent,
    parse_traceparent,
    trace_context,
)


def test_traceparent_round_trip_and_malformed_values() -> None:
    value = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    context = parse_traceparent(value.encode())
    assert context is not None and context.is_remote and context.trace_flags.sampled
    assert format_traceparent(context) == value
    assert parse_traceparent(f'"{value}"') == context  # a JSON header converter quotes it
    unsampled = parse_traceparent(value[:-2] + "00")
    assert unsampled is not None and not unsampled.trace_flags.sampled
    for bad in (
        None,
        b"",
        "garbage",
        value.replace("0af7", "zzzz"),
        "00-" + "0" * 32 + "-b7ad6b7169203331-01",
        b"\xff",
    ):
        assert parse_traceparent(bad) is None
    raw = value.encode()  # the usual form, read without decoding: still strict
    assert parse_traceparent(raw[:-2] + b"03") is not None
    for at, char in ((5, b"+"), (5, b" "), (5, b"_"), (5, b"-"), (40, b"g")):
        assert parse_traceparent(raw[:at] + char + raw[at + 1 :]) is None, (at, char)
    assert parse_traceparent(raw[:36] + b"0" * 16 + raw[52:]) is None  # a zero span id
    assert parse_traceparent(b"ff" + raw[2:]) is None  # version ff is invalid
    assert parse_traceparent(b"01" + raw[2:]) == context  # a later version, read as 00


def test_picker_chooses_records_at_the_ratio_in_runs() -> None:
    rng = random.Random(1)
    assert list(Picker(1.0, rng).pick(5)) == [0, 1, 2, 3, 4]
    assert not Picker(0.0, rng).pick(5)
    assert not Picker(0.5, rng).pick(0)
    picker = Picker(0.01, rng)
    picked = [picker.pick(2_000) for _ in range(10_000)]
    assert all(list(p) == sorted(set(p)) and all(0 <= i < 2_000 for i in p) for p in picked)
    total = sum(len(p) for p in picked)
    assert 180_000 <= total <= 220_000  # 200,000 expected: each record's chance is the ratio
    traced = [p for p in picked if p]
    assert TRACED_RUN == 250
    assert 700 <= len(traced) <= 900  # 8% of the batches, about TRACED_RUN records each
    assert 225 <= total / len(traced) <= 275
    small = Picker(0.01, rng)  # batches of at most TRACED_RUN: whole, at the ratio
    batches = [list(small.pick(10)) for _ in range(20_000)]
    assert all(b in ([], list(range(10))) for b in batches)
    assert 150 <= sum(1 for b in batches if b) <= 250  # 200 expected
    busy = Picker(0.3, rng)  # ratio x batch / TRACED_RUN >= 1: every batch, records at the ratio
    counts = [len(busy.pick(1_000)) for _ in range(200)]
    assert all(220 <= c <= 380 for c in counts)
    assert 290 <= sum(counts) / len(counts) <= 310
    for ratio in (1e-9, 0.001, 0.2):  # a batch size between: each record's chance is the ratio
        mixed = Picker(ratio, random.Random(3))
        sizes = [51, 260, 499, 2_000] * 2_500
        total = sum(len(mixed.pick(n)) for n in sizes)
        expected = ratio * sum(sizes)
        assert abs(total - expected) <= 4 * (expected * TRACED_RUN) ** 0.5 + 1, (ratio, total)


@pytest.mark.parametrize("ratio", [0.01, 0.3, 0.999, 1e-9])
def test_the_picks_in_c_are_the_python_loop(ratio: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """``geometric_picks`` draws as the Python loop does: the same positions, batch after batch
    (sizes below and above a traced run, and above the ratio's run)."""
    from connectrt.runtime.tracing import tracer

    if tracer._GEOMETRIC_PICKS is None:
        pytest.skip("connectrt._speedups lacks geometric_picks")
    in_c, in_python = Picker(ratio, random.Random(7)), Picker(ratio, random.Random(7))
    for n in [500, 1, 0, 3, 10_000, 37, 251] * 40:
        got = list(in_c.pick(n))
        with monkeypatch.context() as m:
            m.setattr(tracer, "_GEOMETRIC_PICKS", None)
            assert list(in_python.pick(n)) == got
    assert in_c._rng.random() == in_python._rng.random()  # the same draws made
    picks: Any = tracer._GEOMETRIC_PICKS
    with pytest.raises(ValueError):
        picks(5, 0, random.random, 0.0)  # a log of 0: ratio 0 never reaches the loop
    with pytest.raises(TypeError):
        picks(5, 0, lambda: "x", -0.1)
    assert picks(5, 7, random.random, -0.1) == ([], 2)


def test_the_chosen_fields_in_c_are_the_python_loop() -> None:
    """``chosen_fields`` notes what ``_chosen_fields`` does: per chosen message without an error,
    its first ``traceparent`` header's value (None without one, past other headers), topic,
    partition, offset and timestamp; malformed arguments are refused."""
    from confluent_kafka import KafkaError

    from connectrt.runtime.sink import tracing as sink_tracing
    from connectrt.runtime.sink.message_batch import message_accessors
    from connectrt.testing.fake_kafka import FakeMessage

    in_c: Any = sink_tracing._CHOSEN_FIELDS
    if in_c is None:
        pytest.skip("connectrt._speedups lacks chosen_fields")
    parent = b"00-" + b"1" * 32 + b"-" + b"2" * 16 + b"-01"
    msgs = [
        FakeMessage("t", 0, 5, None, b"v", [("traceparent", parent)], 1_700_000_000_000),
        FakeMessage("t", 1, 6, None, b"v", None, 7),
        FakeMessage(
            "u", 2, 7, b"k", b"v", [("a", b"x"), ("traceparent", "s"), ("traceparent", b"no")]
        ),
        FakeMessage("t", 0, -1, None, None, None, 0, KafkaError(KafkaError._PARTITION_EOF)),
        FakeMessage("t", 3, 8, None, b"v", [], 9),
        FakeMessage("t", 3, 9, None, b"v", [("other", b"x")], 10),
    ]
    accessors = message_accessors(msgs)
    for chosen in (range(len(msgs)), [0, 2, 3], [3], [], (5, 1), [1, 1]):
        got = in_c(msgs, chosen, accessors, "traceparent")
        assert got == sink_tracing._chosen_fields(msgs, chosen), chosen
    assert in_c(msgs, [0, 2], accessors, "traceparent") == [
        parent,
        "t",
        0,
        5,
        1_700_000_000_000,
        "s",
        "u",
        2,
        7,
        0,
    ]
    for bad_args in (
        (tuple(msgs), [0], accessors, "traceparent"),  # msgs a list
        (msgs, [0], accessors[:7], "traceparent"),
        (msgs, [0], accessors, b"traceparent"),
        (msgs, 5, accessors, "traceparent"),  # chosen not a sequence
        (msgs, ["0"], accessors, "traceparent"),
    ):
        with pytest.raises(TypeError):
            in_c(*bad_args)
    with pytest.raises(IndexError):
        in_c(msgs, [6], accessors, "traceparent")
    with pytest.raises(IndexError):
        in_c(msgs, [-1], accessors, "traceparent")
    odd = [FakeMessage("t", 0, 1, None, b"v", [("traceparent",)], 0)]  # a header not a pair
    with pytest.raises(TypeError):
        in_c(odd, [0], message_accessors(odd), "traceparent")


def test_stage_clock_spans_first_start_to_last_end_while_active() -> None:
    clock = StageClock()
    double = clock.wrap("double", lambda x: 2 * x)
    assert double(1) == 2 and clock.stages == {}  # not active: not timed
    clock.start()
    assert [double(1), double(2)] == [2, 4]
    stages = clock.reset()
    assert list(stages) == ["double"] and stages["double"][0] <= stages["double"][1]
    assert clock.reset() == {} and not clock.active


class _Slotted:
    __slots__ = ()

    def put(self, x: int) -> int:
        return x


class _Put:
    def put(self, x: int) -> int:
        return x + 1


def test_stage_clock_puts_timed_calls_in_place_only_while_it_runs() -> None:
    """A batch not traced runs the untimed calls: a method and a chain's stages are timed
    only between ``start`` and ``reset`` (a chain of one-to-one stages and its per-record
    path; a class with ``__slots__`` is left untimed)."""
    clock = StageClock()
    task, slotted = _Put(), _Slotted()
    assert clock.time_attribute(task, "put", "put")
    assert not clock.time_attribute(slotted, "put", "put")
    chain = _chain()
    untimed = (chain._plan, chain._batch_plan)
    clock.time_chain(chain)
    record = SinkRecord("t", 0, None, None, None, b"v", 1)
    untimed_put = task.put
    for _ in range(2):
        assert task.put(1) == 2 and chain.apply(record) and chain.apply_batch([record])
        assert clock.reset() == {} and (chain._plan, chain._batch_plan) == untimed
        assert task.put == untimed_put and task.put.__name__ == "put"
        clock.start()
        assert task.put.__name__ == "timed" and chain._plan is not untimed[0]
        assert task.put(1) == 2 and slotted.put(3) == 3
        assert chain.apply_batch([record]) and chain.apply(record)
        stages = clock.reset()
        assert list(stages) == ["put", "transform a", "transform b"]
        assert all(start <= end for start, end in stages.values())


# -- the sink tracer on a real runner -----------------------------------------------------------


def _exporting() -> tuple[LocalOutlet, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    return LocalOutlet(SimpleSpanProcessor(exporter), Resource.create({})), exporter


class _Sink(SinkTask):
    def __init__(self) -> None:
        self.put_headers: list[list[str]] = []

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        self.put_headers += [[h.key for h in (r.headers or [])] for r in records]

    def stop(self) -> None:
        pass


def _converters() -> TaskConverters:
    header = SimpleHeaderConverter()
    header.configure({})
    return TaskConverters(ByteArrayConverter(), ByteArrayConverter(), header)


def _chain() -> TransformationChain[Any]:
    return TransformationChain(
        {
            "transforms": "a,b",
            "transforms.a.type": "InsertHeader",
            "transforms.a.header": "h-a",
            "transforms.a.value.literal": "1",
            "transforms.b.type": "InsertHeader",
            "transforms.b.header": "h-b",
            "transforms.b.value.literal": "2",
        }
    )


def _by_id(spans: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in spans}


def test_sink_tracer_continues_sampled_records_and_links_them_to_one_batch_span() -> None:
    kafka = FakeKafka()
    kafka.create_topic("t")
    producer = {}  # offset -> producer span id
    for n in range(6):
        headers = None
        if n < 3:
            span_id = 0x1000 + n
            producer[n] = span_id
            headers = [("traceparent", f"00-{n + 1:032x}-{span_id:016x}-01".encode())]
        elif n == 3:  # not sampled by its producer
            headers = [("traceparent", f"00-{99:032x}-{0x9999:016x}-00".encode())]
        kafka.append("t", f"v{n}".encode(), headers=headers)
    tracer, exporter = _exporting()
    runner: SinkTaskRunner | None = None

    def consumer(config: dict[str, Any]) -> Any:
        made = kafka.consumer(config)

        def once(_c: Any) -> bool:
            assert runner is not None
            if made.position_seen:  # type: ignore[attr-defined]
                runner.stop()
                return False
            made.position_seen = True  # type: ignore[attr-defined]
            return True

        made.position_seen = False  # type: ignore[attr-defined]
        made.on_consume = once
        return made

    task = _Sink()
    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=_converters(),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,
        consumer_config={"group.id": "connect-c"},
        consumer_factory=consumer,
        transforms=_chain(),
    )
    runner = SinkTaskRunner(TaskId("c", 0), task, settings)
    SinkTracer.attach(runner, TracingSettings("otlp", "", "http/protobuf", 1.0, "s"), tracer)
    runner.start()
    runner.join(30)
    assert not runner.is_alive() and runner.failed is None, runner.failed
    assert len(task.put_headers) == 6 and all(h[-2:] == ["h-a", "h-b"] for h in task.put_headers)

    spans = list(exporter.get_finished_spans())
    by_id = _by_id(spans)
    records = [s for s in spans if s.name == "process t"]
    offsets = sorted(s.attributes["messaging.kafka.offset"] for s in records)  # type: ignore[index]
    assert offsets == [0, 1, 2, 4, 5]  # offset 3's producer did not sample it
    for span in records:
        offset = span.attributes["messaging.kafka.offset"]  # type: ignore[index]
        assert span.attributes["connectrt.connector"] == "c"  # type: ignore[index]
        assert span.attributes["messaging.destination.partition.id"] == "0"  # type: ignore[index]
        if offset in producer:
            assert span.parent is not None and span.parent.span_id == producer[offset]
            assert span.context.trace_id == offset + 1
        else:
            assert span.parent is None  # no traceparent: a trace of its own
        children = sorted(
            (s for s in spans if s.parent is not None and s.parent.span_id == span.context.span_id),
            key=lambda s: s.start_time or 0,
        )
        assert [c.name for c in children] == [
            "convert",
            "transform a",
            "transform b",
            "put",
            "offset commit",
        ]
    batches = [s for s in spans if s.name == "process t batch"]
    assert len(batches) == 1
    batch = batches[0]
    assert batch.parent is None
    assert batch.attributes["messaging.batch.message_count"] == 6  # type: ignore[index]
    assert sorted(link.context.span_id for link in batch.links) == sorted(producer.values())
    (receive,) = [s for s in spans if s.parent and s.parent.span_id == batch.context.span_id]
    assert receive.name == "consume"  # the consume() call is the batch's, not a record's
    for span in records:  # a record's processing starts when its batch arrived
        assert span.start_time == receive.end_time
    assert all(s.parent is None or s.parent.span_id in by_id or s.parent.is_remote for s in spans)


def test_sink_tracer_at_ratio_zero_makes_no_span() -> None:
    kafka = FakeKafka()
    kafka.create_topic("t")
    for n in range(5):
        kafka.append("t", b"v", headers=[("traceparent", f"00-{n + 1:032x}-{7:016x}-01".encode())])
    tracer, exporter = _exporting()
    runner: SinkTaskRunner | None = None
    calls = []

    def consumer(config: dict[str, Any]) -> Any:
        made = kafka.consumer(config)

        def once(_c: Any) -> bool:
            assert runner is not None
            calls.append(1)
            if len(calls) > 1:
                runner.stop()
                return False
            return True

        made.on_consume = once
        return made

    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=_converters(),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,
        consumer_config={"group.id": "connect-c"},
        consumer_factory=consumer,
    )
    task = _Sink()
    runner = SinkTaskRunner(TaskId("c", 0), task, settings)
    SinkTracer.attach(runner, TracingSettings("otlp", "", "http/protobuf", 0.0, "s"), tracer)
    runner.start()
    runner.join(30)
    assert len(task.put_headers) == 5
    assert exporter.get_finished_spans() == ()


def test_sink_record_span_starts_at_arrival_or_at_a_later_timestamp() -> None:
    """A record's ``process`` span starts when its batch arrived (``consume()`` returned), not
    when the call began, and never before the record's timestamp (a producer's clock ahead)."""
    kafka = FakeKafka()
    kafka.create_topic("t")
    ahead = time.time_ns() // 1_000_000 + 60_000  # a producer's clock a minute ahead
    kafka.append("t", b"now", headers=[("traceparent", f"00-{1:032x}-{1:016x}-01".encode())])
    skewed = kafka.append(
        "t", b"ahead", headers=[("traceparent", f"00-{2:032x}-{2:016x}-01".encode())]
    )
    skewed._timestamp = ahead
    tracer, exporter = _exporting()
    runner: SinkTaskRunner | None = None
    calls = []

    def consumer(config: dict[str, Any]) -> Any:
        made = kafka.consumer(config)

        def once(_c: Any) -> bool:
            assert runner is not None
            calls.append(1)
            if len(calls) > 1:
                runner.stop()
                return False
            time.sleep(0.05)  # the consume() call waits a while before the batch arrives
            return True

        made.on_consume = once
        return made

    settings = SinkRunnerSettings(
        task_config={"topics": "t"},
        converters=_converters(),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,
        consumer_config={"group.id": "connect-c"},
        consumer_factory=consumer,
    )
    runner = SinkTaskRunner(TaskId("c", 0), _Sink(), settings)
    SinkTracer.attach(runner, TracingSettings("otlp", "", "http/protobuf", 1.0, "s"), tracer)
    runner.start()
    runner.join(30)
    assert not runner.is_alive() and runner.failed is None, runner.failed
    spans = list(exporter.get_finished_spans())
    (receive,) = [s for s in spans if s.name == "consume"]
    assert receive.end_time is not None and receive.start_time is not None
    assert receive.end_time - receive.start_time >= 40_000_000  # the wait is the batch's
    by_trace = {s.context.trace_id: s for s in spans if s.name == "process t"}
    assert by_trace[1].start_time == receive.end_time
    assert by_trace[2].start_time == ahead * 1_000_000
    assert by_trace[2].end_time == by_trace[2].start_time  # no stage comes after it here


# -- the source tracer on a real runner ---------------------------------------------------------


class _Source(SourceTask):
    def __init__(self) -> None:
        self.polls = 0

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        self.polls += 1
        if self.polls > 1:
            return None
        return [
            SourceRecord({"f": "x"}, {"line": i}, "out", value=f"l{i}".encode()) for i in range(3)
        ]

    def stop(self) -> None:
        pass


def _run_traced_source(
    task: SourceTask, chain: TransformationChain[Any] | None, header: Any = None
) -> tuple[FakeKafka, InMemorySpanExporter]:
    """Run ``task`` on a runner traced at ratio 1 (``header``: its header converter, else
    SimpleHeaderConverter's) until it produced 3 records to ``out``."""
    kafka = FakeKafka()
    kafka.create_topic("out")
    tracer, exporter = _exporting()
    store = MemoryOffsetStore()
    store.start()
    converters = _converters()
    if header is not None:
        header.configure({})
        converters = TaskConverters(converters.key, converters.value, header)
    settings = SourceRunnerSettings(
        task_config={},
        converters=converters,
        status=StatusBoard("test"),
        offset_flush_interval_ms=50,
        producer_config={},
        offset_store=store,
        offset_flush_timeout_ms=5000,
        producer_factory=kafka.producer,
        transforms=chain,
    )
    runner = SourceTaskRunner(TaskId("src", 0), task, settings)
    SourceTracer.attach(runner, TracingSettings("otlp", "", "http/protobuf", 1.0, "s"), tracer)
    runner.start()
    deadline = time.monotonic() + 30
    while len(kafka.records("out")) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    runner.join(30)
    assert runner.failed is None, runner.failed
    return kafka, exporter


def test_source_tracer_writes_traceparent_of_a_trace_started_at_poll() -> None:
    kafka, exporter = _run_traced_source(_Source(), _chain())
    produced = kafka.records("out")
    assert len(produced) == 3
    spans = list(exporter.get_finished_spans())
    sends = {s.context.span_id: s for s in spans if s.name == "send out"}
    assert len(sends) == 3
    for message in produced:
        headers = dict(message.headers() or [])
        context = parse_traceparent(headers["traceparent"])
        assert context is not None and context.span_id in sends
        send = sends[context.span_id]
        assert send.parent is None and send.context.trace_id == context.trace_id
        children = [s.name for s in spans if s.parent and s.parent.span_id == context.span_id]
        assert children[:4] == ["poll", "transform a", "transform b", "produce"]
        assert "offset commit" in children


class _QuotingHeaders(SimpleHeaderConverter):
    """A header converter that writes every value as a JSON string would."""

    def from_connect_header(self, topic: str, header_key: str, schema: Any, value: Any) -> Any:
        return b'"%s"' % str(value).encode()


class _BatchSource(_Source):
    """Two batches: one record (the first to its topic: built, for topic creation), then two."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[SourceRecordBatch] = []

    def poll(self) -> Any:
        self.polls += 1
        if self.polls > 2:
            return None
        n = self.polls
        batch = SourceRecordBatch({"f": "x"}, [{"line": i} for i in range(n)], "out", [b"l"] * n)
        self.batches.append(batch)
        return batch


def test_source_traceparent_is_added_at_produce_in_its_w3c_form() -> None:
    """The traceparent is added as the record is produced: the transformations do not see it
    (a Filter of records with a traceparent header drops none), and it is written in its W3C
    form while the record's own headers go through the header converter."""
    chain: TransformationChain[Any] = TransformationChain(
        {
            "transforms": "a,drop",
            "transforms.a.type": "InsertHeader",
            "transforms.a.header": "h-a",
            "transforms.a.value.literal": "1",
            "transforms.drop.type": "Filter",
            "transforms.drop.predicate": "traced",
            "predicates": "traced",
            "predicates.traced.type": "HasHeaderKey",
            "predicates.traced.name": "traceparent",
        }
    )
    kafka, _ = _run_traced_source(_Source(), chain, _QuotingHeaders())
    produced = kafka.records("out")
    assert len(produced) == 3
    for message in produced:
        headers = message.headers() or []
        assert [name for name, _ in headers] == ["h-a", "traceparent"]
        assert headers[0][1] == b'"1"'
        value = headers[1][1]
        assert len(value) == 55 and value.startswith(b"00-") and value.endswith(b"-01")
        assert parse_traceparent(value) is not None


def test_a_traced_source_record_batch_is_sent_from_its_columns() -> None:
    task = _BatchSource()
    kafka, _ = _run_traced_source(task, None)
    produced = kafka.records("out")
    assert len(produced) == 3
    assert all(parse_traceparent(dict(m.headers() or [])["traceparent"]) for m in produced)
    assert [b.records_built for b in task.batches] == [True, SOURCE_FILLER is None]


def test_the_traceparents_in_c_are_the_python_loop() -> None:
    from connectrt.runtime.source import tracing as source_tracing

    c_loop = source_tracing._TRACEPARENTS
    if c_loop is None:
        pytest.skip("connectrt._speedups lacks traceparents")
    raw = random.Random(5).randbytes(24 * 40) + bytes(24) + b"\x00" * 16 + b"\xff" * 8 + b"x" * 7
    got = c_loop(raw)
    assert got == source_tracing.traceparents_of(raw)
    assert len(got) == 42  # the 7 bytes over are not a trace
    assert got[40][:2] == (1, 1)  # ids of zeros: 1 in their last byte
    for trace_id, span_id, value in got:
        assert trace_context(value) == (trace_id, span_id, 1)
    with pytest.raises(TypeError):
        c_loop("not bytes")
    traces = source_tracing._traceparents(3)
    assert len(traces) == 3 and len({t[0] for t in traces}) == 3


def test_picker_rate_then_positions_is_pick() -> None:
    """A source's tracer draws a batch's rate at poll and picks positions in what it sends:
    the same draws as ``pick``, and a shorter run keeps the batch's rate."""
    one, other = Picker(0.01, random.Random(9)), Picker(0.01, random.Random(9))
    for n in [500, 20, 2_000, 51, 0] * 50:
        assert list(one.pick(n)) == list(other.positions(n, other.rate(n)))
    picker = Picker(0.01, random.Random(4))
    assert picker.rate(0) == 0.0
    assert {picker.rate(10) for _ in range(2_000)} == {0.0, 1.0}
    rates = [picker.rate(2_000) for _ in range(2_000)]  # 8% traced, each record at 1/8
    assert set(rates) == {0.0, 0.125} and 120 <= rates.count(0.125) <= 200
    assert list(picker.positions(7, 1.0)) == list(range(7)) and not picker.positions(7, 0.0)
    total = sum(len(picker.positions(400, 0.1)) for _ in range(1_000))
    assert 36_000 <= total <= 44_000  # 40,000 expected
