"""Stores an at-least-once source task's offsets off its thread, as their records are acknowledged.

:class:`OffsetWriter` receives, in order, the task's closed epochs
(:class:`~connectrt.runtime.source.ack_epochs.EpochSnapshot`, :meth:`OffsetWriter.submit`) and
the sequence numbers of the epochs whose records are all acknowledged (:meth:`OffsetWriter.
acknowledged`, called from the epochs' weak-reference callbacks). It stores the offsets of the
highest contiguous prefix of acknowledged epochs, merged (a later epoch's offset of a source
partition wins), with one ``OffsetStore.set``. Acknowledgements may come out of order (records
of a later epoch on a faster partition): an epoch is stored only once every earlier one is.

Rules:

* an epoch with a failed delivery (not tolerated) stops the prefix for good: neither its
  offsets nor any later ones are stored (the task fails on its thread, as without the writer);
  what was acknowledged before it is still stored;
* offsets that do not validate fail the task (its thread raises the outcome); a store that
  fails (the offsets topic unreachable) is retried with the next prefix, as Kafka Connect's
  ``OffsetStorageWriter`` does; the task goes on;
* each store's outcome (:class:`StoreOutcome`) is handed back for the task's thread
  (:meth:`OffsetWriter.outcomes`): metrics and ``SourceTask.commit()`` stay on that thread.

Threading: :meth:`submit`, :meth:`outcomes`, :meth:`wait_idle` and :meth:`close` are called
from the task's thread; :meth:`acknowledged` from wherever an epoch is freed (only a
``SimpleQueue.put``). The stores happen on the writer's own thread, started on the first
submit, except for an in-memory store (a dict under a lock: nothing to wait for), which is
written inline when the task's thread calls :meth:`process` (``inline`` True), so tests over
it are deterministic.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.runtime.source.ack_epochs import EpochSnapshot
from connectrt.runtime.tasks.runner import TaskId
from connectrt.storage.offset_codec import encode_value, validate_offset_map
from connectrt.storage.offsets import MemoryOffsetStore, OffsetStore

log = logging.getLogger(__name__)

__all__ = ["OffsetWriter", "StoreOutcome"]


@dataclass(slots=True, frozen=True)
class StoreOutcome:
    """What one store of acknowledged epochs did, for the task's thread.

    ``acknowledged``: records of the epochs newly found acknowledged; ``stored``: records whose
    offsets this store wrote (0 when it failed); ``seconds``: from the oldest epoch's close to
    the store; ``wrote``: offsets were written (False: the epochs' records carried none);
    ``error``: why the store failed (None: stored); ``fatal``: the offsets are invalid, the
    task must fail."""

    acknowledged: int
    stored: int
    seconds: float
    wrote: bool = True
    error: BaseException | None = None
    fatal: bool = False


class _AllAcknowledged:
    """Put into the event queue by :meth:`OffsetWriter.all_acknowledged`: every epoch up to
    ``upto`` is acknowledged (the producer was flushed empty)."""

    __slots__ = ("upto",)

    def __init__(self, upto: int) -> None:
        self.upto = upto


class _Barrier:
    """Put into the event queue by :meth:`OffsetWriter.wait_idle`: set once everything queued
    before it is handled."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class OffsetWriter:
    """One task's background offset writer (see the module docstring)."""

    def __init__(self, task_id: TaskId, store: OffsetStore) -> None:
        self._id = task_id
        self._store = store
        self.inline = type(store) is MemoryOffsetStore
        self._events: queue.SimpleQueue[_Event | None] = queue.SimpleQueue()
        self._waiting: deque[EpochSnapshot] = deque()  # submitted, not stored, in order
        self._acked: set[int] = set()  # sequence numbers acknowledged, not yet at the head
        self._unstored: dict[bytes, Mapping[str, Any] | None] = {}  # a failed store's offsets
        self._unstored_records = 0
        self._unstored_since = 0.0
        self._blocked = False  # a failed delivery or invalid offsets: store nothing more
        self._outcomes: deque[StoreOutcome] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- the task's thread -------------------------------------------------------------------
    def submit(self, snapshot: EpochSnapshot) -> None:
        """A closed epoch, in sequence order; stored once it and every earlier one are
        acknowledged."""
        self._events.put(snapshot)
        if not self.inline and self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._run, name=f"offset-writer-{self._id}", daemon=True
            )
            self._thread.start()

    def acknowledged(self, seq: int) -> None:
        """Epoch ``seq`` has no record in flight any more (a weak-reference callback: any
        thread)."""
        self._events.put(seq)

    def all_acknowledged(self, upto: int) -> None:
        """Every epoch up to ``upto`` is acknowledged: ``flush()`` left nothing in flight (at
        stop: an epoch may outlive its records when a failure's traceback still refers to
        it)."""
        self._events.put(_AllAcknowledged(upto))

    @property
    def ready(self) -> bool:
        """Whether the task's thread has something to do: outcomes to take, or (inline) events
        to process. Two C-level checks; the loop asks after every poll."""
        return bool(self._outcomes) or (self.inline and not self._events.empty())

    def outcomes(self) -> list[StoreOutcome]:
        """The outcomes since the last call, oldest first."""
        out: list[StoreOutcome] = []
        outcomes = self._outcomes
        while outcomes:
            out.append(outcomes.popleft())
        return out

    def process(self) -> None:
        """Inline only: handle the queued events on the caller's thread."""
        if self.inline:
            self._handle_queued()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every event queued so far is handled (stores included), at most
        ``timeout_s``; True if it was."""
        if self.inline or self._thread is None:
            self._handle_queued()
            return True
        barrier = _Barrier()
        self._events.put(barrier)
        return barrier.done.wait(max(timeout_s, 0.0))

    def close(self, timeout_s: float) -> None:
        """End the writer's thread once it has handled the events queued before (waiting at
        most ``timeout_s``; a store still blocked then finishes in the background)."""
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is not None:
            self._events.put(None)
            thread.join(max(timeout_s, 0.0))

    # -- the writer's thread (or the task's, inline) -----------------------------------------
    def _run(self) -> None:
        events = self._events
        while True:
            event = events.get()
            if event is None:
                return
            self._handle(event)
            self._handle_queued()

    def _handle_queued(self) -> None:
        """Note every queued event, then store what became storable."""
        events = self._events
        while True:
            try:
                event = events.get_nowait()
            except queue.Empty:
                break
            if event is None:
                events.put(None)  # for _run, after this round
                break
            self._handle(event)
        self._store_prefix()

    def _handle(self, event: _Event) -> None:
        """Note one event (a barrier: store what is storable, then release its waiter)."""
        if isinstance(event, int):
            self._acked.add(event)
        elif isinstance(event, EpochSnapshot):
            self._waiting.append(event)
        elif isinstance(event, _AllAcknowledged):
            self._acked.update(s.seq for s in self._waiting if s.seq <= event.upto)
        else:
            self._store_prefix()
            event.done.set()

    def _store_prefix(self) -> None:
        """Store the offsets of the acknowledged prefix of the waiting epochs (see the module
        docstring)."""
        waiting, acked = self._waiting, self._acked
        offsets: dict[bytes, Mapping[str, Any] | None] = {}
        records = 0
        oldest = 0.0
        while waiting and not self._blocked and waiting[0].seq in acked:
            head = waiting.popleft()
            acked.discard(head.seq)
            if head.failed:
                self._blocked = True  # the task fails on its thread; nothing more is stored
                break
            if not oldest:
                oldest = head.taken
            offsets.update(head.offsets)
            records += head.records
        if not offsets and not records and not self._unstored:
            return
        if self._unstored:
            offsets = {**self._unstored, **offsets}
            oldest = self._unstored_since or oldest
        acknowledged = records
        records += self._unstored_records
        self._unstored, self._unstored_records, self._unstored_since = {}, 0, 0.0
        if not offsets:  # records without offsets (no source partition): nothing to write
            self._outcomes.append(StoreOutcome(acknowledged, records, _since(oldest), False))
            return
        try:
            for value in offsets.values():
                if value is not None:
                    validate_offset_map("offset", value)
            encoded = {k: encode_value(v) for k, v in offsets.items()}
        except Exception as e:
            self._blocked = True
            self._outcomes.append(
                StoreOutcome(acknowledged, 0, _since(oldest), False, e, fatal=True)
            )
            return
        try:
            self._store.set(encoded)
        except Exception as e:  # retried with the next prefix; the task goes on
            log.warning("Task %s: storing source offsets failed, retried later: %r", self._id, e)
            self._unstored, self._unstored_records = offsets, records
            self._unstored_since = oldest
            self._outcomes.append(StoreOutcome(acknowledged, 0, _since(oldest), False, e))
            return
        self._outcomes.append(StoreOutcome(acknowledged, records, _since(oldest)))


_Event = EpochSnapshot | int | _AllAcknowledged | _Barrier


def _since(started: float) -> float:
    return time.perf_counter() - started if started else 0.0
