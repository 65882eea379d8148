"""OpenTelemetry tracing shared by the sink and source tracers: trace records, W3C trace context,
record sampling and stage clocks.

Imported only when tracing is on (:func:`connectrt.runtime.config.tracing.tracing_settings`
returned settings). The runners hold their tracer in a ``tracer`` attribute (None when off) and
check it once per batch; what the tracers do per batch is in :mod:`connectrt.runtime.sink.tracing`
and :mod:`connectrt.runtime.source.tracing`.

The design keeps the task thread's share small. A batch's stages (consume or poll, convert, each
transformation, put or produce) are timed once, by the timed calls a
:class:`~.stage_clock.StageClock` puts in place of the runner's for a batch the tracer traces
only (a batch not traced runs the runner's own calls); after the batch, the records a
:class:`Picker`
chose are noted as one *trace record*: a plain tuple holding the batch's stage times and, per
chosen record, its coordinates (a sink's: unparsed, its ids are drawn on the exporter's side;
a source's: with the ids it wrote into the record; the layouts are below). No OpenTelemetry span
is made on the task thread: the tracer hands the trace record to a :class:`TraceOutlet`, and
the outlet of a running worker ships it to a child process that makes the spans and exports them
(:func:`connectrt.runtime.tracing.exporter.outlet_for`), so that neither building the spans
nor encoding and sending them holds the task process's interpreter.
:mod:`connectrt.runtime.tracing.sdk_spans` turns trace records into the SDK's spans (for the
console exporter, and in-process for tests).

Trace record layouts (``base``: the tracer's attribute dict, shared by all its records;
times: epoch nanoseconds; ``parent``: the producer's span id, 0 when the record had none;
``key``: the tracer's :func:`new_tracer_key`):

* ``("consumed", base, size, consume start, consume end, stages, chosen, parent based, key)``:
  what the sink tracer hands over per batch (the least it can do on the task thread):
  ``stages`` the :class:`StageClock`'s dict, ``chosen`` per chosen record its ``traceparent``
  header value (None without one; unparsed), topic, partition, offset and timestamp
  (milliseconds), flat (5 items a record). :func:`sink_batch` makes it into
* ``("sink", base, topic, size, timeline, (batch trace id, batch span id), records, key)``, with
  ``timeline`` the batch's ``(stage, start, end)`` in order and ``records`` a list of
  ``(trace id, span id, parent, topic, partition, offset, start)``;
* ``("source", base, timeline, records, key)``, records ``(trace id, span id, topic, partition
  or None)``;
* ``("committed", base, start, end, key)``: the tracer committed the offsets of the records it
  sent since its last commit. The exporter side remembers those records
  (:class:`~connectrt.runtime.tracing.commit_ledger.CommitLedger`) and turns this into
* ``("commit", base, start, end, records)``: an ``offset commit`` span under each record's span,
  records as in the sink's or the source's layout (the span makers take this one, and sink and
  source records with or without their ``key``);
* ``("span", name, trace id, span id, parent, start, end, kind, attributes)``: one span (a DLQ
  write), ``kind`` a :class:`opentelemetry.trace.SpanKind` value.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from binascii import unhexlify
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from opentelemetry.trace import SpanContext, TraceFlags

from connectrt.runtime.tracing.stage_clock import StageClock
from connectrt.speedups import SPEEDUPS

__all__ = [
    "TRACED_RUN",
    "TRACEPARENT",
    "Picker",
    "TaskTracer",
    "TraceOutlet",
    "format_traceparent",
    "new_id",
    "new_tracer_key",
    "parse_traceparent",
    "sink_batch",
    "stage_attributes",
    "timeline_of",
    "trace_context",
]

_T = TypeVar("_T")

TRACEPARENT = "traceparent"
"""The W3C trace context header, as the OpenTelemetry Kafka instrumentations write it."""

new_id: Callable[[int], int] = random.Random().getrandbits
"""``new_id(64)``: a span id, ``new_id(128)``: a trace id (a generator seeded from the system's
randomness; one C call, thread-safe under the interpreter lock). Callers map 0 (invalid, odds
2^-64) to 1."""


_TRACE_RECORDS: Callable[..., list[tuple[Any, ...]]] | None = getattr(
    SPEEDUPS, "trace_records", None
)

_GEOMETRIC_PICKS: Callable[..., tuple[list[int], int]] | None = getattr(
    SPEEDUPS, "geometric_picks", None
)

new_tracer_key: Callable[[], int] = itertools.count(1).__next__
"""A number for a new tracer, unique in the process (its records' ``key``)."""


class TraceOutlet(Protocol):
    """Where tracers hand their trace records (thread-safe: every task thread of a process)."""

    def put(self, record: tuple[Any, ...], weight: int) -> None:
        """Take a trace record (``weight``: the records it traces, for the outlet's bound; 0
        for a record the bound must not drop)."""

    def flush(self) -> None:
        """Send what was taken so far on its way (a task stopped); does not wait for export."""


def trace_context(value: Any) -> tuple[int, int, int] | None:
    """``(trace id, span id, flags)`` of a W3C ``traceparent`` header value (bytes or str), or
    None when it is missing or malformed (version 00 layout: ``00-<32 hex>-<16 hex>-<2 hex>``)."""
    if (
        type(value) is bytes
        and len(value) == 55
        and value[2] == 45  # "-"
        and value[35] == 45
        and value[52] == 45
    ):  # the usual form, as the OpenTelemetry Kafka instrumentations write it: no decoding
        try:  # strict hex digits (int() would take signs, spaces and "_")
            raw = unhexlify(value.replace(b"-", b""))
        except ValueError:  # binascii.Error
            return None
        if len(raw) != 26:  # a "-" elsewhere
            return None
        if raw[0] == 0:  # version 00 (another version is read below, as the W3C asks)
            trace_id = int.from_bytes(raw[1:17], "big")
            span_id = int.from_bytes(raw[17:25], "big")
            if trace_id == 0 or span_id == 0:
                return None
            return trace_id, span_id, raw[25]
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(value, str):
        return None
    if value[:1] == '"' or value[:1].isspace() or value[-1:].isspace():
        value = value.strip().strip('"')  # quoted by a JSON header converter
    parts = value.split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    if parts[0] == "ff" or (parts[0] == "00" and len(parts) != 4):
        return None
    try:
        trace_id = int(parts[1], 16)
        span_id = int(parts[2], 16)
        flags = int(parts[3][:2], 16)
    except ValueError:
        return None
    if trace_id == 0 or span_id == 0:
        return None
    return trace_id, span_id, flags


def stage_attributes(base: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a tracer's ``base`` its records' stage spans carry (with the record's
    topic, partition and offset): the task's own (``connectrt.connector``, ``connectrt.task``),
    not the messaging ones (``messaging.system``, ``messaging.consumer.group.name``), which the
    record's span and the batch's carry: a stage span is not a messaging operation, and they
    were a quarter of its bytes."""
    return {k: v for k, v in base.items() if not k.startswith("messaging.")}


def sink_batch(consumed: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The ``sink`` trace record of a ``consumed`` one (the layouts are above), or None when no
    chosen record is traced (each one's producer did not sample it, with parent-based
    sampling). Here the chosen records' ``traceparent`` values are parsed, the ids drawn and the
    timeline put in order: on the exporter's side, not the task thread."""
    _tag, base, size, start, arrived, stages, chosen, parent_based, key = consumed
    if _TRACE_RECORDS is not None and type(chosen) is list:  # the same loop in C
        records = _TRACE_RECORDS(chosen, parent_based, arrived, new_id, trace_context)
    else:
        records = _trace_records(chosen, parent_based, arrived)
    if not records:
        return None
    batch_ids = (new_id(128) or 1, new_id(64) or 1)
    timeline = timeline_of(start, arrived, stages)
    return ("sink", base, records[0][3], size, timeline, batch_ids, records, key)


def timeline_of(
    start: int, arrived: int, stages: Mapping[str, Sequence[int]]
) -> list[tuple[str, int, int]]:
    """A consumed batch's ``(stage, start, end)`` in order: its ``consume`` (``start`` to
    ``arrived``), then the stage clock's ``stages`` by their starts; ``convert`` ends where the
    first transformation starts, if sooner (the conversion runs the chain)."""
    convert = stages.get("convert")
    transforms = [t[0] for name, t in stages.items() if name.startswith("transform ")]
    if convert is not None and transforms:
        convert = [convert[0], min(convert[1], min(transforms))]
        stages = {**stages, "convert": convert}
    timeline = [("consume", start, arrived)]
    timeline += sorted(((name, t[0], t[1]) for name, t in stages.items()), key=_start)
    return timeline


def _trace_records(chosen: list[Any], parent_based: bool, arrived: int) -> list[tuple[Any, ...]]:
    """:func:`sink_batch`'s records of a batch's ``chosen`` (the C extension's
    ``trace_records`` where it is built: the same loop, the ids drawn in the same order)."""
    records = []
    for i in range(0, len(chosen), 5):
        header, topic, partition, offset, stamp = chosen[i : i + 5]
        parent = trace_context(header)
        if parent is None:
            trace_id, parent_id = new_id(128) or 1, 0
        elif parent_based and not parent[2] & 1:
            continue  # its producer did not sample it
        else:
            trace_id, parent_id = parent[0], parent[1]
        # The record's processing starts when its batch arrived; a producer's clock ahead of
        # this one must not put that before the record's timestamp (or its producer's span).
        stamp *= 1_000_000
        own_start = arrived if arrived >= stamp else stamp
        records.append((trace_id, new_id(64) or 1, parent_id, topic, partition, offset, own_start))
    return records


def _start(stage: tuple[str, int, int]) -> int:
    return stage[1]


def parse_traceparent(value: Any) -> SpanContext | None:
    """The remote span context of a W3C ``traceparent`` header value (see :func:`trace_context`)."""
    ids = trace_context(value)
    if ids is None:
        return None
    return SpanContext(ids[0], ids[1], is_remote=True, trace_flags=TraceFlags(ids[2]))


def format_traceparent(context: SpanContext) -> str:
    """The W3C ``traceparent`` value of a span context."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


TRACED_RUN = 250
"""About how many records of a large batch :class:`Picker` traces when it traces the batch. The
batch's span links to each traced record's producer, so it may carry 250 links: more than the
OpenTelemetry SDK's default of 128 a span, a limit on the spans the SDK records, not on these
(made in the exporter process); Jaeger keeps them all."""


class Picker:
    """Which records of a task's batches to trace: each with probability ``ratio``, in runs.

    A batch of ``n`` records is traced with probability ``q = min(1, ratio * max(1, n /
    TRACED_RUN))`` and each of its records then with probability ``ratio / q``, so every record's
    chance is the ratio and a traced batch has about :data:`TRACED_RUN` records traced (all of
    them in a batch of fewer). Tracing costs the task thread something per traced batch (its
    stage timers in place, the hand-over: about 30 µs, timed inside the no-op sink's bench)
    besides its work per traced record (reading its fields: about 0.5 µs): at 1% of batches of
    500, one batch in 50 is traced with 250 records rather than nearly every batch with 5, and
    a traced record costs the task thread about 0.65 µs in all, against about 1.1 µs in runs of
    50 (the same 30 µs over 50 records; beside each other in one bench run, 2026-12-01, 1% at
    0.997 of tracing off against 0.954). A batch not traced costs one draw. Within a traced
    batch the positions come from geometric gaps, so the work is in proportion to the records
    picked. Used on one thread.
    """

    __slots__ = ("_log", "_ratio", "_rng")

    def __init__(self, ratio: float, rng: random.Random) -> None:
        self._ratio = ratio
        self._rng = rng
        self._log = math.log1p(-ratio) if 0.0 < ratio < 1.0 else 0.0

    def pick(self, n: int) -> Sequence[int]:
        """The positions, in order, of the records to trace in the next batch of ``n``."""
        return self.positions(n, self.rate(n))

    def rate(self, n: int) -> float:
        """Whether the next batch of ``n`` records is traced, as the chance of each of its
        records to be (0.0: the batch is not traced; 1.0: every record). A tracer that learns
        which records it traces later than the batch's size (a source's, after the
        transformations) draws this first and its :meth:`positions` then."""
        ratio = self._ratio
        if ratio >= 1.0:
            return 1.0
        if ratio <= 0.0 or n <= 0:
            return 0.0
        if n <= TRACED_RUN:  # a small batch: all its records, at the ratio
            return 1.0 if self._rng.random() < ratio else 0.0
        share = ratio * n / TRACED_RUN  # the batch's chance
        if share < 1.0:  # each record's, in a traced batch: run / n
            return TRACED_RUN / n if self._rng.random() < share else 0.0
        return ratio  # every batch, each record at the ratio

    def positions(self, n: int, rate: float) -> Sequence[int]:
        """The positions, in order, of the records to trace of ``n``, each with probability
        ``rate`` (as :meth:`rate` gave it)."""
        if rate >= 1.0:
            return range(n)
        if rate <= 0.0 or n <= 0:
            return ()
        return self._positions(n, self._log if rate == self._ratio else math.log1p(-rate))

    def _positions(self, n: int, log: float) -> Sequence[int]:
        """Each position below ``n`` with probability ``1 - exp(log)``: geometric gaps."""
        random_ = self._rng.random
        first = min(n, int(math.log(1.0 - random_()) / log))
        if _GEOMETRIC_PICKS is not None:  # the loop below in C: the same draws, the same picks
            return _GEOMETRIC_PICKS(n, first, random_, log)[0]
        picked = []
        i = first
        while i < n:
            picked.append(i)
            i += 1 + int(math.log(1.0 - random_()) / log)
        return picked


class TaskTracer:
    """What the sink and source tracers share: the outlet, the :class:`Picker` and
    :class:`StageClock`, the attributes every record carries (``base``: the messaging system,
    ``attributes``, the connector and task of ``runner``), the wrapped offset commit and its
    ``committed`` trace record, and closing. Subclasses hand a finished batch over in
    :meth:`finish`. Used on the task thread only."""

    def __init__(
        self,
        outlet: TraceOutlet,
        ratio: float,
        runner: Any,
        attributes: Mapping[str, str] | None = None,
    ) -> None:
        self._outlet = outlet
        self._picker = Picker(ratio, random.Random())
        self._clock = StageClock()
        self._uncommitted = False  # records were traced since the last commit
        self._key = new_tracer_key()  # names this tracer's records to the exporter side
        self._base = {
            "messaging.system": "kafka",
            **(attributes or {}),
            "connectrt.connector": runner.id.connector,
            "connectrt.task": runner.id.task,
        }

    def finish(self) -> None:
        """Hand the batch handled last to the outlet, if it had traced records."""
        raise NotImplementedError

    def _traced_commit(self, commit: Callable[..., _T]) -> Callable[..., _T]:
        """``commit`` (the runner's offset commit), which first hands the last batch over and
        after it notes the commit (:meth:`_committed`), whether it succeeded or not."""

        def traced_commit(*args: Any, **kwargs: Any) -> _T:
            self.finish()
            start = time.time_ns()
            try:
                return commit(*args, **kwargs)
            finally:
                self._committed(start, time.time_ns())

        return traced_commit

    def _committed(self, start: int, end: int) -> None:
        """The offsets were committed (or the commit failed): an ``offset commit`` span per
        record traced since the last commit (the exporter side remembers which:
        :mod:`connectrt.runtime.tracing.commit_ledger`; the trace record weighs nothing, so the
        outlet's bound never drops it)."""
        if self._uncommitted:
            self._uncommitted = False
            self._outlet.put(("committed", self._base, start, end, self._key), 0)

    def close(self) -> None:
        """The task stopped: hand the last batch to the outlet and send it on its way."""
        self.finish()
        self._outlet.flush()
