"""A remote task's open call: reports, the worker's mirror, and their status-topic record."""

from __future__ import annotations

import threading
import time

import orjson

from connectrt.runtime.executors.call_reports import STACK_AFTER_S, CallMirror, open_call_report
from connectrt.runtime.tasks.liveness import CallClock
from connectrt.storage.status_codec import (
    TaskCallRecord,
    decode_status_record,
    task_call_record,
)
from connectrt.storage.status_store import _StatusView


def test_a_report_carries_the_stack_only_once_the_call_is_long():
    clock = CallClock()
    assert open_call_report(clock, threading.get_ident()) is None
    clock.enter("poll")
    call, entered, age, stack = open_call_report(clock, threading.get_ident()) or ("", 0, 0, "")
    assert (call, entered) == ("poll", clock.entered) and age < STACK_AFTER_S and stack is None
    clock.entered -= STACK_AFTER_S + 0.5  # as if entered earlier
    report = open_call_report(clock, threading.get_ident())
    assert report is not None and report[3] is not None
    assert "test_a_report_carries_the_stack" in report[3]


def test_the_mirror_keeps_one_entry_time_per_call_in_its_own_clock():
    mirror = CallMirror("the Spark task t")
    mirror.update(("put", 1000.0, 0.5, None))  # short, no stack yet: not shown
    assert mirror.call_clock.open_call() is None
    mirror.update(("put", 1000.0, 5.0, "  File x, in put\n"))  # the remote clock is unrelated
    entered = mirror.call_clock.entered
    assert mirror.call_clock.call == "put"
    assert abs((time.monotonic() - entered) - 5.0) < 0.5
    assert "in the Spark task t" in mirror.current_stack()
    assert "in put" in mirror.current_stack()
    mirror.update(("put", 1000.0, 6.0, "  File x, in put\n"))  # the same call: same entry
    assert mirror.call_clock.entered == entered
    mirror.update(("put", 2000.0, 0.1, None))  # the next call, short: the long one is over
    assert mirror.call_clock.open_call() is None
    mirror.update(("put", 2000.0, 1.5, "stack"))  # that call became long: a new entry time
    assert mirror.call_clock.entered > entered
    mirror.update(None)
    assert mirror.call_clock.open_call() is None


def test_a_mirror_without_a_stack_says_so():
    assert "has not sent a stack" in CallMirror("task process 7").current_stack()


def test_task_call_records_round_trip_and_the_status_store_ignores_them():
    record = TaskCallRecord("my-conn-1", 3, 7, "h:42", "poll", 12.5, 3.25, "stack")
    key, value = task_call_record(record)
    assert key == b"call-task-my-conn-1-3"
    assert decode_status_record(key, value) == record
    cleared = TaskCallRecord("my-conn-1", 3, 7, "h:42", None, 0.0, 0.0, None)
    assert decode_status_record(*task_call_record(cleared)) == cleared
    assert decode_status_record(key, None) is None  # the tombstone at the task's end
    bad = orjson.dumps({"generation": "x", "worker_id": "h", "call": 1, "entered": 0, "age": 0})
    assert decode_status_record(key, bad) is None
    view = _StatusView()
    view.apply(decode_status_record(key, value))  # what the Kafka store does with each record
    assert view.task_list("my-conn-1") == [] and view.connector_names() == []
