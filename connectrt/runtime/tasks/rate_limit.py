"""Per-task rate limits (``task.rate.limit.records.per.sec`` / ``task.rate.limit.bytes.per.sec``).

A :class:`TaskRateLimiter` is owned by one task runner and used on its thread only. The runner
calls :meth:`TaskRateLimiter.admit` once per batch, before the batch is delivered (before
produce for a source, before ``put()`` for a sink): the batch's records (and a sink's bytes)
are taken from two token buckets, and when a bucket is in debt the call waits until it is paid
back, on the runner's stop/state-change event, so a stop (or pause) is seen at once. While it
waits the sink consumes nothing: the limit is also a consumption limit.

What the bytes limit counts: for a sink, the consumed messages' key + value + header bytes
(:func:`message_bytes`: C-level ``map`` over the batch, headers read only from messages that
have some); for a source, what is produced: the key, value and header bytes *after* the
converters, whatever the records' value types (structs, maps, strings, bytes). The source's
batch sender counts them as it produces (a sum over the converted batch, or the length of each
value it converts anyway); the runner :meth:`TaskRateLimiter.charge` s them after the batch,
and the next :meth:`~TaskRateLimiter.admit` waits off the debt.

Buckets may go into debt, so a batch larger than the bucket is admitted and the next one waits
longer: the long-run rate is exact. A bucket refills at its rate up to :data:`BURST_S` seconds'
worth (the idle burst), so over any window of ``W`` seconds a task delivers at most
``rate * (W + BURST_S)`` plus one batch: at 2,000 records/s in batches of 500, at most 7.5% over
the rate in 10 s. (A full second of burst would alone allow 10% over 10 s.) Below the rate, a
task that falls behind for less than :data:`BURST_S` (a slow commit, a pause of the machine)
catches up fully.

The runner gets its limiter from the runner factory, which every executor (threads, task
processes, Spark) builds its runners with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from connectrt.runtime.clients.kafka import Message

__all__ = ["BURST_S", "TaskRateLimiter", "TokenBucket", "header_bytes", "message_bytes"]

BURST_S = 0.25
"""How many seconds' worth of tokens a bucket holds at most (the idle burst)."""

_key = Message.key
_headers = Message.headers


class TokenBucket:
    """``rate`` tokens a second, at most ``rate * burst_s`` stored (the idle burst); starts
    full."""

    __slots__ = ("_at", "_capacity", "_tokens", "rate")

    def __init__(self, rate: float, burst_s: float = BURST_S) -> None:
        self.rate = rate
        self._capacity = rate * burst_s
        self._tokens = self._capacity
        self._at = time.monotonic()

    def take(self, n: float) -> float:
        """Take ``n`` tokens; return how long to wait (s) until the bucket is out of debt."""
        now = time.monotonic()
        self._tokens = min(self._capacity, self._tokens + (now - self._at) * self.rate) - n
        self._at = now
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


def header_bytes(headers: Iterable[Sequence[Any]]) -> int:
    """Name + value bytes of a record's converted headers, ``(name, bytes or None)`` pairs (names
    counted in characters)."""
    return sum(len(name) + len(value or b"") for name, value in headers)


def message_bytes(messages: list[Any]) -> int:
    """Key + value + header bytes of a batch of consumed Kafka messages (``len(message)`` is
    its value's length); only called when a bytes limit is set."""
    n = sum(map(len, messages)) + sum(map(len, filter(None, map(_key, messages))))
    for headers in filter(None, map(_headers, messages)):  # only messages that have headers
        n += header_bytes(headers)
    return n


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
        self.charged_bytes = 0  # bytes charged so far (a source's produced bytes)

    @property
    def limits_bytes(self) -> bool:
        return self.bytes is not None

    def charge(self, nbytes: int) -> None:
        """Take ``nbytes`` already delivered from the bytes bucket without waiting: the next
        :meth:`admit` waits off the debt (the long-run rate stays exact)."""
        if self.bytes is not None and nbytes:
            self.bytes.take(nbytes)
            self.charged_bytes += nbytes

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
