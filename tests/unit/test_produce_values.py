"""The C extension's ``produce_values`` against the ``map`` it replaces on the source hot path.

``produce_values(produce, args, values, start)`` calls ``produce(*args)`` once per value from
``start``, ``args[1]`` replaced by the value, and stops at the first call that raises, giving
``(index at fault, exception)`` instead of raising. Here: the same calls, in the same order, as
``map`` over the same arguments, for a Python callable (every argument form the sender uses) and
for a real confluent-kafka ``Producer`` (its C function called directly: the queue holds
exactly the values, a full queue stops at the first value that does not fit); a callee that
keeps its argument tuple sees it unchanged; references are neither leaked nor lost; malformed
arguments are refused. The sender's own tests (test_source_record_batch.py) run with and
without the extension.
"""

from __future__ import annotations

import gc
import sys
from itertools import repeat
from typing import Any

import pytest
from confluent_kafka import Producer

from connectrt.speedups import SPEEDUPS

pytestmark = pytest.mark.skipif(SPEEDUPS is None, reason="connectrt._speedups not in use")
C: Any = SPEEDUPS


def _cb(err: Any, msg: Any) -> None:
    """A delivery callback (never called here: nothing is delivered)."""


HEADS = [
    ("t", None),
    ("t", None, None, -1, _cb),
    ("t", None, None, -1, _cb, None, 1_700_000_000_000),
]


class Recorder:
    """A Python ``produce`` that records its arguments (copies: the tuple is reused)."""

    def __init__(self, fail_at: int | None = None, error: BaseException | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail_at = fail_at
        self.error = error

    def __call__(self, *args: Any) -> None:
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            self.fail_at = None
            assert self.error is not None
            raise self.error
        self.calls.append(tuple(args))


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("start", [0, 3, 10])
def test_the_calls_are_maps_calls(head: tuple[Any, ...], start: int) -> None:
    values = [b"v%d" % i for i in range(10)]
    got, want = Recorder(), Recorder()
    assert C.produce_values(got, head, values, start) == (10, None)
    list(map(want, repeat(head[0]), values[start:], *map(repeat, head[2:])))
    assert got.calls == want.calls
    tuple_values = tuple(values)
    again = Recorder()
    assert C.produce_values(again, head, tuple_values, start) == (10, None)
    assert again.calls == want.calls


def test_a_raising_call_stops_the_loop_and_is_returned_not_raised() -> None:
    values = [b"a", b"b", b"c", b"d"]
    boom = ValueError("too large")
    produce = Recorder(fail_at=2, error=boom)
    at, error = C.produce_values(produce, ("t", None), values, 0)
    assert (at, error) == (2, boom)
    assert [c[1] for c in produce.calls] == [b"a", b"b"]  # none after the one at fault
    assert error.__traceback__ is not None  # the raise site kept
    at, error = C.produce_values(produce, ("t", None), values, at + 1)  # goes on after it
    assert (at, error) == (4, None)
    assert [c[1] for c in produce.calls] == [b"a", b"b", b"d"]
    interrupt = Recorder(fail_at=0, error=KeyboardInterrupt())
    at, error = C.produce_values(interrupt, ("t", None), values, 0)
    assert at == 0 and type(error) is KeyboardInterrupt  # the caller raises it


def test_a_callee_that_keeps_its_arguments_sees_them_unchanged() -> None:
    kept: list[BaseException] = []

    class Keep(Exception):
        """Called with the argument tuple itself, which the exception keeps as its ``args``
        (a Python function would get a copy)."""

        def __init__(self, *args: Any) -> None:
            kept.append(self)

    values = [b"x", b"y", b"z"]
    assert C.produce_values(Keep, ("t", None, None), values, 0) == (3, None)
    assert [k.args for k in kept] == [("t", b"x", None), ("t", b"y", None), ("t", b"z", None)]


def test_references_are_neither_leaked_nor_lost() -> None:
    values = [bytes([i]) * 50 for i in range(20)]
    topic = "topic-" + "r" * 10
    before = [sys.getrefcount(v) for v in values]
    topic_before = sys.getrefcount(topic)
    for _ in range(5):
        C.produce_values(Recorder(), (topic, None, None, -1, _cb), values, 0)
        C.produce_values(Recorder(fail_at=7, error=BufferError()), (topic, None), values, 0)
    gc.collect()  # the raised exception's traceback, its frame and the recorder: a cycle
    assert [sys.getrefcount(v) for v in values] == before
    assert sys.getrefcount(topic) == topic_before


def _producer(**extra: Any) -> Producer:
    """A producer without a broker: ``produce`` only enqueues (and no connection error adds
    to ``len(producer)``, which counts events too)."""
    return Producer({"log_level": 0, **extra})


@pytest.mark.parametrize("head", HEADS)
def test_a_real_producer_queues_exactly_the_values(head: tuple[Any, ...]) -> None:
    producer = _producer(**{"linger.ms": 60_000})
    try:
        values = [b"%d" % i for i in range(1_000)]
        callback_refs = sys.getrefcount(_cb)
        assert C.produce_values(producer.produce, head, values, 0) == (1_000, None)
        assert len(producer) == 1_000
        if len(head) > 2:  # every queued record holds its callback until reported
            assert sys.getrefcount(_cb) == callback_refs + 1_000
    finally:
        producer.purge()
        producer.poll(0)
    assert len(producer) == 0


def test_a_full_queue_stops_at_the_first_value_that_does_not_fit() -> None:
    producer = _producer(**{"queue.buffering.max.messages": 5, "linger.ms": 60_000})
    try:
        values = [b"%d" % i for i in range(8)]
        at, error = C.produce_values(producer.produce, ("t", None, None, -1, _cb), values, 0)
        assert at == 5 and type(error) is BufferError
        assert len(producer) == 5
        producer.purge()
        producer.poll(0)
        assert C.produce_values(producer.produce, ("t", None), values, at) == (8, None)
        assert len(producer) == 3
    finally:
        producer.purge()
        producer.poll(0)


def test_a_value_the_producer_refuses_is_returned_with_its_error() -> None:
    producer = _producer(**{"linger.ms": 60_000})
    try:
        values = [b"ok", "not bytes but str", 42, b"ok again"]
        at, error = C.produce_values(producer.produce, ("t", None), values, 0)
        assert at == 2 and isinstance(error, TypeError)  # str is accepted, an int is not
        assert len(producer) == 2
    finally:
        producer.purge()
        producer.poll(0)


def test_malformed_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="produce_values"):
        C.produce_values(Recorder(), ("t", None), [b"a"])
    with pytest.raises(TypeError, match="args a tuple"):
        C.produce_values(Recorder(), ["t", None], [b"a"], 0)
    with pytest.raises(TypeError, match="args a tuple"):
        C.produce_values(Recorder(), ("t",), [b"a"], 0)
    with pytest.raises(TypeError, match="values a list or a tuple"):
        C.produce_values(Recorder(), ("t", None), iter([b"a"]), 0)
    with pytest.raises(ValueError, match="start"):
        C.produce_values(Recorder(), ("t", None), [b"a"], -1)
    assert C.produce_values(Recorder(), ("t", None), [b"a"], 5) == (1, None)  # past the end
    with pytest.raises(TypeError, match="added a dict"):
        C.produce_values(Recorder(), ("t", None), [b"a"], 0, None, [(0, [])])
    with pytest.raises(TypeError, match="added a dict"):
        C.produce_values(Recorder(), ("t", None, None, -1, _cb, None, 0, []), [b"a"], 0, 1, {})
    with pytest.raises(TypeError):  # a key that is not an int
        C.produce_values(Recorder(), ("t", None), [b"a"], 0, None, {"0": []})


# -- headers added to some values ------------------------------------------------------------
DEFAULTS = (None, None, -1, None, None, 0)  # produce's key, ..., timestamp (after the value)


def _with_headers(head: tuple[Any, ...], value: Any, headers: Any) -> tuple[Any, ...]:
    """The call ``produce_values`` makes for a value with added headers: head's items, the
    defaults for the ones it lacks, then the headers."""
    return (head[0], value, *head[2:], *DEFAULTS[len(head) - 1 :], headers)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("start, stop", [(0, None), (2, 9), (5, 6)])
def test_added_headers_go_with_their_values_in_a_tuple_of_their_own(
    head: tuple[Any, ...], start: int, stop: int | None
) -> None:
    values = [b"v%d" % i for i in range(10)]
    added = {i: [("traceparent", b"tp%d" % i)] for i in (0, 2, 5, 9)}
    got = Recorder()
    end = 10 if stop is None else stop
    assert C.produce_values(got, head, values, start, stop, added) == (end, None)
    want = [
        _with_headers(head, values[i], added[i]) if i in added else (head[0], values[i], *head[2:])
        for i in range(start, end)
    ]
    assert got.calls == want
    assert C.produce_values(Recorder(), head, values, start, stop, None) == (end, None)


def test_a_raising_call_at_a_value_with_added_headers_stops_there() -> None:
    values = [b"a", b"b", b"c", b"d"]
    added = {1: [("h", b"1")], 2: [("h", b"2")]}
    boom = BufferError("full")
    produce = Recorder(fail_at=2, error=boom)
    assert C.produce_values(produce, ("t", None), values, 0, None, added) == (2, boom)
    assert C.produce_values(produce, ("t", None), values, 2, None, added) == (4, None)
    assert [c[1:] for c in produce.calls] == [
        (b"a",),
        (b"b", None, -1, None, None, 0, [("h", b"1")]),
        (b"c", None, -1, None, None, 0, [("h", b"2")]),
        (b"d",),
    ]


def test_a_real_producer_queues_values_with_added_headers() -> None:
    producer = _producer(**{"linger.ms": 60_000})
    try:
        values = [b"%d" % i for i in range(100)]
        added = {i: [("traceparent", b"x" * 55)] for i in range(0, 100, 7)}
        refs = [sys.getrefcount(h) for h in added.values()]
        assert C.produce_values(producer.produce, HEADS[2], values, 0, None, added) == (100, None)
        assert len(producer) == 100
        assert [sys.getrefcount(h) for h in added.values()] == refs  # converted, not kept
    finally:
        producer.purge()
        producer.poll(0)
