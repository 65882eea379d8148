"""``SourceRecord(...)`` built by the C extension (``SlotFiller.own_constructor``) gives what
``SourceRecord.__init__`` gives, for every form of call; a call Python refuses raises Python's
own error; subclasses keep the generic path; nothing leaks, and a record made of a freed one
(the extension keeps them: ``own_dealloc``) holds nothing of it. The oracle is ``__init__``
itself, called on a bare instance (which bypasses the class's constructor)."""

from __future__ import annotations

import copy
import gc
import pickle
import random
import sys
from typing import Any

import pytest

from connectrt.api import Header, SourceRecord
from connectrt.api.records import SOURCE_FILLER, SOURCE_SLOTS

NAMES = SOURCE_SLOTS


def _by_init(*args: Any, **kwargs: Any) -> SourceRecord:
    record = object.__new__(SourceRecord)
    SourceRecord.__init__(record, *args, **kwargs)
    return record


def _fields(record: SourceRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in NAMES}


def _outcome(make: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", _fields(make(*args, **kwargs))
    except TypeError as e:
        return "TypeError", str(e)


def test_the_fields_are_the_constructors_parameters_in_order() -> None:
    assert NAMES == (
        "source_partition",
        "source_offset",
        "topic",
        "kafka_partition",
        "key_schema",
        "key",
        "value_schema",
        "value",
        "timestamp",
        "headers",
    )


@pytest.mark.skipif(SOURCE_FILLER is None, reason="connectrt._speedups not in use")
def test_with_the_extension_calls_go_straight_to_c() -> None:
    # A second install on the same class is a no-op; the class's constructor stays in C.
    SOURCE_FILLER.own_constructor(3)
    assert _fields(SourceRecord({}, {}, "t", value=b"v"))["value"] == b"v"


def test_every_form_of_call_gives_what_init_gives() -> None:
    rng = random.Random(7)
    values = [None, 0, -1, 2**70, "s", b"b", {"k": 1}, [Header("h", b"x")], 1.5, object()]
    for _ in range(3000):
        n_positional = rng.randint(0, len(NAMES) + 1)
        args = [rng.choice(values) for _ in range(n_positional)]
        kwargs = {
            name: rng.choice(values)
            for name in NAMES[min(n_positional, len(NAMES)) :]
            if rng.random() < 0.4
        }
        roll = rng.random()
        if roll < 0.05:
            kwargs["valu"] = 1  # unknown
        elif roll < 0.1 and n_positional > 0:
            kwargs[NAMES[rng.randrange(min(n_positional, len(NAMES)))]] = 1  # repeated
        expected = _outcome(_by_init, *args, **kwargs)
        assert _outcome(SourceRecord, *args, **kwargs) == expected, (args, kwargs)


def test_refused_calls_raise_pythons_own_errors() -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (({}, {}), {}),
        (({},), {"topic": "t"}),
        (({}, {}, "t"), {"topic": "u"}),
        (({}, {}, "t"), {"valu": 1}),
        (tuple(range(11)), {}),
        ((), {}),
    ]
    for args, kwargs in cases:
        with pytest.raises(TypeError) as made:
            SourceRecord(*args, **kwargs)
        with pytest.raises(TypeError) as oracle:
            _by_init(*args, **kwargs)
        assert str(made.value) == str(oracle.value)


def test_a_subclass_keeps_its_own_init() -> None:
    class Stamped(SourceRecord):
        __slots__ = ("stamp",)

        def __init__(self, *args: Any, stamp: int = 0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.stamp = stamp

    record = Stamped({"p": 1}, {"o": 2}, "t", value=b"v", stamp=5)
    assert (type(record), record.stamp, record.value, record.topic) == (Stamped, 5, b"v", "t")


def test_records_are_whole_objects() -> None:
    record = SourceRecord({"p": 1}, {"o": 2}, "t", 3, None, b"k", None, b"v", 9, [])
    assert gc.is_tracked(record)
    assert record == _by_init({"p": 1}, {"o": 2}, "t", 3, None, b"k", None, b"v", 9, [])
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.copy(record) == record
    changed = record.new_record(value=b"w")
    assert (changed.value, changed.key, changed.source_offset) == (b"w", b"k", {"o": 2})
    assert record.header_list() is record.headers


def test_nothing_leaks() -> None:
    partition, offset, value = {"p": 1}, {"o": 2}, b"some bytes of a value"
    before = [sys.getrefcount(x) for x in (partition, offset, value)]
    for _ in range(1000):
        SourceRecord(partition, offset, "t", value=value)
        SourceRecord(partition, offset, "t", None, None, None, None, value)
        try:
            SourceRecord(partition, offset, "t", valu=value)
        except TypeError:
            pass
    assert [sys.getrefcount(x) for x in (partition, offset, value)] == before


def test_a_record_made_of_a_freed_one_holds_nothing_of_it() -> None:
    # Every field set, freed (kept by the extension), then records of every form of call:
    # each has what __init__ gives, the freed record's fields nowhere.
    old = [object() for _ in NAMES]
    before = [sys.getrefcount(x) for x in old]
    for _ in range(3000):  # more than the extension keeps
        SourceRecord(*old)
    assert [sys.getrefcount(x) for x in old] == before
    made = [SourceRecord({"p": 1}, {"o": 2}, "t") for _ in range(100)]
    made += [SourceRecord({"p": 1}, {"o": 2}, "t", value=b"v", headers=[]) for _ in range(100)]
    made += [SourceRecord({"p": 1}, {"o": 2}, "t", 1, None, b"k") for _ in range(100)]
    assert all(_fields(r) == _fields(_by_init({"p": 1}, {"o": 2}, "t")) for r in made[:100])
    assert all(r.value == b"v" and r.headers == [] and r.key is None for r in made[100:200])
    assert all((r.kafka_partition, r.key, r.value) == (1, b"k", None) for r in made[200:])
    assert all(gc.is_tracked(r) for r in made)


def test_records_freed_by_the_extension_release_everything_they_held() -> None:
    value = object()
    base = sys.getrefcount(value)

    class Stamped(SourceRecord):
        __slots__ = ("stamp",)

    class WithDict(SourceRecord):
        pass

    stamped = Stamped({}, {}, "t", value=value)
    stamped.stamp = value
    with_dict = WithDict({}, {}, "t", value=value)
    with_dict.extra = value  # type: ignore[attr-defined]
    cycle: list[Any] = []
    cycle.append(SourceRecord({}, {}, "t", value=cycle, headers=[value]))
    del stamped, with_dict, cycle
    gc.collect()
    assert sys.getrefcount(value) == base

    record: Any = None
    for i in range(100_000):  # past any C stack without the trashcan's unwinding
        record = SourceRecord({}, {"n": i}, "t", value=record)
    del record
