"""Measuring a task's records rate from what it committed, for the rate-limit tests of every
executor (``tests/integration/test_task_rate_limit.py``, ``tests/spark/test_rate_limit_spark.py``).

:func:`measured_rate` waits for a warm-up, then measures over a window of at least
:data:`WINDOW_S` seconds. Each end of the window is the moment the count was seen to change
(sampled every 20 ms), so commit and batch granularity do not blur it. The counts are read
through REST (``GET /connectors/{name}/offsets``): the source's committed offset, the sink's
committed consumer offsets, the same wherever the task runs. :func:`assert_within_10_percent`
is the bound the issue asks for, with the reasoning for each side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from connectrt.testing.rest import wait_for

__all__ = [
    "WINDOW_S",
    "assert_within_10_percent",
    "measured_rate",
    "sink_committed",
    "source_committed",
]

WINDOW_S = 10.0


def _next_change(count: Callable[[], int], after: int, what: str) -> tuple[float, int]:
    """The first moment ``count()`` exceeds ``after`` (sampled every 20 ms), and its value."""
    deadline = time.monotonic() + 60
    while True:
        value = count()
        now = time.monotonic()
        if value > after:
            return now, value
        if now > deadline:
            raise TimeoutError(f"timed out after 60 s waiting for {what} to pass {after}")
        time.sleep(0.02)


def measured_rate(count: Callable[[], int], warm_up: int, what: str) -> float:
    """Records a second of ``count()`` over a window of at least :data:`WINDOW_S` seconds,
    once it reached ``warm_up``."""
    wait_for(lambda: count() >= warm_up, 120, f"{what} to reach {warm_up} (warm-up)")
    t0, c0 = _next_change(count, count(), what)
    time.sleep(WINDOW_S)  # the measuring window itself; the figures are read after it
    t1, c1 = _next_change(count, count(), what)
    rate = (c1 - c0) / (t1 - t0)
    print(f"measured {what}: {c1 - c0} records in {t1 - t0:.2f} s = {rate:.0f}/s")
    return rate


def _offsets(http: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = http.get(f"/connectors/{quote(name, safe='')}/offsets")
    assert response.status_code == 200, response.text
    offsets: list[dict[str, Any]] = response.json().get("offsets", [])
    return offsets


def source_committed(http: httpx.Client, name: str) -> Callable[[], int]:
    """The committed source offset (``seq``) of a one-task sequence or struct source."""
    return lambda: max((int(o["offset"]["seq"]) for o in _offsets(http, name)), default=0)


def sink_committed(http: httpx.Client, name: str) -> Callable[[], int]:
    """A sink's committed consumer offsets, summed over its partitions."""
    return lambda: sum(int(o["offset"]["kafka_offset"]) for o in _offsets(http, name))


def assert_within_10_percent(rate: float, limit: float) -> None:
    """The issue asks for the limit "held within 10% over 10 s".

    Upper bound, strictly at +10%: exceeding it is the failure the issue is about (the
    processes executor ignored the limit: 300,000 records in under a second at 10,000/s). The
    limiter delivers at most ``limit * (10 + 0.25)`` plus one batch in any 10 s
    (:mod:`connectrt.runtime.tasks.rate_limit`), 2.5% plus 1-2.5% in these tests.

    Lower bound, at -10% too: the tasks used can go far faster than the limit, and a task that
    falls behind for a moment catches up from the bucket's burst, so falling under means the
    limiter throttles too hard. Measured at 0.5-1% off on every executor; a machine starved for
    seconds on end could still push it under, which shows as a failure, never silently.
    """
    assert rate <= limit * 1.1, f"{rate:.0f} records/s against a limit of {limit:g}: exceeded"
    assert rate >= limit * 0.9, f"{rate:.0f} records/s against a limit of {limit:g}: throttled"
