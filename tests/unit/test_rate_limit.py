"""The token buckets of task.rate.limit.*: debt, refill, stop while waiting."""

from __future__ import annotations

import threading
import time

from connectrt.api import SourceRecord
from connectrt.runtime.rate_limit import TaskRateLimiter, TokenBucket, record_bytes


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


def test_bytes_of_source_records_count_bytes_and_str_only():
    records = [
        SourceRecord({}, {}, "t", None, None, b"k", None, "vv"),
        SourceRecord({}, {}, "t", None, None, None, None, {"structured": 1}),
    ]
    assert record_bytes(records) == 3
