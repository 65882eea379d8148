"""Per-task rate limits (``task.rate.limit.records.per.sec`` / ``task.rate.limit.bytes.per.sec``).

A :class:`TaskRateLimiter` is owned by one task runner and used on its thread only. The runner
calls :meth:`TaskRateLimiter.admit` once per batch, before the batch is delivered (before
produce for a source, before ``put()`` for a sink): the batch's records and bytes are taken from
two token buckets, and when a bucket is in debt the call waits until it is paid back, on the
runner's stop/state-change event, so a stop (or pause) is seen at once. While it waits the sink
consumes nothing: the limit is also a consumption limit.

Buckets may go into debt, so a batch larger than a second's worth is admitted and the next one
waits longer: the long-run rate is exact, and a burst is at most one batch. A bucket refills at
its rate up to one second's worth (the idle burst).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from connectrt.api.source_batch import SourceRecordBatch

__all__ = ["TaskRateLimiter", "TokenBucket", "message_bytes", "record_bytes"]


class TokenBucket:
    """``rate`` tokens a second, at most ``rate`` stored (one second of burst)."""

    __slots__ = ("_at", "_tokens", "rate")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = rate
        self._at = time.monotonic()

    def take(self, n: float) -> float:
        """Take ``n`` tokens; return how long to wait (s) until the bucket is out of debt."""
        now = time.monotonic()
        self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate) - n
        self._at = now
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


def message_bytes(messages: Iterable[Any]) -> int:
    """Key + value bytes of a batch of consumed Kafka messages (only when a bytes limit is
    set)."""
    return sum(len(m.value() or b"") + len(m.key() or b"") for m in messages)


def record_bytes(records: Iterable[Any]) -> int:
    """Key + value bytes of a batch of source records, as ``poll()`` returned them: ``bytes``
    and ``str`` keys and values count their length, structured ones (converted later) count 0,
    so a source of structured values is bounded by the records limit. A
    :class:`~connectrt.api.SourceRecordBatch` is read from its values column (its keys are
    null)."""
    if type(records) is SourceRecordBatch and not records.records_built:
        return sum(len(x) for x in records.values if isinstance(x, bytes | str))
    return sum(len(x) for r in records for x in (r.key, r.value) if isinstance(x, bytes | str))


class TaskRateLimiter:
    """Both buckets of one task; ``records_per_s``/``bytes_per_s`` of 0 mean no limit.

    ``wait(seconds)`` blocks up to ``seconds`` and returns True when the runner must stop
    waiting (a stop or a state change was signalled); ``interrupted()`` says whether the
    runner is stopping (then the batch is not delivered).
    """

    def __init__(
        self,
        records_per_s: float,
        bytes_per_s: float,
        wait: Callable[[float], bool],
        interrupted: Callable[[], bool],
    ) -> None:
        self.records = TokenBucket(records_per_s) if records_per_s > 0 else None
        self.bytes = TokenBucket(bytes_per_s) if bytes_per_s > 0 else None
        self._wait = wait
        self._interrupted = interrupted
        self.waited_s = 0.0

    @property
    def limits_bytes(self) -> bool:
        return self.bytes is not None

    def admit(self, records: int, nbytes: int = 0) -> bool:
        """Take a batch of ``records`` and ``nbytes``; wait while a bucket is in debt. False if
        the runner stopped meanwhile (the batch is then not delivered)."""
        delay = 0.0
        if self.records is not None:
            delay = self.records.take(records)
        if self.bytes is not None:
            delay = max(delay, self.bytes.take(nbytes))
        deadline = time.monotonic() + delay
        while True:
            remaining = deadline - time.monotonic()
            if self._interrupted():
                return False
            if remaining <= 0:
                return True
            started = time.monotonic()
            self._wait(min(remaining, 0.5))
            self.waited_s += time.monotonic() - started
