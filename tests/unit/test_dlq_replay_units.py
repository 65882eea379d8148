"""The pieces of a dead letter queue replay that need no broker: the replay headers, source
record documents, request parsing and re-converting source records."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from connectrt.api.converter import Converter
from connectrt.api.records import Header, SourceRecord
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct
from connectrt.errors import DataError
from connectrt.runtime.dlq_replay.progress import ReplayRequest
from connectrt.runtime.dlq_replay.replays import replay_request
from connectrt.runtime.dlq_replay.source_replay import SourceRecordReplayer
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.tasks.dlq_documents import (
    UnreadableDocument,
    source_record_document,
    source_record_from_document,
)
from connectrt.runtime.tasks.dlq_headers import (
    context_headers,
    for_replay,
    original_topic_partition,
    replay_count,
)
from connectrt.runtime.tasks.runner import TaskConverters, TaskStage
from connectrt.transforms.chain import TransformationChain

ORDER = (
    SchemaBuilder.struct()
    .name("order")
    .field("id", Schema.INT32_SCHEMA)
    .field("amount", Decimal.schema(2))
    .field("day", Date.schema())
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .build()
)


def _context(stage: str = "VALUE_CONVERTER", partition: int = 3) -> list[tuple[str, bytes | None]]:
    return context_headers(
        topic="orders",
        partition=partition,
        offset=42,
        connector="sink",
        task=0,
        stage=stage,
        class_name="connectrt.converters.json.JsonConverter",
        error=ValueError("bad {json"),
    )


# -- headers ----------------------------------------------------------------------------------
def test_for_replay_keeps_the_error_context_as_history_and_counts():
    original = [("trace-id", b"abc"), *_context()]
    first, count = for_replay(original, "run1", "dlq/0/7")
    assert count == 1
    keys = [k for k, _ in first]
    assert keys[0] == "trace-id"
    assert not any(k.startswith("__connect.errors.") for k in keys)
    history = dict(first)
    assert history["connectrt.errors.1.stage"] == b"VALUE_CONVERTER"
    assert history["connectrt.errors.1.topic"] == b"orders"
    assert history["connectrt.errors.1.exception.message"] == b"bad {json"
    assert history["connectrt.replay.count"] == b"1"
    assert history["connectrt.replay.run"] == b"run1"
    assert history["connectrt.replay.origin"] == b"dlq/0/7"

    # The copy fails again: a task adds fresh context; the next replay numbers it 2.
    failed_again = first + _context("TRANSFORMATION", partition=1)
    second, count = for_replay(failed_again, "run2", "dlq/0/9")
    assert count == 2
    headers = dict(second)
    assert headers["connectrt.errors.1.stage"] == b"VALUE_CONVERTER"
    assert headers["connectrt.errors.2.stage"] == b"TRANSFORMATION"
    assert headers["connectrt.replay.count"] == b"2"
    assert [k for k, _ in second].count("connectrt.replay.run") == 1
    assert headers["connectrt.replay.run"] == b"run2"


def test_replay_count_and_where_a_record_came_from():
    assert replay_count(None) == 0
    assert replay_count([("connectrt.replay.count", b"x")]) == 0
    assert replay_count([("connectrt.replay.count", b"4")]) == 4
    assert original_topic_partition(_context()) == ("orders", 3)
    # Without fresh context (context headers off), the latest history says where.
    copy, _ = for_replay(_context(partition=5), "r", "d/0/0")
    again, _ = for_replay(copy, "r2", "d/0/1")  # two replays, no context since
    assert original_topic_partition(again) == ("orders", 5)
    assert original_topic_partition([("other", b"1")]) == (None, None)
    assert original_topic_partition([("__connect.errors.topic", b"t")]) == ("t", None)


def test_replay_headers_are_read_by_the_default_header_converter():
    """A sink's header converter parses every header of a copy: none may fail the record."""
    headers, _ = for_replay(_context(), "run", "dlq/0/1")
    converter = SimpleHeaderConverter()
    for key, value in headers:
        converter.to_connect_header("orders", key, value)  # raises on failure


# -- source documents -------------------------------------------------------------------------
def _order() -> Struct:
    return (
        Struct(ORDER)
        .put("id", 7)
        .put("amount", decimal.Decimal("12.34"))
        .put("day", dt.date(2026, 11, 22))
        .put("blob", b"\x00\xff")
    )


def test_a_document_gives_back_the_connect_data_with_its_schema():
    record = SourceRecord(
        {"file": "a"},
        {"position": 10},
        "orders",
        1,
        Schema.STRING_SCHEMA,
        "k7",
        ORDER,
        _order(),
        1_700_000_000_000,
        [Header("h", "v")],
    )
    document = source_record_document(record, TaskStage.VALUE_CONVERTER)
    plain = orjson.loads(document)
    assert plain["value"]["id"] == 7 and plain["stage"] == "VALUE_CONVERTER"
    back, stage = source_record_from_document(document)
    assert stage == "VALUE_CONVERTER"
    assert (back.topic, back.kafka_partition, back.timestamp) == ("orders", 1, 1_700_000_000_000)
    assert back.source_partition == {"file": "a"} and back.source_offset == {"position": 10}
    assert back.key == "k7" and back.key_schema is not None
    assert back.value_schema is not None and back.value_schema.name == "order"
    assert back.value == _order()
    assert back.headers == [Header("h", "v")]


def test_a_value_that_does_not_fit_its_schema_is_kept_plain():
    broken = Struct(ORDER).put("id", 1)  # required fields missing
    document = source_record_document(
        SourceRecord(None, None, "t", None, None, None, ORDER, broken)
    )
    assert "connect" not in orjson.loads(document)
    back, stage = source_record_from_document(document)
    assert stage is None and back.value_schema is None
    assert back.value["id"] == 1


@pytest.mark.parametrize(
    ("value", "why"),
    [(b"not json", "not JSON"), (b"[1]", "not a JSON object"), (b'{"value": 1}', "no topic")],
)
def test_unreadable_documents(value: bytes, why: str):
    with pytest.raises(UnreadableDocument, match=why):
        source_record_from_document(value)


# -- requests ---------------------------------------------------------------------------------
def test_replay_requests():
    assert replay_request(None) == ReplayRequest()
    assert replay_request({"dry_run": True, "max_replays": 2}) == ReplayRequest(None, None, True, 2)
    ten = int(dt.datetime(2026, 11, 22, 10, tzinfo=dt.UTC).timestamp() * 1000)
    window = replay_request({"from": "2026-11-22T10:00:00Z", "to": ten + 1})
    assert window.from_ms == ten and window.to_ms == ten + 1
    assert replay_request({"from": "2026-11-22T11:00:00+01:00"}).from_ms == ten
    assert replay_request({"from": "2026-11-22T10:00:00"}).from_ms == ten  # UTC if no offset
    assert replay_request({"to": str(ten)}).to_ms == ten
    assert replay_request({"from": "1960-01-01T00:00:00Z"}).from_ms == 0  # before any record
    assert replay_request({"to": "9999-12-31T23:59:59.999+00:00"}).to_ms == 253402300799999


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x", "must be a JSON object"),
        ({"from": "yesterday"}, "Invalid 'from' timestamp 'yesterday'"),
        ({"to": -1}, "Invalid 'to' timestamp -1"),
        ({"to": True}, "Invalid 'to' timestamp True"),
        ({"to": 253402300800000}, "Invalid 'to' timestamp 253402300800000"),
        ({"from": 5, "to": 5}, "'from' (5) must be before 'to' (5)"),
        ({"dry_run": 1}, "'dry_run' must be true or false"),
        ({"max_replays": 0}, "'max_replays' must be a positive integer"),
        ({"max_replays": "2"}, "'max_replays' must be a positive integer"),
        ({"fromm": 1}, "Unknown field(s) in the replay request: fromm"),
    ],
)
def test_bad_replay_requests(body: Any, message: str):
    with pytest.raises(BadRequestError) as raised:
        replay_request(body)
    assert message in str(raised.value)


# -- re-converting source records -------------------------------------------------------------
class RejectingConverter(Converter):
    """A value converter that refuses ``"abc"`` (as a schema-checking converter would)."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Any = None
    ) -> bytes | None:
        if value == "abc":
            raise DataError("no 'abc' here")
        return str(value).encode()

    def to_connect_data(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        raise NotImplementedError


def _replayer(value: Converter | None = None, **transforms: str) -> SourceRecordReplayer:
    if value is None:
        value = JsonConverter()
        value.configure({"schemas.enable": "false"}, is_key=False)
    key = StringConverter()
    key.configure({}, is_key=True)
    header = SimpleHeaderConverter()
    chain = TransformationChain(transforms) if transforms else None
    return SourceRecordReplayer(TaskConverters(key, value, header), chain)


CAST = {
    "transforms": "cast",
    "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.cast.spec": "float64",
}


def _document(value: Any, stage: str) -> bytes:
    return source_record_document(
        SourceRecord({"p": 0}, {"o": 1}, "t", None, None, "k", None, value, None, [Header("h", 1)]),
        stage,
    )


def test_a_record_that_failed_in_a_transform_runs_through_the_transforms_again():
    encoded, failures = _replayer(**CAST).replay(_document("1.5", TaskStage.TRANSFORMATION))
    assert failures == []
    (one,) = encoded
    assert (one.topic, one.key, one.value, one.headers) == ("t", b"k", b"1.5", [("h", b"1")])

    encoded, failures = _replayer(**CAST).replay(_document("abc", TaskStage.TRANSFORMATION))
    assert encoded == []
    (failure,) = failures
    assert failure.stage == TaskStage.TRANSFORMATION
    assert failure.class_name == "connectrt.transforms.cast.CastValue"
    assert failure.record.value == "abc"  # the record as it was before the transforms
    # The trace is kept as text; the frames are let go (they would hold the run's clients).
    assert "Traceback" in failure.trace and "CastValue" in failure.trace
    assert failure.error.__traceback__ is None


def test_a_record_that_failed_in_a_converter_is_not_transformed_twice():
    encoded, failures = _replayer(**CAST).replay(_document("abc", TaskStage.VALUE_CONVERTER))
    assert failures == [] and [e.value for e in encoded] == [b'"abc"']

    encoded, failures = _replayer(RejectingConverter()).replay(
        _document("abc", TaskStage.VALUE_CONVERTER)
    )
    assert encoded == []
    (failure,) = failures
    assert failure.stage == TaskStage.VALUE_CONVERTER
    assert failure.class_name == f"{__name__}.RejectingConverter"
    assert str(failure.error) == "no 'abc' here"


def test_a_record_the_transforms_drop_produces_nothing():
    drop = {
        "transforms": "drop",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
    }
    assert _replayer(**drop).replay(_document("x", TaskStage.TRANSFORMATION)) == ([], [])
