"""The optional C extension (connectrt._speedups) against its pure-Python equivalents.

The extension builds a batch's ``SinkRecord`` s from its columns (the costly columns left to load
when a record first reads one), single records (``make``), record copies, and the timestamp
columns of consumed messages; each has a Python form, used when the extension is absent or
``CONNECTRT_PURE_PYTHON=1``. Here: both give equal records of the same class (equality,
pickling, copies, ``dataclasses``, transforms' ``new_record``), lazy fields load once per batch
and column and behave as plain slots, the same timestamp columns on real confluent-kafka
messages and on the in-memory fake's, and the C side refuses what would not be a plain slotted
class or well-formed columns. One test runs the record batch, conversion and transform batch
tests again in a process where the extension is off, so that both implementations pass them.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import operator
import os
import pickle
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from connectrt.api import (
    ConnectRecord,
    Header,
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
    TimestampType,
)
from connectrt.api import record_batch as rb
from connectrt.data import Schema
from connectrt.runtime.sink import message_batch as mb
from connectrt.runtime.sink.message_records import TIMESTAMP_TYPES
from connectrt.speedups import SPEEDUPS
from connectrt.testing.fake_kafka import FakeKafka, FakeMessage

needs_c = pytest.mark.skipif(SPEEDUPS is None, reason="connectrt._speedups not in use")
C: Any = SPEEDUPS
_SLOTS = tuple(attribute for _, attribute in rb._FIELDS)
SINK_SLOTS = _SLOTS

_row = st.tuples(
    st.sampled_from(["orders", "payments"]),  # topic
    st.integers(0, 3),  # partition
    st.one_of(st.none(), st.just(Schema.OPTIONAL_BYTES_SCHEMA)),
    st.one_of(st.none(), st.binary(max_size=4)),  # key
    st.one_of(st.none(), st.just(Schema.OPTIONAL_STRING_SCHEMA)),
    st.one_of(st.none(), st.text(max_size=6), st.integers()),  # value
    st.integers(0, 2**40),  # offset
    st.one_of(st.none(), st.integers(0, 2**41)),  # timestamp
    st.sampled_from(list(TimestampType)),
    st.one_of(st.none(), st.just([Header("h", "x", Schema.STRING_SCHEMA)])),
    st.sampled_from(["orders", "other"]),  # original topic
    st.integers(0, 3),
    st.integers(0, 2**40),
)


def _columns(rows: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(row[i] for row in rows) for i in range(len(_SLOTS)))


@needs_c
@settings(max_examples=60, deadline=None)
@given(st.lists(_row, max_size=12))
def test_c_records_equal_the_python_loops(rows: list[tuple[Any, ...]]) -> None:
    columns = _columns(rows)
    made = rb._make_records(columns)
    assert rb._make_records is not rb._make_records_py
    assert made == rb._make_records_py(columns)
    assert [type(r) for r in made] == [SinkRecord] * len(rows)
    for record, row in zip(made, rows, strict=True):
        assert tuple(getattr(record, name) for name in _SLOTS) == row
        assert isinstance(record, ConnectRecord)


@needs_c
def test_c_records_are_ordinary_sink_records() -> None:
    header = Header("h", "x")  # no schema: a Schema does not pickle
    (record,) = rb._make_records(
        _columns([("t", 1, None, b"k", None, "v", 7, 5, TimestampType.CREATE_TIME, [header],
                   "t", 1, 7)])
    )  # fmt: skip
    assert record == SinkRecord("t", 1, None, b"k", None, "v", 7, 5, TimestampType.CREATE_TIME,
                                [header])  # fmt: skip
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.copy(record) == record
    assert dataclasses.replace(record, value="w").value == "w"
    assert dataclasses.asdict(record)["kafka_offset"] == 7
    changed = record.new_record(topic="u", value="w")
    assert (changed.topic, changed.value, changed.original_topic) == ("u", "w", "t")
    assert changed.headers == [header] and changed.headers is not record.headers
    record.value = "set by a transform"
    assert record.value == "set by a transform"
    with pytest.raises(AttributeError):
        record.not_a_field = 1  # type: ignore[attr-defined]


@needs_c
def test_slot_filler_refuses_what_it_cannot_fill() -> None:
    filler = C.SlotFiller

    class Plain:
        pass

    class Slotted:
        __slots__ = ("a",)

        def __new__(cls) -> Slotted:
            return super().__new__(cls)

    with pytest.raises(TypeError, match="not a writable object slot"):
        filler(SinkRecord, ("topic", "header_list"))  # a method, not a slot
    with pytest.raises(AttributeError):
        filler(SinkRecord, ("no_such_slot",))
    with pytest.raises(AttributeError):
        filler(SourceRecord, ("kafka_offset",))  # SinkRecord's slot, not SourceRecord's
    with pytest.raises(TypeError, match="not a plain slotted Python class"):
        filler(Slotted, ("a",))  # its own __new__ would be skipped
    with pytest.raises(TypeError, match="not a plain slotted Python class"):
        filler(int, ("real",))
    with pytest.raises(TypeError, match="not a writable object slot"):
        filler(Plain, ("__dict__",))
    with pytest.raises(ValueError):
        filler(SinkRecord, ())

    fill = filler(SinkRecord, ("topic", "value"))
    first, second = fill((("a", "b"), (1, 2)))
    assert (first.topic, first.value, second.topic, second.value) == ("a", 1, "b", 2)
    with pytest.raises(AttributeError):
        first.key  # noqa: B018  # a slot the filler does not fill stays unset
    with pytest.raises(ValueError, match="column 1 has 1 items"):
        fill((("a", "b"), (1,)))
    with pytest.raises(ValueError, match="a tuple of 2 columns"):
        fill(((), (), ()))
    with pytest.raises(TypeError, match="column 0 is not a tuple"):
        fill((["a"], (1,)))
    assert fill(((), ())) == []


def _kafka_messages(kinds: list[int]) -> list[Any]:
    return [
        Message(
            topic="t",
            partition=0,
            offset=i,
            value=b"v",
            timestamp=(kind, 1_700_000_000_000 + i),
        )
        for i, kind in enumerate(kinds)
    ]


@needs_c
@pytest.mark.parametrize("kinds", [[1, 1, 1], [2, 2], [1, 0, 2], [0, 0]])
def test_c_timestamp_columns_equal_the_python_ones(kinds: list[int]) -> None:
    msgs = _kafka_messages(kinds)
    got = C.timestamp_columns(msgs, Message.timestamp, TIMESTAMP_TYPES)
    assert got == mb._timestamp_columns_py(msgs, Message.timestamp, TIMESTAMP_TYPES)
    expected_stamps = tuple(
        None if kind == 0 else 1_700_000_000_000 + i for i, kind in enumerate(kinds)
    )
    assert got == (expected_stamps, tuple(TIMESTAMP_TYPES[k] for k in kinds))


@needs_c
def test_c_timestamp_columns_of_fake_messages_and_bad_input() -> None:
    kafka = FakeKafka()
    kafka.create_topic("a", 1)
    msgs = [kafka.append("a", b"v", None, partition=0) for _ in range(3)]
    stamps = mb.message_accessors(msgs)[6]
    got = C.timestamp_columns(msgs, stamps, TIMESTAMP_TYPES)
    assert got == mb._timestamp_columns_py(msgs, stamps, TIMESTAMP_TYPES)
    assert got[1] == (TimestampType.CREATE_TIME,) * 3

    timestamp_columns = C.timestamp_columns
    with pytest.raises(IndexError, match="timestamp kind 2 has no type"):
        timestamp_columns(_kafka_messages([1, 2]), Message.timestamp, TIMESTAMP_TYPES[:2])
    with pytest.raises(TypeError, match="not a \\(kind, ms\\) pair"):
        timestamp_columns(msgs, lambda m: 5, TIMESTAMP_TYPES)
    with pytest.raises(ZeroDivisionError):
        timestamp_columns(msgs, lambda m: 1 / 0, TIMESTAMP_TYPES)
    with pytest.raises(TypeError):
        timestamp_columns(tuple(msgs), stamps, TIMESTAMP_TYPES)
    assert timestamp_columns([], stamps, TIMESTAMP_TYPES) == ((), ())


def test_the_record_tests_pass_in_pure_python(tmp_path: Path) -> None:
    """The record batch, conversion, source sender and converter column tests again, in a
    process with the extension off."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "CONNECTRT_PURE_PYTHON": "1"}
    probe = subprocess.run(
        [sys.executable, "-c", "from connectrt.api import record_batch as rb;"
         "print(rb._make_records is rb._make_records_py)"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "True"
    run = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            f"--basetemp={tmp_path / 'pure'}",
            "tests/unit/test_sink_record_batch.py", "tests/unit/test_sink_conversion.py",
            "tests/unit/test_transform_batch.py", "tests/unit/test_source_record_batch.py",
            "tests/unit/test_converter_columns.py",
        ],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def _counted_batch(n: int, calls: dict[str, int]) -> SinkRecordBatch:
    """A batch whose offsets, timestamps, keys and headers are thunks that count their calls."""

    def thunk(name: str, column: list[Any]) -> Any:
        def make() -> list[Any]:
            calls[name] = calls.get(name, 0) + 1
            return column

        return make

    return SinkRecordBatch.from_columns(
        n,
        topics=("t",) * n,
        partitions=tuple(i % 2 for i in range(n)),
        offsets=thunk("offsets", [100 + i for i in range(n)]),
        values=tuple(f"v{i}" for i in range(n)),
        keys=thunk("keys", [b"k%d" % i for i in range(n)]),
        timestamps=thunk("timestamps", [1_000 + i for i in range(n)]),
        timestamp_types=thunk("types", [TimestampType.CREATE_TIME] * n),
        headers=thunk("headers", [None] * n),
    )


def _expected(n: int) -> list[SinkRecord]:
    return [
        SinkRecord("t", i % 2, None, b"k%d" % i, None, f"v{i}", 100 + i, 1_000 + i,
                   TimestampType.CREATE_TIME)
        for i in range(n)
    ]  # fmt: skip


@needs_c
def test_lazy_records_make_a_column_only_when_one_of_them_reads_it() -> None:
    calls: dict[str, int] = {}
    records = list(_counted_batch(300, calls))
    assert [r.value for r in records] == [f"v{i}" for i in range(300)]
    assert [r.topic for r in records] == ["t"] * 300
    assert calls == {}  # nothing read but given columns: no thunk called
    assert [r.kafka_offset for r in records] == [100 + i for i in range(300)]
    assert [r.original_kafka_offset for r in records[::7]] == [100 + i for i in range(0, 300, 7)]
    assert calls == {"offsets": 1}  # once for the batch, shared by the original offsets
    assert records == _expected(300)  # equality reads every field
    assert calls == {"offsets": 1, "keys": 1, "timestamps": 1, "types": 1, "headers": 1}
    with pytest.raises(AttributeError):
        records[0]._lazy_columns  # noqa: B018  # every field read: the batch's columns let go


@needs_c
def test_a_lazy_record_behaves_as_a_record() -> None:
    calls: dict[str, int] = {}
    records = list(_counted_batch(4, calls))
    expected = _expected(4)
    first, second, third, fourth = records
    first.kafka_offset = 7  # set before it was read: the column does not overwrite it
    assert first.kafka_offset == 7 and "offsets" not in calls
    assert second.kafka_offset == 101
    assert pickle.loads(pickle.dumps(third)) == expected[2]
    assert copy.copy(fourth) == expected[3]
    assert dataclasses.asdict(fourth) == dataclasses.asdict(expected[3])
    changed = second.new_record(value="w")
    assert changed == dataclasses.replace(expected[1], value="w")
    assert repr(third) == repr(expected[2])

    del second.key  # the other fields are loaded first, and none comes back
    with pytest.raises(AttributeError, match="'SinkRecord' object has no attribute 'key'"):
        second.key  # noqa: B018
    assert second.timestamp == 1_001
    second.key = b"again"
    assert second.key == b"again"

    descriptor = vars(SinkRecord)["kafka_offset"]
    assert descriptor.__get__(None, SinkRecord) is descriptor
    with pytest.raises(TypeError, match="doesn't apply to a SourceRecord object"):
        descriptor.__get__(SourceRecord(None, None, "t"), SourceRecord)
    with pytest.raises(AttributeError):
        rb._new(SinkRecord).kafka_offset  # noqa: B018  # unset and no batch: as a plain slot


@needs_c
def test_a_column_of_the_wrong_length_fails_the_read_that_needs_it() -> None:
    batch = SinkRecordBatch.from_columns(
        2, topics=("t", "t"), partitions=(0, 0), offsets=lambda: [1], values=("a", "b")
    )
    first, _ = list(batch)
    assert first.value == "a"
    with pytest.raises(ValueError, match="column offsets has 1 items for a batch of 2"):
        first.kafka_offset  # noqa: B018


@needs_c
def test_make_is_the_constructor_given_every_field() -> None:
    from connectrt.api.records import SINK_FILLER

    values = ("t", 1, None, b"k", None, "v", 7, 5, TimestampType.CREATE_TIME, None, "o", 2, 3)
    made = SINK_FILLER.make(*values)
    assert type(made) is SinkRecord
    assert made == SinkRecord(*values)
    assert (made.original_topic, made.original_kafka_partition, made.original_kafka_offset) == (
        "o",
        2,
        3,
    )
    with pytest.raises(TypeError, match="make\\(\\) takes 13 values \\(12 given\\)"):
        SINK_FILLER.make(*values[:-1])


@needs_c
def test_only_the_costly_fields_are_lazy_and_copies_are_whole() -> None:
    from connectrt.api.records import LAZY_SINK_SLOTS, SINK_FILLER

    lazy = {name for name in SINK_SLOTS if type(vars(SinkRecord).get(name)) is C.LazySlot}
    assert lazy == set(LAZY_SINK_SLOTS)
    assert type(SinkRecord.value).__name__ == "member_descriptor"  # CPython's: fastest
    values = tuple(None if name in LAZY_SINK_SLOTS else (name,) for name in SINK_SLOTS)
    with pytest.raises(ValueError, match="'topic' has no lazy descriptor"):
        SINK_FILLER.fill_lazy(1, (None, *values[1:]), lambda name: (name,))
    with pytest.raises(ValueError, match="'nope' is not a slot of the filler"):
        SINK_FILLER.descriptors(("nope",))

    header = Header("h", "x")
    loaded: list[str] = []

    def load(name: str) -> tuple[Any, ...]:
        loaded.append(name)
        return ([header],) if name == "headers" else (name,)

    (record,) = SINK_FILLER.fill_lazy(1, values, load)
    copied = record._copy()  # loads the lazy fields, copies the headers list
    assert sorted(loaded) == sorted(LAZY_SINK_SLOTS)
    assert type(copied) is SinkRecord and copied == record
    assert copied.headers == [header] and copied.headers is not record.headers
    assert (copied.key, copied.value, copied.original_kafka_offset) == (
        "key",
        "value",
        "original_kafka_offset",
    )

    class Mine(SinkRecord):
        __slots__ = ()

    mine = Mine("t", 0, None, None, None, "v", 1)
    assert type(mine._copy()) is Mine and mine._copy() == mine  # the Python copy


@needs_c
def test_the_constructor_stores_through_c_as_python_does() -> None:
    from connectrt.api.records import SINK_FILLER

    record = SinkRecord("t", 1, None, b"k", None, "v", 7)
    assert (record.original_topic, record.original_kafka_partition) == ("t", 1)
    assert (record.original_kafka_offset, record.timestamp, record.headers) == (7, None, None)
    assert record.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    record.__init__("u", 2, None, None, None, "w", 8, original_topic="o")  # type: ignore[misc]
    assert (record.topic, record.value, record.original_topic, record.original_kafka_offset) == (
        "u",
        "w",
        "o",
        8,
    )
    with pytest.raises(TypeError, match="store\\(\\) into a SourceRecord"):
        SINK_FILLER.store(SourceRecord(None, None, "t"), *range(13))
    with pytest.raises(TypeError, match="takes an instance and 13 values \\(1 given\\)"):
        SINK_FILLER.store(record, 1)


@needs_c
def test_records_freed_by_the_extension_release_everything_they_held() -> None:
    """SinkRecord's deallocation is the extension's (own_dealloc): every slot's reference is
    dropped, lazy and loaded ones alike, for SinkRecord itself and its subclasses."""
    value, key = object(), object()
    base_value, base_key = sys.getrefcount(value), sys.getrefcount(key)
    n = 50
    batch = SinkRecordBatch.from_columns(
        n,
        topics=("t",) * n,
        partitions=(0,) * n,
        offsets=lambda: tuple(range(n)),
        values=(value,) * n,
        keys=lambda: (key,) * n,
    )
    records = list(batch)
    assert records[0].key is key  # the keys column loaded for the batch; one record read it
    del batch, records
    assert (sys.getrefcount(value), sys.getrefcount(key)) == (base_value, base_key)

    class WithSlots(SinkRecord):
        __slots__ = ("extra",)
        extra: Any

    class WithDict(SinkRecord):
        pass

    gone: list[str] = []
    with_slots = WithSlots("t", 0, None, key, None, value, 1)
    with_slots.extra = value
    del with_slots
    assert (sys.getrefcount(value), sys.getrefcount(key)) == (base_value, base_key)
    with_dict = WithDict("t", 0, None, key, None, value, 1)
    with_dict.extra = value  # type: ignore[attr-defined]
    probe = weakref.ref(with_dict, lambda _ref: gone.append("weakref"))
    del with_dict
    assert (sys.getrefcount(value), sys.getrefcount(key)) == (base_value, base_key)
    assert probe() is None
    assert gone == ["weakref"]


@needs_c
def test_records_nested_deeply_and_a_later_finalizer_are_freed_as_cpython_frees_them() -> None:
    record: Any = None
    for i in range(100_000):  # past any C stack without the trashcan's unwinding
        record = SinkRecord("t", 0, None, None, None, record, i)
    del record

    seen: list[int] = []
    kept: list[SinkRecord] = []

    def finalize(self: SinkRecord) -> None:
        seen.append(self.kafka_offset)
        if self.kafka_offset == 2:
            kept.append(self)  # resurrected: not freed

    SinkRecord.__del__ = finalize  # type: ignore[attr-defined]
    try:
        SinkRecord("t", 0, None, None, None, b"", 1)
        SinkRecord("t", 0, None, None, None, b"", 2)
    finally:
        del SinkRecord.__del__  # type: ignore[attr-defined]
    assert seen == [1, 2]
    assert kept[0].kafka_offset == 2 and kept[0].value == b""
    kept.clear()  # freed now, without the finalizer
    assert seen == [1, 2]


@needs_c
def test_own_dealloc_refuses_a_second_class_and_a_partial_slot_list() -> None:
    class Other:
        __slots__ = ("a",)

    with pytest.raises(TypeError, match="already installed on 2 classes"):  # Sink/SourceRecord
        C.SlotFiller(Other, ("a",)).own_dealloc(("a",))
    rb.SINK_FILLER.own_dealloc(tuple(  # the same class again: nothing to do
        name for cls in SinkRecord.__mro__ for name in vars(cls).get("__slots__", ())
    ))  # fmt: skip


@needs_c
def test_method_column_is_map_over_the_messages() -> None:
    """method_column and method_any call librdkafka's Message accessors' C functions directly;
    they answer what tuple(map(...)) and any(map(...)) answer, for any callable, and survive a
    callable that changes the list."""
    msgs = _kafka_messages([1, 0, 2, 1])
    for accessor in (Message.value, Message.partition, Message.offset, Message.error,
                     Message.key, Message.timestamp, Message.headers):  # fmt: skip
        assert C.method_column(accessor, msgs) == tuple(map(accessor, msgs))
        assert C.method_column(accessor, tuple(msgs)) == tuple(map(accessor, msgs))
    fakes = [FakeMessage("t", 0, i, None, b"v%d" % i) for i in range(3)]  # another type
    assert C.method_column(operator.methodcaller("value"), fakes) == (b"v0", b"v1", b"v2")
    with pytest.raises(TypeError):
        C.method_column(Message.value, fakes)  # not a Message: called as Python calls it
    assert C.method_column(len, []) == ()

    def shrink(item: Any) -> Any:
        items.clear()
        return item

    items = [1, 2, 3]
    with pytest.raises(RuntimeError, match="changed size"):
        C.method_column(shrink, items)
    with pytest.raises(TypeError):
        C.method_column(len, iter(msgs))

    # method_any: any(map(...)) the same way, without the tuple (the batch's error check)
    assert C.method_any(Message.error, msgs) is any(map(Message.error, msgs)) is False
    assert C.method_any(Message.value, msgs) is True
    assert C.method_any(len, [b"", b""]) is False and C.method_any(len, (b"", b"x")) is True
    assert C.method_any(len, []) is False
    items = [1, 2, 3]
    assert C.method_any(shrink, items) is True  # stops at the first true answer
    with pytest.raises(TypeError):
        C.method_any(Message.value, fakes)


@needs_c
def test_records_made_of_freed_ones_start_empty() -> None:
    """The extension keeps freed SinkRecords to make the next batch's of; such a record has
    only what its own batch gave it, and counts its references anew."""
    values = [object() for _ in range(64)]
    base = [sys.getrefcount(v) for v in values]
    full = rb._make_records(_columns([("t", 0, None, b"k", None, v, 1, 2,
                                        TimestampType.CREATE_TIME, None, "t", 0, 1)
                                       for v in values]))  # fmt: skip
    del full  # freed: kept by the extension, every slot cleared
    assert [sys.getrefcount(v) for v in values] == base
    fill = C.SlotFiller(SinkRecord, ("topic", "value"))
    made = fill((("u",) * 64, tuple(range(64))))
    assert {sys.getrefcount(made[i]) for i in range(64)} == {2}  # the list's, the argument's
    for i, record in enumerate(made):
        assert (record.topic, record.value) == ("u", i)
        with pytest.raises(AttributeError):
            record.key  # noqa: B018  # nothing left of the record it was made of
    assert all(gc.is_tracked(record) for record in made)


_FRAMED_CASES: list[tuple[Any, bytes, bytes]] = [
    ([b'{"s":1,"p":"a"}', b'{"s":1,"p":""}'], b'{"s":1,"p":', b"}"),
    ((b"<ab>", b"<>"), b"<", b">"),  # a tuple; an empty middle
    ([], b"<", b">"),
    ([b"<ab>", None], b"<", b">"),  # a null message
    ([b"<ab>", bytearray(b"<ab>")], b"<", b">"),  # not bytes itself
    ([b"<ab>", b"[ab>"], b"<", b">"),  # another prefix
    ([b"<ab>", b"<ab]"], b"<", b">"),  # another suffix
    ([b"<>"], b"<>", b">"),  # prefix and suffix would overlap
    ([b"ab"], b"abc", b""),  # shorter than the prefix
    ([b"abcd", b"ab"], b"ab", b""),  # no suffix
]


@needs_c
@pytest.mark.parametrize(("items", "prefix", "suffix"), _FRAMED_CASES)
def test_framed_slices_as_the_python_loop(items: Any, prefix: bytes, suffix: bytes) -> None:
    from connectrt.converters.json.converter import _framed_py

    expected = _framed_py(items, prefix, suffix)
    got = SPEEDUPS.framed_slices(items, prefix, suffix)
    assert got == expected
    if got:
        assert all(type(part) is bytes for part in got)
        assert [prefix + part + suffix for part in got] == list(items)


@needs_c
def test_framed_slices_refuses_malformed_arguments() -> None:
    with pytest.raises(TypeError):
        SPEEDUPS.framed_slices({b"<a>"}, b"<", b">")
    with pytest.raises(TypeError):
        SPEEDUPS.framed_slices([b"<a>"], "<", b">")
    with pytest.raises(TypeError):
        SPEEDUPS.framed_slices([b"<a>"], b"<")
