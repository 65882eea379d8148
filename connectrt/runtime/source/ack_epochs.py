"""Which records of an at-least-once source task Kafka has acknowledged, without a report each.

The task's producer reports failed deliveries only (``delivery.report.only.error``): a success
costs no Python code. To still know when every record produced before an offset commit is
acknowledged, the records of one commit interval (an *epoch*) all carry one delivery callback
object, an :class:`AckEpoch`, as their ``produce`` callback. confluent-kafka keeps a reference
to a record's callback from ``produce`` until its delivery report has been served (by
``poll``/``flush``; the callback itself runs only on a failure), then drops it. So once the
epoch is closed (the task's thread stopped handing its callback to ``produce``), the epoch
object lives exactly as long as one of its records is in flight: when the last record's report
is served, the object is freed and a weak reference to it fires. That is a per-record
acknowledgement counter kept by the client in C, at no cost per record beyond passing one more
argument.

:class:`EpochSnapshot` is what an epoch leaves behind: its sequence number, the source offsets
its records carried (filled when it is closed), how many records it produced, and whether a
delivery of one of them failed (not tolerated). An epoch's snapshot may be stored once its
epoch is freed and every earlier epoch's snapshot is stored or storable: the highest contiguous
acknowledged prefix (:mod:`connectrt.runtime.source.offset_writer`).

Threading: an :class:`AckEpoch` is called (on a failure) on the thread that serves the delivery
reports, the task's thread; its weak reference's callback runs wherever the last reference is
dropped (the task's thread too, in ``poll``, ``flush`` or when the epoch is closed) and only
puts the sequence number into a ``queue.SimpleQueue`` (safe from such callbacks).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.clients.kafka import KafkaError, KafkaMessage

__all__ = ["AckEpoch", "EpochSnapshot", "FailureReport", "open_epoch"]

FailureReport = Callable[[KafkaError | None, KafkaMessage], bool]
"""Handles a failed delivery (the batch sender's ``on_delivery_error``): True when the failure
fails the task (not tolerated), so the offsets must not advance past it."""


@dataclass(slots=True, eq=False)
class EpochSnapshot:
    """One epoch of an at-least-once task: see the module docstring.

    ``offsets`` (encoded source-partition key -> source offset) and ``records`` are set when the
    epoch is closed (``closed`` True); ``failed`` is set by the epoch's :class:`AckEpoch` when a
    delivery fails; ``taken`` is ``perf_counter()`` at the close. ``ref`` keeps the weak
    reference to the epoch object alive (its callback announces that the epoch is acknowledged).
    """

    seq: int
    offsets: dict[bytes, Mapping[str, Any] | None] = field(default_factory=dict)
    records: int = 0
    taken: float = 0.0
    closed: bool = False
    failed: bool = False
    ref: weakref.ref[AckEpoch] | None = None


class AckEpoch:
    """The delivery callback every record of one epoch is produced with (see the module
    docstring). Called by the client for a failed delivery only (also for a success when the
    task overrides ``commit_record``, whose per-record callback forwards failures here)."""

    __slots__ = ("__weakref__", "_report", "_snapshot")

    def __init__(self, report: FailureReport, snapshot: EpochSnapshot) -> None:
        self._report = report
        self._snapshot = snapshot

    def __call__(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        if err is not None and self._report(err, msg):
            self._snapshot.failed = True


def open_epoch(
    seq: int, report: FailureReport, acknowledged: Callable[[int], object]
) -> tuple[AckEpoch, EpochSnapshot]:
    """A new epoch ``seq``: its callback object and its snapshot. ``acknowledged(seq)`` is
    called once the epoch object is freed (every record produced with it has had its delivery
    report served, and the caller dropped its own reference): it must be safe to call from a
    finalizer (e.g. ``SimpleQueue.put``)."""
    snapshot = EpochSnapshot(seq)
    epoch = AckEpoch(report, snapshot)
    snapshot.ref = weakref.ref(epoch, lambda _ref: acknowledged(seq))
    return epoch, snapshot
