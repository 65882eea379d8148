"""Tracing a source task's records: a trace starts at ``poll()`` for each record picked.

Imported only when tracing is on (it imports OpenTelemetry through
:mod:`connectrt.runtime.tracing.tracer`). :meth:`SourceTracer.attach` puts the tracer on a
:class:`~connectrt.runtime.source.runner.SourceTaskRunner` before it starts: it wraps each
transformation of the chain, the batch sender (conversion and ``produce``) and the offset
commit with stage clocks, and the runner's loop calls :meth:`SourceTracer.poll` in place of
``task.poll()`` (its one check per batch).

Per polled batch, :class:`~connectrt.runtime.tracing.tracer.Picker` chooses records at the
configured ratio (in runs: a few batches with many records picked, so that few of a
:class:`SourceRecordBatch` s have their records built). Each chosen record starts a trace: a span
``send <topic>`` (kind PRODUCER) from the start of ``poll()``, whose context is written into the
record as a W3C ``traceparent`` header (through the task's header converter; SimpleHeaderConverter
writes it as is), so that consumers downstream continue the trace. Its children are the stages:
``poll``, ``transform <alias>`` per transformation, ``produce`` (the batch's conversion and
``produce`` calls) and, once the offsets that cover the record are committed, ``offset commit``.
Spans carry the connector, task and topic as attributes. A :class:`SourceRecordBatch` with a record
picked has its records built; the sender then produces the batch's other records by its C loop and
the picked ones, with their header, one by one in their place
(:meth:`~connectrt.runtime.source.sender.SourceBatchSender.send`). When the next batch is polled (or
at a commit, or when the task stops), the tracer hands the finished batch to its outlet as one trace
record (stage times, and per traced record its ids and topic); the spans are made and exported out
of the task's process (:mod:`connectrt.runtime.tracing.exporter`).

Used on the task thread only.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from connectrt.api.records import Header, SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.data import Schema
from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.tracing.exporter import outlet_for
from connectrt.runtime.tracing.tracer import (
    TRACEPARENT,
    TaskTracer,
    TraceOutlet,
    new_id,
)

if TYPE_CHECKING:
    from connectrt.api.task import SourceTask
    from connectrt.runtime.source.runner import SourceTaskRunner

__all__ = ["SourceTracer"]

# A traced record, as the trace records lay it out: (trace id, span id, topic, partition or None).
_Record = tuple[int, int, str, int | None]


class SourceTracer(TaskTracer):
    """Traces one source task's batches (see the module docstring)."""

    def __init__(self, outlet: TraceOutlet, settings: TracingSettings, runner: Any) -> None:
        """Use :meth:`attach`."""
        super().__init__(outlet, settings.ratio, runner)
        self._polled: tuple[int, int] = (0, 0)
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
        wrap = self._clock.wrap
        if runner._transforms is not None:
            runner._transforms.instrument(lambda alias, call: wrap(f"transform {alias}", call))
        sender = runner._sender
        sender.send = wrap("produce", sender.send)  # type: ignore[method-assign]
        traced_commit = self._traced_commit(runner.commit_offsets)
        runner.commit_offsets = traced_commit  # type: ignore[method-assign]
        runner.tracer = self
        return self

    # -- the runner's loop ----------------------------------------------------------------------
    def poll(self, task: SourceTask) -> Any:
        """``task.poll()``, timed: the previous batch is handed to the outlet first, and traces
        start for the records picked of this one (their ``traceparent`` header added)."""
        if self._records:
            self.finish()
        start = time.time_ns()
        records = task.poll()
        end = time.time_ns()
        if records:
            self._begin(records, start, end)
        return records

    def _begin(self, polled: Any, start: int, end: int) -> None:
        try:
            n = len(polled)
        except TypeError:
            return  # not a batch: the runner fails the task
        chosen = self._picker.pick(n)
        if not chosen:
            return
        records = polled.records() if isinstance(polled, SourceRecordBatch) else polled
        self._polled = (start, end)
        traced = self._records
        for i in chosen:
            record = records[i]
            if not isinstance(record, SourceRecord):
                continue
            trace_id, span_id = new_id(128) or 1, new_id(64) or 1
            header = Header(
                TRACEPARENT, f"00-{trace_id:032x}-{span_id:016x}-01", Schema.STRING_SCHEMA
            )
            record.headers = [*(record.headers or ()), header]
            traced.append((trace_id, span_id, record.topic, record.kafka_partition))
        self._clock.reset()
        self._clock.active = bool(traced)

    def finish(self) -> None:
        """Hand the batch polled last to the outlet, if it had traced records."""
        records, self._records = self._records, []
        stages = self._clock.reset()
        if not records:
            return
        start, polled = self._polled
        timeline = [("poll", start, polled)]
        timeline += sorted(((n, t[0], t[1]) for n, t in stages.items()), key=lambda t: t[1])
        self._outlet.put(("source", self._base, timeline, records, self._key), len(records))
        self._uncommitted = True
