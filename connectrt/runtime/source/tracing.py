"""Tracing a source task's records: a trace starts at ``poll()`` for each record picked.

Imported only when tracing is on (it imports OpenTelemetry through
:mod:`connectrt.runtime.tracing.tracer`). :meth:`SourceTracer.attach` puts the tracer on a
:class:`~connectrt.runtime.source.runner.SourceTaskRunner` before it starts: it has its stage
clock time each transformation of the chain in the batches it traces (their timed calls in place
for those batches only), wraps the batch sender (conversion and ``produce``: timed, and the
records to trace picked, in a traced batch) and the offset commit, and the runner's loop calls
:meth:`SourceTracer.poll` in place of ``task.poll()`` (its one check per batch).

Per polled batch, :class:`~connectrt.runtime.tracing.tracer.Picker` draws whether it is traced
(in runs: at 1% of batches of 2,000, 8% of them, about 250 records each), at ``poll()``, so that
the stage clocks time its transformations; the records to trace are picked as the batch is sent
(after the transformations, in each run the delivery guarantee sends: a filtered record is not
traced, and each record sent keeps the ratio as its chance). Each picked record starts a trace: a
span ``send <topic>`` (kind PRODUCER) from the start of ``poll()``, whose context the sender adds
to the record as it produces it, as a W3C ``traceparent`` header in its text form (not through the
header converter: OpenTelemetry's propagators downstream read that form), so that consumers
continue the trace; as the OpenTelemetry producer instrumentations do, the header is added at
``produce``, and the transformations do not see it. Its children are the stages: ``poll``,
``transform <alias>`` per transformation, ``produce`` (the batch's conversion and ``produce``
calls) and, once the offsets that cover the record are committed, ``offset commit``. Spans carry
the connector, task and topic as attributes. The sender produces the picked records with their
header in the C loop that produces the others (:data:`~connectrt.runtime.source.sender.
AddedHeaders`), so a :class:`SourceRecordBatch` is still sent from its columns, without records.
Their ids and headers come from one C call (:func:`_traceparents`). When the next batch is polled
(or at a commit, or when the task stops), the tracer hands the finished batch to its outlet as one
trace record (stage times, and per traced record its ids and topic); the spans are made and
exported out of the task's process (:mod:`connectrt.runtime.tracing.exporter`).

Used on the task thread only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from connectrt.api.records import SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.tracing.exporter import outlet_for
from connectrt.runtime.tracing.tracer import (
    TRACEPARENT,
    TaskTracer,
    TraceOutlet,
)
from connectrt.speedups import SPEEDUPS

if TYPE_CHECKING:
    from connectrt.api.task import SourceTask
    from connectrt.runtime.source.runner import SourceTaskRunner

__all__ = ["SourceTracer"]

_TRACEPARENTS: Callable[[bytes], list[tuple[int, int, bytes]]] | None = getattr(
    SPEEDUPS, "traceparents", None
)

new_bytes: Callable[[int], bytes] = random.Random().randbytes
"""``new_bytes(n)``: ``n`` random bytes, for new trace and span ids (a generator seeded from the
system's randomness, as :data:`~connectrt.runtime.tracing.tracer.new_id`)."""

# A traced record, as the trace records lay it out: (trace id, span id, topic, partition or None).
_Record = tuple[int, int, str, int | None]


class SourceTracer(TaskTracer):
    """Traces one source task's batches (see the module docstring)."""

    def __init__(self, outlet: TraceOutlet, settings: TracingSettings, runner: Any) -> None:
        """Use :meth:`attach`."""
        super().__init__(outlet, settings.ratio, runner)
        self._polled: tuple[int, int] = (0, 0)
        self._rate = 0.0  # each record's chance in the batch polled last (0.0: not traced)
        self._records: list[_Record] = []  # traced in the batch polled last

    @classmethod
    def attach(
        cls,
        runner: SourceTaskRunner,
        settings: TracingSettings,
        outlet: TraceOutlet | None = None,
    ) -> SourceTracer:
        """Make a tracer for ``runner`` (not started yet) and wrap its stages (see the module
        docstring). ``outlet``: the process's for ``settings`` unless given (tests)."""
        self = cls(outlet or outlet_for(settings), settings, runner)
        if runner._transforms is not None:
            self._clock.time_chain(runner._transforms)
        sender = runner._sender
        sender.send = self._traced_send(sender.send)  # type: ignore[method-assign]
        traced_commit = self._traced_commit(runner.commit_offsets)
        runner.commit_offsets = traced_commit  # type: ignore[method-assign]
        runner.tracer = self
        return self

    # -- the runner's loop ----------------------------------------------------------------------
    def poll(self, task: SourceTask) -> Any:
        """``task.poll()``, timed: the previous batch is handed to the outlet first, and this
        one is traced or not (:meth:`Picker.rate <connectrt.runtime.tracing.tracer.Picker.rate>`;
        its records are picked as they are sent)."""
        if self._rate:
            self._rate = 0.0
            self.finish()
        start = time.time_ns()
        records = task.poll()
        end = time.time_ns()
        if records:
            try:
                n = len(records)
            except TypeError:
                return records  # not a batch: the runner fails the task
            rate = self._picker.rate(n)
            if rate:
                self._rate = rate
                self._polled = (start, end)
                self._clock.reset()
                self._clock.start()
        return records

    def _traced_send(self, send: Callable[..., None]) -> Callable[..., None]:
        """``send`` (the sender's), which, in a traced batch, is timed as ``produce``, picks the
        records to trace of each run it is given and has their ``traceparent`` header added."""
        clock = time.time_ns
        note = self._clock.note

        def traced_send(polled: Any, producer: Any) -> None:
            if not self._rate:
                send(polled, producer)
                return
            start = clock()
            try:
                chosen = self._picker.positions(len(polled), self._rate)
                if chosen:
                    send(polled, producer, self._start_traces(polled, chosen))
                else:
                    send(polled, producer)
            finally:
                note("produce", start, clock())

        return traced_send

    def _start_traces(self, polled: Any, chosen: Sequence[int]) -> dict[int, list[Any]]:
        """Start a trace for each of the ``chosen`` of ``polled`` (a run about to be sent):
        its ids noted, and its ``traceparent`` header, by position, for the sender to add."""
        traced = self._records
        added: dict[int, list[Any]] = {}
        batch = polled if isinstance(polled, SourceRecordBatch) else None  # records not built
        for i, (trace_id, span_id, value) in zip(chosen, _traceparents(len(chosen)), strict=True):
            if batch is not None:
                topic, partition = batch.topic, None
            elif isinstance(record := polled[i], SourceRecord):
                topic, partition = record.topic, record.kafka_partition
            else:
                continue  # not a record: the runner fails the task
            added[i] = [(TRACEPARENT, value)]
            traced.append((trace_id, span_id, topic, partition))
        return added

    def finish(self) -> None:
        """Hand the records traced since the last hand-over to the outlet, if any (the batch
        polled last goes on being traced if it is sent in more runs: a commit between them)."""
        records, self._records = self._records, []
        stages = self._clock.reset()
        if self._rate:
            self._clock.start()
        if not records:
            return
        start, polled = self._polled
        timeline = [("poll", start, polled)]
        timeline += sorted(((n, t[0], t[1]) for n, t in stages.items()), key=lambda t: t[1])
        self._outlet.put(("source", self._base, timeline, records, self._key), len(records))
        self._uncommitted = True


def _traceparents(n: int) -> list[tuple[int, int, bytes]]:
    """``n`` new traces: per trace its id, its first span's id and the W3C ``traceparent`` value
    naming them as sampled (from :data:`new_bytes`; the C extension's loop where it is built)."""
    raw = new_bytes(24 * n)
    if _TRACEPARENTS is not None:
        return _TRACEPARENTS(raw)
    return traceparents_of(raw)


def traceparents_of(raw: bytes) -> list[tuple[int, int, bytes]]:
    """Per 24 bytes of ``raw``, a trace: its id (the first 16, big-endian), its first span's
    (the next 8; an id of zeros, invalid, gets 1 in its last byte) and the ``traceparent``
    value naming them, ``b"00-<32 hex>-<16 hex>-01"`` (the C extension's ``traceparents`` is
    this loop)."""
    out = []
    for j in range(0, len(raw) - 23, 24):
        trace, span = raw[j : j + 16], raw[j + 16 : j + 24]
        if not any(trace):
            trace = trace[:-1] + b"\x01"
        if not any(span):
            span = span[:-1] + b"\x01"
        value = b"00-" + trace.hex().encode() + b"-" + span.hex().encode() + b"-01"
        out.append((int.from_bytes(trace, "big"), int.from_bytes(span, "big"), value))
    return out
