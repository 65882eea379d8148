"""The exporter side's memory of traced records awaiting their ``offset commit`` span.

A traced record gets an ``offset commit`` span once the offsets covering it are committed. The
tracers used to send the records again with each commit (a commit every
``offset.flush.interval.ms`` covers every record traced since the last: 25,000 of them at 1% of
500,000 records/s and 5 s), which the outlet's bound then dropped whole. Now a tracer sends a
record's ids once, with its batch, and a commit says only *which tracer* committed and when:

* a wire ``("consumed", ...)`` record (a sink's batch as its tracer hands it over) is made into
  its ``("sink", ...)`` record first (:func:`~connectrt.runtime.tracing.tracer.sink_batch`);
* a wire ``("sink", ..., records, key)`` or ``("source", ..., records, key)`` record (the
  layouts are in :mod:`connectrt.runtime.tracing.tracer`) adds its records to the tracer
  ``key``'s list;
* a wire ``("committed", base, start, end, key)`` record takes that list and becomes the
  ``("commit", base, start, end, records)`` record the span makers know.

:meth:`CommitLedger.resolve` does this for a list of wire records; the span makers
(:mod:`connectrt.runtime.tracing.otlp_encoding`, :mod:`connectrt.runtime.tracing.sdk_spans`) then
see no key and no ``committed`` record. Bounded: at most :data:`MAX_UNCOMMITTED` records per
tracer (the rest get no commit span, counted in :attr:`CommitLedger.skipped`) and
:data:`MAX_TRACERS` tracers (the least recently active is forgotten first: a stopped task's
tracer does not say it stopped); :meth:`CommitLedger.report` logs the skipped count, at most
once a minute.

Not thread-safe: one per exporter (the exporter process's reading thread, or a
:class:`~connectrt.runtime.tracing.sdk_spans.LocalOutlet` under its lock).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from connectrt.runtime.tracing.tracer import sink_batch

__all__ = ["MAX_TRACERS", "MAX_UNCOMMITTED", "CommitLedger"]

log = logging.getLogger(__name__)

MAX_UNCOMMITTED = 200_000
"""Traced records of one tracer awaiting their commit span, at most (40 s at 1% of 500,000
records/s; a few tens of megabytes)."""
MAX_TRACERS = 1024
"""Tracers remembered at once, at most."""


class CommitLedger:
    """Per tracer key, the traced records sent since its last commit (see the module
    docstring)."""

    __slots__ = ("_pending", "_report_at", "_reported", "skipped")

    def __init__(self) -> None:
        self._pending: dict[int, list[tuple[Any, ...]]] = {}
        self.skipped = 0
        """Traced records that got no commit span (over :data:`MAX_UNCOMMITTED`)."""
        self._reported = 0
        self._report_at = 0.0

    def report(self) -> None:
        """Log the records that got no commit span, if more than last time (at most once a
        minute)."""
        if self.skipped > self._reported and time.monotonic() >= self._report_at:
            log.warning(
                "Tracing gave %d traced records no offset commit span so far (more than %d "
                "traced between two commits of a task: lower tracing.sampler.ratio)",
                self.skipped,
                MAX_UNCOMMITTED,
            )
            self._reported = self.skipped
            self._report_at = time.monotonic() + 60

    def take(self, key: int) -> list[Any]:
        """The records tracer ``key`` sent since its last commit (forgotten here)."""
        return self._pending.pop(key, None) or []

    def add(self, key: int, records: list[Any]) -> None:
        """Note ``records`` (trace records, or their encoded parts) of tracer ``key``, for its
        next commit."""
        pending = self._pending.pop(key, None)  # re-inserted last: most recently active
        if pending is None:
            pending = []
            if len(self._pending) >= MAX_TRACERS:
                del self._pending[next(iter(self._pending))]
        self._pending[key] = pending
        room = MAX_UNCOMMITTED - len(pending)
        if len(records) <= room:
            pending += records
        else:
            pending += records[: max(room, 0)]
            self.skipped += len(records) - max(room, 0)

    def resolve(self, records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """``records`` (wire layouts) as the span makers take them, in order; the ledger notes
        the traced records and hands them to their commit."""
        out: list[tuple[Any, ...]] = []
        for record in records:
            tag = record[0]
            if tag == "consumed":
                expanded = sink_batch(record)
                if expanded is None:
                    continue  # no chosen record was sampled by its producer
                record, tag = expanded, "sink"
            if tag == "sink" and len(record) == 8:
                self.add(record[7], record[6])
                out.append(record)
            elif tag == "source" and len(record) == 5:
                self.add(record[4], record[3])
                out.append(record)
            elif tag == "committed":
                _tag, base, start, end, key = record
                committed = self._pending.pop(key, None)
                if committed:
                    out.append(("commit", base, start, end, committed))
            else:
                out.append(record)
        return out
