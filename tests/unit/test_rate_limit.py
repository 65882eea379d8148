"""The token buckets of task.rate.limit.*: debt, refill, stop while waiting."""

from __future__ import annotations

import threading
import time

from connectrt.runtime.tasks.rate_limit import BURST_S, TaskRateLimiter, TokenBucket, header_bytes


def test_a_bucket_admits_its_burst_then_asks_to_wait_for_the_debt():
    bucket = TokenBucket(100.0)
    assert bucket.take(100 * BURST_S) == 0.0
    wait = bucket.take(50)
    assert 0.45 <= wait <= 0.5  # 50 tokens at 100/s, minus what refilled meanwhile


def test_an_idle_bucket_refills_to_its_burst_only():
    """However long a task was idle, it may then deliver only BURST_S seconds' worth at once:
    over any window of W seconds, at most rate * (W + BURST_S) plus one batch."""
    bucket = TokenBucket(1000.0)
    bucket.take(1000 * BURST_S)
    time.sleep(0.6)  # more than the burst's worth of refill
    assert bucket.take(1000 * BURST_S) == 0.0
    wait = bucket.take(100)
    assert wait >= 0.09  # the 100 records are debt: nothing more was stored


def test_a_stop_ends_the_wait_and_refuses_the_batch():
    stop = threading.Event()
    limiter = TaskRateLimiter(10.0, 0.0, stop.wait, stop.is_set)
    assert limiter.admit(10)
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert not limiter.admit(100)  # would wait 10 s
    assert time.monotonic() - started < 5


def test_bytes_charged_after_delivery_are_waited_off_by_the_next_admit():
    """A source charges the bytes it produced after the batch; the next batch waits for them."""
    stop = threading.Event()
    limiter = TaskRateLimiter(0.0, 1000.0, stop.wait, stop.is_set)
    assert limiter.admit(10)  # records only: nothing to wait for yet
    limiter.charge(int(1000 * BURST_S) + 300)  # the burst + 300 of debt at 1000 B/s
    started = time.monotonic()
    assert limiter.admit(10)
    assert 0.2 <= time.monotonic() - started <= 2.0
    assert limiter.charged_bytes == int(1000 * BURST_S) + 300


def test_a_records_only_limiter_ignores_charged_bytes():
    stop = threading.Event()
    limiter = TaskRateLimiter(1000.0, 0.0, stop.wait, stop.is_set)
    limiter.charge(10**9)
    started = time.monotonic()
    assert limiter.admit(1)
    assert time.monotonic() - started < 0.5


def test_header_bytes_count_names_and_values():
    assert header_bytes([("ab", b"123"), ("c", None)]) == 6
