"""connectrt.periodic.Periodic: when the tick runs, the wait it sets, start and stop."""

from __future__ import annotations

import threading
import time

from connectrt.periodic import Periodic

WAIT_S = 30.0  # a bound for waits on a busy machine; the tests end as soon as the event comes


def test_at_once_ticks_without_waiting_an_interval() -> None:
    ticked = threading.Event()
    ticks = Periodic("t-at-once", ticked.set, 3600.0, at_once=True)
    ticks.start()
    try:
        assert ticked.wait(WAIT_S), "the first tick of an at_once Periodic did not come"
    finally:
        ticks.stop()


def test_first_tick_waits_one_interval_and_stop_ends_the_wait() -> None:
    ticked = threading.Event()
    ticks = Periodic("t-wait-first", ticked.set, 3600.0)
    ticks.start()
    assert not ticked.wait(0.3), "ticked before its first interval passed"
    started = time.monotonic()
    ticks.stop(WAIT_S)
    assert time.monotonic() - started < WAIT_S, "stop did not wake the thread from its wait"
    assert ticks.stopped
    assert not ticked.is_set()


def test_a_returned_number_sets_the_next_wait_and_none_keeps_it() -> None:
    calls: list[float] = []
    done = threading.Event()

    def tick() -> float | None:
        calls.append(time.monotonic())
        if len(calls) == 3:
            done.set()
        return 0.01 if len(calls) == 1 else None  # then keep 0.01 instead of an hour

    ticks = Periodic("t-interval", tick, 3600.0, at_once=True)
    ticks.start()
    try:
        assert done.wait(WAIT_S), f"only {len(calls)} tick(s): the returned wait was not used"
    finally:
        ticks.stop()


def test_start_while_running_keeps_one_thread_and_start_after_stop_runs_again() -> None:
    count = 0
    ticked = threading.Event()

    def tick() -> None:
        nonlocal count
        count += 1
        ticked.set()

    ticks = Periodic("t-restart", tick, 3600.0, at_once=True)
    ticks.start()
    assert ticked.wait(WAIT_S)
    ticks.start()  # running: nothing (a second thread would be started right here)
    assert [t.name for t in threading.enumerate()].count("t-restart") == 1
    ticks.stop()
    ticked.clear()
    ticks.start()
    try:
        assert ticked.wait(WAIT_S), "a start after stop did not tick again"
    finally:
        ticks.stop()
    assert count == 2


def test_stop_without_start_and_wait_wakes_at_stop() -> None:
    ticks = Periodic("t-idle", lambda: None, 1.0)
    ticks.stop()
    assert ticks.wait(0) is True  # stopped: wait returns at once
