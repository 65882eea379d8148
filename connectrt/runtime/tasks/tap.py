"""The record inspector's tap points in a task: samples of records after each stage.

A watcher opens a :class:`TapSubscription` (one stage, a rate in events a second) and the
runtime attaches it to the :class:`TaskTap` of each task it watches (created on the first
subscription, dropped with the last: see
:meth:`~connectrt.runtime.tasks.settings.SettingsBuiltRunner.tap_into`). The runners' hot paths
hold one check per batch, ``tap = self.tap; if tap is not None``: nothing else runs while
nobody watches.

Stages (:func:`stage_names`), in a record's order:

* sink: ``read`` (the consumed message, bytes), ``converted`` (after the key, value and header
  converters), ``transform:<index or alias>`` (after the transformation at that position of the
  chain), ``written`` (the records as ``put()`` gets them);
* source: ``read`` (as ``poll()`` returned them), ``transform:<index or alias>``,
  ``converted`` (key, value and headers as the converters write them: what is produced) and
  ``written`` (the same bytes, with the topic produced to; a source record's Kafka offset is
  not known before the broker acknowledges it).

Sampling: each subscription holds a token bucket of ``rate`` events a second (at most
:data:`MAX_RATE`, a burst of one second); a batch gives a subscription at most
:data:`PER_BATCH` records, spread over the batch, and only as many as it has tokens. Stages
that the runtime does not keep apart in its hot path (a sink's ``converted`` and every
``transform:`` stage, a source's everything but ``read``) are computed for the sampled records
only, on the task thread, from the sampled input: converted again with the task's converters
and run through the first stages of a *prefix* of the task's chain (the same SMT instances).
A transformation with side effects therefore sees a sampled record twice; the chain is not
thread-safe, hence the task thread.

Threading: the ``on_*`` hooks run on the task thread and only take snapshots
(:mod:`connectrt.runtime.tasks.tap_render`), which they offer to the subscription's bounded
queue without blocking (a full queue drops the event and counts it). Rendering (JSON,
redaction) is the watcher's, on its own thread. Subscriptions are added and removed from any
thread: the list is replaced, never changed in place.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

from connectrt.api.records import (
    ConnectRecord,
    Header,
    SinkRecord,
    SourceRecord,
    TimestampType,
)
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.tap_render import snapshot_message, snapshot_record
from connectrt.transforms.chain import TransformationChain, TransformationStage

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_RATE",
    "MAX_RATE",
    "PER_BATCH",
    "QUEUE_SIZE",
    "TapSubscription",
    "TaskTap",
    "stage_names",
]

DEFAULT_RATE = 1.0
MAX_RATE = 20.0
"""Events a second one subscription gets at most, whatever it asks."""
PER_BATCH = 5
"""Records one batch gives one subscription at most."""
QUEUE_SIZE = 100
"""Events waiting for a watcher; more are dropped (and counted)."""


def stage_names(kind: str, aliases: Sequence[str]) -> list[str]:
    """The stages of a ``source`` or ``sink`` task whose chain has ``aliases``, in order
    (``transform:<alias>``; ``transform:<index>`` names the same stages)."""
    transforms = [f"transform:{a}" for a in aliases]
    if kind == "source":
        return ["read", *transforms, "converted", "written"]
    return ["read", "converted", *transforms, "written"]


class TapSubscription:
    """One watcher's view: a stage, a rate, and the queue of snapshots waiting for it.

    ``stage`` is ``read``, ``converted``, ``written`` or ``transform:<n>`` with ``n`` the
    0-based index in the chain (the caller turns an alias into the index); ``label`` is how
    events name it (default: ``stage``; ``transform:<alias>`` reads better). Thread-safe.
    """

    def __init__(
        self,
        stage: str,
        rate: float = DEFAULT_RATE,
        size: int = QUEUE_SIZE,
        label: str | None = None,
    ) -> None:
        self.stage = stage
        self.label = label or stage
        self.rate = min(max(rate, 0.01), MAX_RATE)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue(size)
        self.dropped = 0
        self._lock = threading.Lock()
        self._tokens = 1.0  # the first sampled record shows at once
        self._at = time.monotonic()
        self.transform_index = int(stage.split(":", 1)[1]) if stage.startswith("transform:") else -1

    def take(self, wanted: int) -> int:
        """How many records (at most ``wanted``) this subscription may be shown now."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(max(self.rate, 1.0), self._tokens + (now - self._at) * self.rate)
            self._at = now
            n = min(wanted, int(self._tokens))
            self._tokens -= n
            return n

    def offer(self, event: dict[str, Any]) -> None:
        """Queue ``event`` without blocking; drop it (counted) when the watcher lags."""
        try:
            self.events.put_nowait(event)
        except queue.Full:
            self.dropped += 1


def _consumed_record(msg: Any, conv: TaskConverters) -> SinkRecord:
    """A consumed message converted with the task's converters, as the sink's conversion
    does it (any converter error propagates)."""
    topic = msg.topic()
    key_schema, key = conv.key.to_connect_data(topic, msg.key())
    value_schema, value = conv.value.to_connect_data(topic, msg.value())
    headers = None
    raw = msg.headers()
    if raw:
        headers = []
        for hk, hv in raw:
            hs, hval = conv.header.to_connect_header(topic, hk, hv)
            headers.append(Header(hk, hval, hs))
    ts_type, ts = msg.timestamp()
    return SinkRecord(
        topic,
        msg.partition(),
        key_schema,
        key,
        value_schema,
        value,
        msg.offset(),
        ts if ts_type else None,
        _TIMESTAMP_TYPES[ts_type] if 0 <= ts_type < 3 else TimestampType.NO_TIMESTAMP_TYPE,
        headers,
    )


_TIMESTAMP_TYPES = (
    TimestampType.NO_TIMESTAMP_TYPE,
    TimestampType.CREATE_TIME,
    TimestampType.LOG_APPEND_TIME,
)


def _spread(count: int, n: int) -> list[int]:
    """``n`` indices spread over ``range(count)``."""
    if n >= count:
        return list(range(count))
    step = count / n
    return [int(i * step) for i in range(n)]


class TaskTap:
    """The tap points of one task (see the module docstring). Built on any thread; the
    ``on_*`` hooks run on the task thread."""

    def __init__(
        self,
        task_id: TaskId,
        kind: str,
        converters: TaskConverters,
        transforms: TransformationChain[Any] | None,
    ) -> None:
        self.id = task_id
        self.kind = kind
        self._converters = converters
        stages: list[TransformationStage[Any]] = transforms.stages if transforms else []
        self.aliases = [s.alias for s in stages]
        # Chains over the first n+1 stages (sharing the task's SMT instances; never closed).
        self._prefixes = [
            TransformationChain[Any](stages=stages[: i + 1]) for i in range(len(stages))
        ]
        self.subscriptions: tuple[TapSubscription, ...] = ()
        self._lock = threading.Lock()
        self._logged = False

    # -- subscriptions (any thread) ------------------------------------------------------------
    def add(self, sub: TapSubscription) -> None:
        with self._lock:
            if sub not in self.subscriptions:
                self.subscriptions = (*self.subscriptions, sub)

    def remove(self, sub: TapSubscription) -> bool:
        """Detach ``sub``; True when no subscription is left."""
        with self._lock:
            self.subscriptions = tuple(s for s in self.subscriptions if s is not sub)
            return not self.subscriptions

    # -- hooks (task thread; never raise: the tap must not fail a task) ------------------------
    def on_sink_consumed(self, msgs: Sequence[Any]) -> None:
        """A sink's consumed batch (before conversion): ``read``, ``converted`` and the
        ``transform:`` stages."""
        try:
            self._sink_consumed(msgs)
        except Exception:
            self._broken()

    def on_sink_put(self, records: Sequence[SinkRecord]) -> None:
        """The records a sink's ``put()`` is about to get: the ``written`` stage."""
        try:
            self._sink_put(records)
        except Exception:
            self._broken()

    def on_source_polled(self, records: Sequence[SourceRecord]) -> None:
        """Records a source's ``poll()`` returned, about to be transformed and produced: every
        stage of a source."""
        try:
            self._source_polled(records)
        except Exception:
            self._broken()

    def _broken(self) -> None:
        """A fault of the tap itself (not of a converter or transformation, which the events
        report): logged once per tap, the task goes on."""
        if not self._logged:
            self._logged = True
            log.exception("Task %s: the record inspector failed on a batch", self.id)

    def _sink_consumed(self, msgs: Sequence[Any]) -> None:
        for sub in self.subscriptions:
            if sub.stage == "written":
                continue
            picked = self._pick(sub, len(msgs))
            for i in picked:
                msg = msgs[i]
                if sub.stage == "read":
                    sub.offer(snapshot_message(msg, "read", self.id.task))
                    continue
                try:
                    record = _consumed_record(msg, self._converters)
                except Exception as e:
                    sub.offer(self._failure(sub.label, msg.topic(), e))
                    continue
                self._offer_transformed(sub, record)

    def _sink_put(self, records: Sequence[SinkRecord]) -> None:
        for sub in self.subscriptions:
            if sub.stage == "written":
                for i in self._pick(sub, len(records)):
                    sub.offer(snapshot_record(records[i], "written", self.id.task))

    def _source_polled(self, records: Sequence[SourceRecord]) -> None:
        for sub in self.subscriptions:
            for i in self._pick(sub, len(records)):
                record = records[i]
                if sub.stage == "read":
                    sub.offer(snapshot_record(record, "read", self.id.task))
                elif sub.transform_index >= 0:
                    self._offer_transformed(sub, record)
                else:
                    self._offer_produced(sub, record)

    # -- helpers -------------------------------------------------------------------------------
    def _pick(self, sub: TapSubscription, count: int) -> list[int]:
        if not count:
            return []
        n = sub.take(min(count, PER_BATCH))
        return _spread(count, n) if n else []

    def _through(self, sub: TapSubscription, record: ConnectRecord, upto: int) -> list[Any] | None:
        """``record`` through the chain's stages ``0..upto`` (all when ``upto`` is -1 or past
        the end): the records out, or None when a stage failed (an event says so)."""
        if not self._prefixes:
            return [record]
        chain = (
            self._prefixes[-1] if upto < 0 else self._prefixes[min(upto, len(self._prefixes) - 1)]
        )
        try:
            return chain.apply(record)
        except Exception as e:
            sub.offer(self._failure(sub.label, record.topic, e))
            return None

    def _offer_transformed(self, sub: TapSubscription, record: ConnectRecord) -> None:
        """A converted sink record (or a polled source record) at ``sub``'s stage."""
        index = sub.transform_index
        if index < 0:  # a sink's converted stage
            sub.offer(snapshot_record(record, sub.label, self.id.task))
            return
        out = self._through(sub, record, index)
        if out is None:
            return
        if not out:
            event = snapshot_record(record, sub.label, self.id.task)
            event["dropped"] = f"by transformation {self.aliases[index]!r}"
            sub.offer(event)
        for r in out:
            sub.offer(snapshot_record(r, sub.label, self.id.task))

    def _offer_produced(self, sub: TapSubscription, record: SourceRecord) -> None:
        """A polled source record through the whole chain and the converters."""
        out = self._through(sub, record, -1)
        if out is None:
            return
        conv = self._converters
        for r in out:
            event = snapshot_record(r, sub.label, self.id.task)
            try:
                event["key"] = conv.key.from_connect_data(r.topic, r.key_schema, r.key)
                event["value"] = conv.value.from_connect_data(r.topic, r.value_schema, r.value)
                event["headers"] = [
                    {
                        "key": h.key,
                        "value": conv.header.from_connect_header(r.topic, h.key, h.schema, h.value),
                    }
                    for h in (r.headers or ())
                    if isinstance(h, Header)
                ] or None
            except Exception as e:
                sub.offer(self._failure(sub.label, r.topic, e))
                continue
            event.pop("key_schema", None)
            event.pop("value_schema", None)
            sub.offer(event)

    def _failure(self, stage: str, topic: str, error: Exception) -> dict[str, Any]:
        return {
            "stage": stage,
            "task": self.id.task,
            "topic": topic,
            "error": f"{type(error).__name__}: {error}",
        }
