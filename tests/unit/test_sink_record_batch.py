"""SinkRecordBatch against the list semantics a sink task relies on.

Every batch is compared with a plain list of the same records, built the way the runtime built
them before batches existed (a ``SinkRecord`` per message). Column-built batches (records made
lazily) and record-built ones must both behave as that list: ``len``, iteration, indices
(negative ones and out of range), slices, ``in``, ``reversed``, ``index``, ``count``, equality,
concatenation, the mutating methods, and the same record object for the same index however it
is reached, with a task's changes to a record kept.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectrt.api import (
    Header,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    TimestampType,
    TopicPartition,
)
from connectrt.data import Schema

_TYPES = [TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]

# One consumed message: (topic, partition, offset, key, value, timestamp, timestamp type index,
# headers). Offsets are made increasing per partition below, as a consumer returns them.
_message = st.tuples(
    st.sampled_from(["orders", "payments"]),
    st.integers(0, 3),
    st.integers(0, 3),
    st.one_of(st.none(), st.binary(max_size=6)),
    st.one_of(st.none(), st.text(max_size=8), st.integers()),
    st.integers(0, 2**41),
    st.integers(0, 1),
    st.one_of(st.none(), st.just([Header("h", "x", Schema.STRING_SCHEMA)])),
)
messages = st.lists(_message, max_size=25)


def _columns(msgs: list[tuple[Any, ...]]) -> dict[str, list[Any]]:
    offsets: dict[tuple[str, int], int] = {}
    cols: dict[str, list[Any]] = {
        k: [] for k in ("topics", "partitions", "offsets", "keys", "values", "timestamps", "types")
    }
    cols["headers"] = []
    for topic, partition, gap, key, value, ts, kind, headers in msgs:
        offset = offsets.get((topic, partition), 100) + gap
        offsets[(topic, partition)] = offset + 1
        cols["topics"].append(topic)
        cols["partitions"].append(partition)
        cols["offsets"].append(offset)
        cols["keys"].append(key)
        cols["values"].append(value)
        cols["timestamps"].append(ts)
        cols["types"].append(_TYPES[kind])
        cols["headers"].append(None if headers is None else list(headers))
    return cols


def _reference(cols: dict[str, list[Any]]) -> list[SinkRecord]:
    """The records as the runtime built them one by one."""
    return [
        SinkRecord(
            t, p, Schema.OPTIONAL_BYTES_SCHEMA, k, Schema.OPTIONAL_STRING_SCHEMA, v, o, ts, kind, h
        )
        for t, p, k, v, o, ts, kind, h in zip(
            cols["topics"],
            cols["partitions"],
            cols["keys"],
            cols["values"],
            cols["offsets"],
            cols["timestamps"],
            cols["types"],
            cols["headers"],
            strict=True,
        )
    ]


def _from_columns(cols: dict[str, list[Any]], lazy: bool = False) -> SinkRecordBatch:
    n = len(cols["values"])

    def given(name: str) -> Any:
        column = cols[name]
        return (lambda: list(column)) if lazy else list(column)

    return SinkRecordBatch.from_columns(
        n,
        topics=given("topics"),
        partitions=given("partitions"),
        offsets=given("offsets"),
        key_schemas=(Schema.OPTIONAL_BYTES_SCHEMA,) * n,
        keys=given("keys"),
        value_schemas=(Schema.OPTIONAL_STRING_SCHEMA,) * n,
        values=given("values"),
        timestamps=given("timestamps"),
        timestamp_types=given("types"),
        headers=given("headers"),
        raw_keys=given("keys"),
    )


def _batches(cols: dict[str, list[Any]]) -> list[tuple[str, Callable[[], SinkRecordBatch]]]:
    return [
        ("columns", lambda: _from_columns(cols)),
        ("lazy columns", lambda: _from_columns(cols, lazy=True)),
        ("records", lambda: SinkRecordBatch(_reference(cols))),
    ]


_FIELDS = {
    "topics": "topic",
    "partitions": "kafka_partition",
    "offsets": "kafka_offset",
    "keys": "key",
    "values": "value",
    "key_schemas": "key_schema",
    "value_schemas": "value_schema",
    "timestamps": "timestamp",
    "timestamp_types": "timestamp_type",
    "headers": "headers",
    "original_topics": "original_topic",
    "original_partitions": "original_kafka_partition",
    "original_offsets": "original_kafka_offset",
}


def _check_columns(batch: SinkRecordBatch, expected: list[SinkRecord]) -> None:
    for column, attribute in _FIELDS.items():
        assert getattr(batch, column) == tuple(getattr(r, attribute) for r in expected), column


# -- reading: the batch is the list -----------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(messages)
def test_reading_a_batch_is_reading_the_list(msgs: list[tuple[Any, ...]]) -> None:
    cols = _columns(msgs)
    ref = _reference(cols)
    n = len(ref)
    for how, make in _batches(cols):
        batch = make()
        assert len(batch) == n, how
        assert bool(batch) is bool(ref)
        _check_columns(batch, ref)  # before any record exists
        for i in range(-n, n):
            assert batch[i] == ref[i], (how, i)
            assert batch[i] is batch[i]
        for i in (n, -n - 1, 10**6):
            with pytest.raises(IndexError):
                batch[i]
        assert batch == ref and ref == batch
        assert not batch != ref  # noqa: SIM202 (__ne__ is under test)
        assert list(batch) == ref
        assert all(a is b for a, b in zip(batch, [batch[i] for i in range(n)], strict=True))
        assert list(reversed(batch)) == ref[::-1]
        _check_columns(batch, ref)  # once every record exists


@settings(max_examples=150, deadline=None)
@given(messages, st.integers(-30, 30), st.integers(-30, 30), st.sampled_from([None, 1, 2, -1, -3]))
def test_slices_are_the_lists_slices(
    msgs: list[tuple[Any, ...]], start: int, stop: int, step: int | None
) -> None:
    cols = _columns(msgs)
    ref = _reference(cols)
    for how, make in _batches(cols):
        batch = make()
        part = batch[start:stop:step]
        assert isinstance(part, SinkRecordBatch)
        assert part == ref[start:stop:step], how
        _check_columns(part, ref[start:stop:step])
        # the slice holds the batch's own record objects
        indices = range(*slice(start, stop, step).indices(len(ref)))
        assert all(r is batch[i] for r, i in zip(part, indices, strict=True))


@settings(max_examples=100, deadline=None)
@given(messages.filter(bool), st.data())
def test_in_index_and_count_as_on_the_list(msgs: list[tuple[Any, ...]], data: Any) -> None:
    cols = _columns(msgs)
    ref = _reference(cols)
    i = data.draw(st.integers(0, len(ref) - 1))
    stranger = SinkRecord("elsewhere", 9, None, None, None, "x", 1)
    for how, make in _batches(cols):
        batch = make()
        assert ref[i] in batch, how
        assert stranger not in batch
        assert batch.index(ref[i]) == ref.index(ref[i])
        assert batch.index(ref[i], i) == ref.index(ref[i], i)
        with pytest.raises(ValueError):
            batch.index(stranger)
        assert batch.count(ref[i]) == ref.count(ref[i])
        assert batch.count(stranger) == 0


def test_equality_follows_the_list() -> None:
    cols = _columns([("t", 0, 0, None, "a", 1, 0, None), ("t", 0, 0, None, "b", 2, 0, None)])
    ref = _reference(cols)
    batch = _from_columns(cols)
    assert batch == ref
    assert batch == SinkRecordBatch(_reference(cols))
    assert batch != ref[:1]
    assert batch != list(reversed(ref))
    assert batch != tuple(ref)  # as [1] != (1,)
    assert batch != "ab"
    assert SinkRecordBatch() == []
    with pytest.raises(TypeError):
        hash(batch)


def test_concatenation_and_repetition_give_lists() -> None:
    cols = _columns([("t", 0, 0, None, "a", 1, 0, None), ("t", 1, 0, None, "b", 2, 0, None)])
    ref = _reference(cols)
    batch = _from_columns(cols)
    extra = [SinkRecord("t", 2, None, None, None, "c", 7)]
    assert batch + extra == ref + extra and type(batch + extra) is list
    assert extra + batch == extra + ref and type(extra + batch) is list
    assert batch + batch == ref + ref
    assert batch * 2 == ref * 2 and 2 * batch == ref * 2
    with pytest.raises(TypeError):
        batch + (1,)  # type: ignore[operator]  # noqa: RUF005
    # what a task does with a list: everything works off iteration
    kept: list[SinkRecord] = []
    kept.extend(batch)
    assert kept == ref and kept[0] is batch[0]
    by_offset = sorted(ref, key=lambda r: -r.kafka_offset)
    assert sorted(batch, key=lambda r: -r.kafka_offset) == by_offset
    assert [r.value for r in batch] == ["a", "b"]
    assert dict(enumerate(batch))[1] is batch[1]


# -- records are made once and kept -------------------------------------------------------------
def test_a_changed_record_stays_changed_and_the_columns_see_it() -> None:
    cols = _columns([("t", 0, 0, b"k", f"v{i}", i, 0, None) for i in range(5)])
    batch = _from_columns(cols)
    record = batch[2]
    record.value = "changed"
    record.headers = [Header("seen", True)]
    assert batch[2] is record and batch[-3] is record
    assert batch[2].value == "changed"
    assert batch.values == ("v0", "v1", "changed", "v3", "v4")
    assert batch.headers[2] == [Header("seen", True)]
    assert list(batch)[2] is record  # building the others kept this one
    assert batch.values == ("v0", "v1", "changed", "v3", "v4")
    assert batch.raw_keys == (b"k",) * 5  # as consumed, whatever the task changed


def test_records_are_built_only_when_read() -> None:
    calls: list[str] = []

    def column(name: str, values: list[Any]) -> Callable[[], list[Any]]:
        def compute() -> list[Any]:
            calls.append(name)
            return values

        return compute

    batch = SinkRecordBatch.from_columns(
        3,
        topics=column("topics", ["t"] * 3),
        partitions=column("partitions", [0, 0, 1]),
        offsets=column("offsets", [5, 6, 9]),
        values=column("values", ["a", "b", "c"]),
        raw_values=column("raw", [b"a", b"b", b"c"]),
    )
    assert len(batch) == 3 and calls == []
    assert batch.values == ("a", "b", "c") and calls == ["values"]
    assert batch.values == ("a", "b", "c") and calls == ["values"]  # computed once
    assert batch.raw_values == (b"a", b"b", b"c") and batch.raw_values == (b"a", b"b", b"c")
    assert calls.count("raw") == 1
    assert batch[1].kafka_offset == 6
    assert sorted(calls) == ["offsets", "partitions", "raw", "topics", "values"]
    assert batch[1].timestamp is None
    assert batch[1].timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    assert batch[1].key is None and batch[1].key_schema is None and batch[1].headers is None
    assert batch[1].original_kafka_offset == 6


def test_a_column_of_the_wrong_length_is_refused() -> None:
    batch = SinkRecordBatch.from_columns(
        2, topics=["t", "t"], partitions=[0, 0], offsets=[1, 2], values=["only one"]
    )
    with pytest.raises(ValueError, match="column values has 1 items for a batch of 2"):
        _ = batch.values
    with pytest.raises(ValueError):
        batch[0]


class KeepingTask(SinkTask):
    """Keeps every record it is given, changes it, and reads all of them again each put."""

    def start(self, config: Any) -> None:
        self.kept: list[SinkRecord] = []

    def put(self, records: Any) -> None:
        for record in self.kept:
            assert record.value.endswith("+seen"), "a kept record lost its change"
        for record in records:
            record.value = f"{record.value}+seen"
            self.kept.append(record)
        for i in range(len(records)):
            assert records[i].value.endswith("+seen")

    def stop(self) -> None:
        pass


def test_a_task_keeping_and_changing_records_across_puts() -> None:
    task = KeepingTask()
    task.start({})
    for start in range(0, 30, 10):
        cols = _columns([("t", 0, 0, None, f"v{start + i}", 1, 0, None) for i in range(10)])
        task.put(_from_columns(cols))
    assert [r.value for r in task.kept] == [f"v{i}+seen" for i in range(30)]


# -- mutations: the batch becomes the list ----------------------------------------------------
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 99)),
        st.tuples(st.just("insert"), st.integers(-30, 30)),
        st.tuples(st.just("pop"), st.integers(-30, 30)),
        st.tuples(st.just("del"), st.integers(-30, 30)),
        st.tuples(st.just("del slice"), st.integers(-30, 30)),
        st.tuples(st.just("set"), st.integers(-30, 30)),
        st.tuples(st.just("set slice"), st.integers(-30, 30)),
        st.tuples(st.just("extend"), st.integers(0, 3)),
        st.tuples(st.just("iadd"), st.integers(0, 3)),
        st.tuples(st.just("remove"), st.integers(-30, 30)),
        st.tuples(st.just("sort"), st.booleans()),
        st.tuples(st.just("reverse"), st.just(0)),
        st.tuples(st.just("clear"), st.just(0)),
        st.tuples(st.just("change"), st.integers(-30, 30)),
        st.tuples(st.just("read"), st.integers(-30, 30)),
    ),
    max_size=12,
)


def _apply(target: Any, op: str, arg: Any, counter: list[int]) -> Any:
    def fresh() -> SinkRecord:
        counter[0] += 1
        return SinkRecord("new", 0, None, None, None, f"n{counter[0]}", 1000 + counter[0])

    if op == "append":
        return target.append(fresh())
    if op == "insert":
        return target.insert(arg, fresh())
    if op == "pop":
        return target.pop(arg)
    if op == "del":
        del target[arg]
        return None
    if op == "del slice":
        del target[arg:]
        return None
    if op == "set":
        target[arg] = fresh()
        return None
    if op == "set slice":
        target[:arg] = [fresh()]
        return None
    if op in ("extend", "iadd"):
        more = [fresh() for _ in range(arg)]
        if op == "extend":
            target.extend(more)
        else:
            target += more
        return None
    if op == "remove":
        return target.remove(target[arg])
    if op == "sort":
        return target.sort(key=lambda r: (r.kafka_offset, str(r.value)), reverse=arg)
    if op == "reverse":
        return target.reverse()
    if op == "clear":
        return target.clear()
    if op == "change":
        target[arg].value = f"changed {arg}"
        return None
    return target[arg]


@settings(max_examples=200, deadline=None)
@given(messages, _ops)
def test_mutations_act_as_on_the_list(msgs: list[tuple[Any, ...]], ops: list[Any]) -> None:
    cols = _columns(msgs)
    for how, make in _batches(cols):
        batch = make()
        ref = list(batch)  # the same record objects: changes through either show in both
        counters = ([0], [0])
        mutated = False
        for op, arg in ops:
            outcomes = []
            for target, counter in ((ref, counters[0]), (batch, counters[1])):
                try:
                    outcomes.append(("ok", _apply(target, op, arg, counter)))
                except (IndexError, ValueError) as exc:
                    outcomes.append(("error", type(exc)))
            assert outcomes[0] == outcomes[1], (how, op, arg)
            mutated |= outcomes[1][0] == "ok" and op not in ("read", "change")
            assert batch == ref, (how, op, arg)
            assert len(batch) == len(ref)
        _check_columns(batch, ref)
        if mutated:
            assert batch.raw_keys is None and batch.raw_values is None


def test_a_batch_copies_and_pickles_as_its_records() -> None:
    batch = SinkRecordBatch.from_columns(
        2, topics=["t", "t"], partitions=[0, 1], offsets=[4, 7], keys=[b"k", None], values=[1, 2]
    )  # no schemas: a Schema itself neither deep-copies nor pickles
    shallow = copy.copy(batch)
    assert shallow == batch and shallow[0] is batch[0]
    assert batch.copy() == batch and batch.copy()[1] is batch[1]
    deep = copy.deepcopy(batch)
    assert deep == batch and deep[0] is not batch[0]
    assert pickle.loads(pickle.dumps(batch)) == batch


# -- construction and offsets -----------------------------------------------------------------
def test_of_wraps_a_list_and_keeps_a_batch() -> None:
    records = _reference(_columns([("t", 1, 0, None, "a", 1, 0, None)]))
    wrapped = SinkRecordBatch.of(records)
    assert isinstance(wrapped, SinkRecordBatch) and wrapped == records
    assert wrapped[0] is records[0]
    assert wrapped.values == ("a",) and wrapped.raw_values is None
    assert SinkRecordBatch.of(wrapped) is wrapped
    assert not isinstance(wrapped, list)


@settings(max_examples=100, deadline=None)
@given(messages)
def test_next_offsets_are_after_each_partitions_last_record(msgs: list[tuple[Any, ...]]) -> None:
    cols = _columns(msgs)
    expected: dict[TopicPartition, int] = {}
    for t, p, o in zip(cols["topics"], cols["partitions"], cols["offsets"], strict=True):
        expected[TopicPartition(t, p)] = o + 1
    for how, make in _batches(cols):
        assert make().next_offsets() == expected, how


def test_next_offsets_follow_the_original_coordinates() -> None:
    routed = SinkRecord("renamed", 7, None, None, None, "v", 0, None, TimestampType.CREATE_TIME,
                        None, "orders", 2, 41)  # fmt: skip
    assert SinkRecordBatch([routed]).next_offsets() == {TopicPartition("orders", 2): 42}
    given = {TopicPartition("t", 0): 11}
    batch = SinkRecordBatch.from_columns(
        1, topics=["t"], partitions=[0], offsets=[10], values=["v"], next_offsets=given
    )
    assert batch.next_offsets() == given
    batch.append(SinkRecord("t", 0, None, None, None, "w", 20))
    assert batch.next_offsets() == {TopicPartition("t", 0): 21}
