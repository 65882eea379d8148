"""The token buckets of task.rate.limit.*: debt, refill, stop while waiting."""

from __future__ import annotations

import threading
import time

from connectrt.runtime.rate_limit import TaskRateLimiter, TokenBucket, header_bytes


def test_a_bucket_admits_one_second_then_asks_to_wait_for_the_debt():
    bucket = TokenBucket(100.0)
    assert bucket.take(100) == 0.0
    wait = bucket.take(50)
    assert 0.45 <= wait <= 0.5  # 50 tokens at 100/s, minus what refilled meanwhile


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
    limiter.charge(1300)  # 1000 of burst + 300 of debt at 1000 B/s
    started = time.monotonic()
    assert limiter.admit(10)
    assert 0.2 <= time.monotonic() - started <= 2.0
    assert limiter.charged_bytes == 1300


def test_a_records_only_limiter_ignores_charged_bytes():
    stop = threading.Event()
    limiter = TaskRateLimiter(1000.0, 0.0, stop.wait, stop.is_set)
    limiter.charge(10**9)
    started = time.monotonic()
    assert limiter.admit(1)
    assert time.monotonic() - started < 0.5


def test_header_bytes_count_names_and_values():
    assert header_bytes([("ab", b"123"), ("c", None)]) == 6
