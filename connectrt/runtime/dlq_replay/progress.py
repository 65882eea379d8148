"""What a dead letter queue replay was asked to do, and how far it got.

:class:`ReplayRequest` is the operator's request (time window, dry run, replay limit);
:class:`ReplayProgress` the live counters of one run, updated by the run's thread and read by
REST handlers as a frozen :class:`ReplayStatus` snapshot.

Counts: ``read`` DLQ records examined; ``replayed`` re-delivered (acknowledged on their topic;
in a dry run: would be); ``skipped`` not replayed, by reason; ``failed_again`` records of this
run that came back to the DLQ (written back by the run itself when re-converting or producing
failed, or by the connector's task when it failed the copy again).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

__all__ = [
    "PartitionProgress",
    "ReplayProgress",
    "ReplayRequest",
    "ReplayState",
    "ReplayStatus",
    "SkipReason",
]


class ReplayState(enum.StrEnum):
    RUNNING = "RUNNING"
    """Reading the DLQ and re-delivering."""
    AWAITING_SINK = "AWAITING_SINK"
    """Everything re-delivered; waiting for the sink to consume it, counting what comes back."""
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"

    @property
    def active(self) -> bool:
        return self in (ReplayState.RUNNING, ReplayState.AWAITING_SINK)


class SkipReason(enum.StrEnum):
    BEFORE_FROM = "before_from"
    """Its timestamp is before the request's ``from``."""
    OTHER_CONNECTOR = "other_connector"
    """Its ``__connect.errors.connector.name`` names another connector (a shared DLQ)."""
    MAX_REPLAYS = "max_replays"
    """It has been replayed ``max_replays`` times already."""
    NO_TOPIC = "no_topic"
    """A sink record without a ``__connect.errors.topic`` header, and the connector reads
    more than one topic (or a pattern)."""
    TOPIC_NOT_CONSUMED = "topic_not_consumed"
    """A sink record whose topic the connector no longer reads."""
    UNREADABLE = "unreadable"
    """A source connector's DLQ record that is not a source record document."""
    DROPPED_BY_TRANSFORMS = "dropped_by_transforms"
    """The source connector's transforms dropped it this time."""
    TRUNCATED = "truncated"
    """It was cut to fit the DLQ topic (``__connect.errors.truncated``): not the original."""


@dataclass(frozen=True)
class ReplayRequest:
    """``from_ms <= timestamp < to_ms`` (epoch ms, None: unbounded) selects records;
    ``max_replays`` (None: no limit) skips records replayed that many times already."""

    from_ms: int | None = None
    to_ms: int | None = None
    dry_run: bool = False
    max_replays: int | None = None


@dataclass(frozen=True)
class PartitionProgress:
    """One DLQ partition: the run reads offsets ``[start, end)``; ``position`` is the next
    offset it will commit (``end``, or where ``to`` held it back, once done)."""

    partition: int
    start: int
    end: int
    position: int


@dataclass(frozen=True)
class ReplayStatus:
    """A snapshot of one run (times are epoch ms)."""

    id: str
    connector: str
    connector_type: str
    dlq_topic: str
    group: str
    request: ReplayRequest
    state: ReplayState
    started_ms: int
    finished_ms: int | None
    read: int
    replayed: int
    skipped: int
    failed_again: int
    skipped_reasons: Mapping[str, int]
    partitions: tuple[PartitionProgress, ...]
    sink_caught_up: bool | None
    message: str | None


@dataclass
class ReplayProgress:
    """The mutable progress of one run. Written by the run's thread, read from any thread
    through :meth:`snapshot`; every method holds one lock."""

    id: str
    connector: str
    connector_type: str
    dlq_topic: str
    group: str
    request: ReplayRequest
    state: ReplayState = ReplayState.RUNNING
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    finished_ms: int | None = None
    read: int = 0
    replayed: int = 0
    failed_again: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    partitions: dict[int, PartitionProgress] = field(default_factory=dict)
    sink_caught_up: bool | None = None
    message: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, read: int = 0, replayed: int = 0, failed_again: int = 0) -> None:
        with self._lock:
            self.read += read
            self.replayed += replayed
            self.failed_again += failed_again

    def skip(self, reason: SkipReason) -> None:
        with self._lock:
            self.skipped_reasons[reason.value] = self.skipped_reasons.get(reason.value, 0) + 1

    def set_partition(self, partition: PartitionProgress) -> None:
        with self._lock:
            self.partitions[partition.partition] = partition

    def advance(self, partition: int, position: int) -> None:
        with self._lock:
            current = self.partitions[partition]
            self.partitions[partition] = replace(current, position=position)

    def set_state(self, state: ReplayState, message: str | None = None) -> None:
        with self._lock:
            self.state = state
            if message is not None:
                self.message = message
            if not state.active:
                self.finished_ms = int(time.time() * 1000)

    def note(self, message: str) -> None:
        with self._lock:
            self.message = message

    def set_sink_caught_up(self, caught_up: bool) -> None:
        with self._lock:
            self.sink_caught_up = caught_up

    def snapshot(self) -> ReplayStatus:
        with self._lock:
            return ReplayStatus(
                id=self.id,
                connector=self.connector,
                connector_type=self.connector_type,
                dlq_topic=self.dlq_topic,
                group=self.group,
                request=self.request,
                state=self.state,
                started_ms=self.started_ms,
                finished_ms=self.finished_ms,
                read=self.read,
                replayed=self.replayed,
                skipped=sum(self.skipped_reasons.values()),
                failed_again=self.failed_again,
                skipped_reasons=dict(self.skipped_reasons),
                partitions=tuple(p for _, p in sorted(self.partitions.items())),
                sink_caught_up=self.sink_caught_up,
                message=self.message,
            )
