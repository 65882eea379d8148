"""Tracing a sink task's records: one span per batch, and spans per stage for the records picked.

Imported only when tracing is on (it imports OpenTelemetry through
:mod:`connectrt.runtime.tracing.tracer`). :meth:`SinkTracer.attach` puts the tracer on a
:class:`~connectrt.runtime.sink.runner.SinkTaskRunner` before it starts: it has its stage clock
time the runner's conversion, each transformation of its chain and the task's ``put`` in the
batches it traces (their timed calls in place for those batches only), wraps the offset commit
and the dead letter queue write, and the runner's loop calls :meth:`SinkTracer.consume` in place
of ``consumer.consume`` (its one check per batch).

Per consumed batch, :class:`~connectrt.runtime.tracing.tracer.Picker` chooses records at the
configured ratio (in runs: at 1% about one batch of 500 in 50, 250 of its records); a chosen record
whose ``traceparent`` header says "not sampled" is left out (parent-based sampling). When at least
one record is traced, the batch gets one span, ``process <topic> batch`` (a new trace, kind
CONSUMER, with ``messaging.batch.message_count`` and a span link to each traced record's producer
span, as the OpenTelemetry messaging conventions have batch receivers do), with a child ``consume``
timing the ``consume()`` call (the receive, a batch's operation). Each traced record gets a span
``process <topic>`` parented to its producer's span (its ``traceparent``; a new trace without one),
from the batch's arrival (``consume()`` returned; the record's timestamp if that is later: a
producer's clock ahead) to its last stage, with a child per stage: ``convert``, ``transform
<alias>`` per transformation, ``put``, and, once the offsets that cover it are committed, ``offset
commit``; ``dlq write`` when it went to the dead letter queue. Every span of a record carries the
connector, task, topic, partition and offset as attributes. When the next batch is consumed (or at a
commit, or when the task stops), the tracer hands the finished batch to its outlet as one
``consumed`` trace record: the stage times as the clock noted them and, per chosen record, its
``traceparent`` value, topic, partition, offset and timestamp, unparsed. This is all the task thread
does for tracing: the parent-based choice, the ids, the timeline and the spans are made out of the
task's process (:func:`connectrt.runtime.tracing.tracer.sink_batch`, in the exporter process of
:mod:`connectrt.runtime.tracing.exporter`).

Used on the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind

from connectrt.runtime.config.tracing import TracingSettings
from connectrt.runtime.sink.message_batch import message_accessors
from connectrt.runtime.tracing.exporter import outlet_for
from connectrt.runtime.tracing.tracer import (
    TRACEPARENT,
    TaskTracer,
    TraceOutlet,
    new_id,
    trace_context,
)
from connectrt.speedups import SPEEDUPS

if TYPE_CHECKING:
    from connectrt.runtime.clients.kafka import KafkaConsumer
    from connectrt.runtime.sink.runner import SinkTaskRunner

__all__ = ["SinkTracer"]

_INTERNAL = SpanKind.INTERNAL.value


_CHOSEN_FIELDS: Callable[..., list[Any]] | None = getattr(SPEEDUPS, "chosen_fields", None)


def _chosen_fields(msgs: Sequence[Any], chosen: Sequence[int]) -> list[Any]:
    """The fields :meth:`SinkTracer._begin` notes of the ``chosen`` of ``msgs`` (the C
    extension's ``chosen_fields`` where it is built: the same list): per message without an
    error, its ``traceparent`` header's value (None without one), topic, partition, offset and
    timestamp, flat."""
    picked: list[Any] = []
    add = picked.extend
    for i in chosen:
        msg = msgs[i]
        if msg.error() is not None:
            continue
        value = _header(msg.headers(), TRACEPARENT)
        add((value, msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1]))
    return picked


def _header(headers: Any, name: str) -> Any:
    """The value of the first of a message's ``headers`` named ``name`` (None without one)."""
    for key, value in headers or ():
        if key == name:
            return value
    return None


class SinkTracer(TaskTracer):
    """Traces one sink task's batches (see the module docstring)."""

    def __init__(self, outlet: TraceOutlet, settings: TracingSettings, runner: Any) -> None:
        """Use :meth:`attach`."""
        group = str(runner._consumer_config.get("group.id", ""))
        super().__init__(outlet, settings.ratio, runner, {"messaging.consumer.group.name": group})
        self._parent_based = settings.parent_based
        # the batch consumed last, if records of it were chosen: (consume start, end, size, the
        # chosen records' fields, flat: see _begin)
        self._batch: tuple[int, int, int, list[Any]] | None = None

    @classmethod
    def attach(
        cls, runner: SinkTaskRunner, settings: TracingSettings, outlet: TraceOutlet | None = None
    ) -> SinkTracer:
        """Make a tracer for ``runner`` (not started yet) and wrap its stages (see the module
        docstring). ``outlet``: the process's for ``settings`` unless given (tests)."""
        self = cls(outlet or outlet_for(settings), settings, runner)
        clock = self._clock
        clock.time_attribute(runner._conversion, "convert", "convert")
        if runner._transforms is not None:
            clock.time_chain(runner._transforms)
        clock.time_attribute(runner.task, "put", "put")  # not a task class with __slots__
        offsets = runner._offsets
        offsets.commit = self._traced_commit(offsets.commit)  # type: ignore[method-assign]
        errors = runner.errors
        send_to_dlq = errors._send_to_dlq

        def traced_dlq(failure: Any) -> None:
            start = time.time_ns()
            try:
                send_to_dlq(failure)
            finally:
                self._dlq_written(failure, start, time.time_ns())

        errors._send_to_dlq = traced_dlq  # type: ignore[method-assign]
        runner.tracer = self
        return self

    # -- the runner's loop ----------------------------------------------------------------------
    def consume(self, consumer: KafkaConsumer, count: int, timeout: float) -> list[Any]:
        """``consumer.consume(count, timeout)``, timed: the previous batch is handed to the
        outlet first, and the records of this one are picked."""
        if self._batch is not None:
            self.finish()
        start = time.time_ns()
        msgs = consumer.consume(count, timeout)
        if msgs:
            chosen = self._picker.pick(len(msgs))
            if chosen:
                self._begin(msgs, chosen, start, time.time_ns())
        return msgs

    def _begin(self, msgs: list[Any], chosen: Sequence[int], start: int, end: int) -> None:
        # Per chosen record only what the exporter side cannot know: its traceparent header's
        # value (parsed there), topic, partition, offset and timestamp, flat in one list. The
        # ids, the parent-based choice and the timeline are made there
        # (:func:`~connectrt.runtime.tracing.tracer.sink_batch`).
        if _CHOSEN_FIELDS is not None and type(msgs) is list:  # the loop below in C
            picked = _CHOSEN_FIELDS(msgs, chosen, message_accessors(msgs), TRACEPARENT)
        else:
            picked = _chosen_fields(msgs, chosen)
        if picked:
            self._batch = (start, end, len(msgs), picked)
            self._clock.start()

    def finish(self) -> None:
        """Hand the batch consumed last to the outlet, if it had chosen records."""
        batch = self._batch
        if batch is None:
            return
        self._batch = None
        start, consumed, size, picked = batch
        stages = self._clock.reset()
        base, parent_based, key = self._base, self._parent_based, self._key
        self._outlet.put(
            ("consumed", base, size, start, consumed, stages, picked, parent_based, key),
            len(picked) // 5,
        )
        self._uncommitted = True

    def _dlq_written(self, failure: Any, start: int, end: int) -> None:
        """A record went to the dead letter queue: a ``dlq write`` span under its producer's
        span (every DLQ write is traced; they are rare)."""
        raw = failure.raw
        parent = None
        attributes: dict[str, Any] = dict(self._base)
        if raw is not None:
            parent = trace_context(_header(raw.headers(), TRACEPARENT))
            attributes["messaging.destination.name"] = raw.topic()
            attributes["messaging.destination.partition.id"] = str(raw.partition())
            attributes["messaging.kafka.offset"] = raw.offset()
        attributes["connectrt.stage"] = failure.stage
        attributes["error.type"] = type(failure.error).__name__
        trace_id, parent_id = (parent[0], parent[1]) if parent else (new_id(128) or 1, 0)
        self._outlet.put(
            (
                "span",
                "dlq write",
                trace_id,
                new_id(64) or 1,
                parent_id,
                start,
                end,
                _INTERNAL,
                attributes,
            ),
            1,
        )
