"""The record inspector's task side: the sampling bounds (rate cap, records per batch, a full
queue drops instead of blocking), the stages a sink's sampled records are shown at (through
the real converters and a real transformation chain), and the rendering (bytes redacted
before base64, large values cut with a marker, structs as objects).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.converters import SimpleHeaderConverter, StringConverter
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.runtime.redaction import Redactor
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.tap import MAX_RATE, PER_BATCH, TapSubscription, TaskTap, stage_names
from connectrt.runtime.tasks.tap_render import MAX_BYTES, MAX_CHARS, MAX_ITEMS, render
from connectrt.testing.fake_kafka import FakeMessage
from connectrt.transforms.chain import TransformationChain


def _converters() -> TaskConverters:
    key, value, header = StringConverter(), StringConverter(), SimpleHeaderConverter()
    key.configure({}, True)
    value.configure({}, False)
    header.configure({})
    return TaskConverters(key, value, header)


def _chain() -> TransformationChain[Any]:
    return TransformationChain(
        {
            "transforms": "hoist,insert",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "unit",
        }
    )


def _msgs(n: int) -> list[FakeMessage]:
    return [
        FakeMessage("t", 0, i, b"k", f"v{i}".encode(), [("h", b"x")], 1000 + i) for i in range(n)
    ]


def _drain(sub: TapSubscription) -> list[dict[str, Any]]:
    out = []
    while not sub.events.empty():
        out.append(sub.events.get_nowait())
    return out


def test_rate_is_capped_and_a_batch_gives_at_most_per_batch_records() -> None:
    sub = TapSubscription("read", rate=10_000)
    assert sub.rate == MAX_RATE
    sub._tokens = MAX_RATE  # a full bucket
    tap = TaskTap(TaskId("c", 0), "sink", _converters(), None)
    tap.add(sub)
    tap.on_sink_consumed(_msgs(500))
    events = _drain(sub)
    assert len(events) == PER_BATCH
    offsets = [e["offset"] for e in events]
    assert offsets == sorted(offsets) and offsets[-1] >= 300  # spread over the batch
    # At 1 record a second: the first batch shows one record, the next (at once) none.
    slow = TapSubscription("read", rate=1)
    tap.remove(sub)
    tap.add(slow)
    tap.on_sink_consumed(_msgs(500))
    tap.on_sink_consumed(_msgs(500))
    assert len(_drain(slow)) == 1


def test_a_full_queue_drops_and_counts() -> None:
    sub = TapSubscription("read", rate=MAX_RATE, size=2)
    tap = TaskTap(TaskId("c", 0), "sink", _converters(), None)
    tap.add(sub)
    for _ in range(4):
        sub._tokens = MAX_RATE
        tap.on_sink_consumed(_msgs(10))
    assert sub.events.qsize() == 2
    assert sub.dropped == 4 * PER_BATCH - 2


def test_sink_stages_through_the_real_converters_and_chain() -> None:
    chain = _chain()
    tap = TaskTap(TaskId("c", 3), "sink", _converters(), chain)
    assert stage_names("sink", tap.aliases) == [
        "read",
        "converted",
        "transform:hoist",
        "transform:insert",
        "written",
    ]
    subs = {s: TapSubscription(s) for s in ("read", "converted", "transform:0", "transform:1")}
    for sub in subs.values():
        tap.add(sub)
    tap.on_sink_consumed(_msgs(1))
    (read,) = _drain(subs["read"])
    assert read["value"] == b"v0" and read["headers"] == [{"key": "h", "value": b"x"}]
    assert read["task"] == 3 and read["timestamp"] == 1000
    (converted,) = _drain(subs["converted"])
    assert converted["value"] == "v0" and converted["value_schema"]["type"] == "string"
    (hoisted,) = _drain(subs["transform:0"])
    assert hoisted["value"] == {"line": "v0"}
    (inserted,) = _drain(subs["transform:1"])
    assert inserted["value"] == {"line": "v0", "origin": "unit"}
    # Removing the last subscription says so (the runner then drops the tap).
    assert not tap.remove(subs["read"])
    for s in ("converted", "transform:0"):
        tap.remove(subs[s])
    assert tap.remove(subs["transform:1"])
    chain.close()


def test_source_written_is_what_the_converters_make() -> None:
    tap = TaskTap(TaskId("c", 0), "source", _converters(), None)
    sub = TapSubscription("written")
    tap.add(sub)
    record = SourceRecord(
        {"f": "a"}, {"pos": 1}, "out", None, None, "key", None, "hello", 5, [Header("h", "x")]
    )
    tap.on_source_polled([record])
    (event,) = _drain(sub)
    assert event["key"] == b"key" and event["value"] == b"hello"
    assert event["headers"] == [{"key": "h", "value": b"x"}]
    assert event["source_offset"] == {"pos": 1}


def test_render_hides_secrets_in_bytes_before_base64_and_cuts_large_values() -> None:
    redactor = Redactor()
    redactor.register("s3cr3t-value")
    schema = SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).build()
    snapshot: dict[str, Any] = {
        "raw": b"before s3cr3t-value after",
        "big": b"x" * (MAX_BYTES + 10),
        "text": "y" * (MAX_CHARS + 5),
        "list": list(range(MAX_ITEMS + 3)),
    }
    from connectrt.runtime.tasks.tap_render import snapshot_record

    record = SinkRecord("t", 0, None, None, schema, Struct(schema).put("name", "s3cr3t-value"), 7)
    snapshot["record"] = snapshot_record(record, "written", 0)
    snapshot["list"] = snapshot_record(
        SinkRecord("t", 0, None, None, None, list(range(MAX_ITEMS + 3)), 8), "written", 0
    )["value"]
    text = render(snapshot, redactor)
    assert "s3cr3t-value" not in text
    out = json.loads(text)
    assert base64.b64decode(out["raw"]["base64"]) == b"before [hidden] after"
    assert out["raw"]["text"] == "before [hidden] after"
    assert len(base64.b64decode(out["big"]["base64"])) == MAX_BYTES
    assert out["big"]["truncated"] == "10 more bytes"
    assert out["text"].endswith("… [truncated: 5 more characters]")
    assert out["list"][-1] == "… 3 more items" and len(out["list"]) == MAX_ITEMS + 1
    assert out["record"]["value"] == {"name": "[hidden]"}
    assert out["record"]["value_schema"]["fields"] == [
        {"field": "name", "type": "string", "optional": False}
    ]


def test_a_fault_of_the_tap_never_reaches_the_task() -> None:
    """A record the tap cannot look at (here a message whose accessors fail) is logged, not
    raised into the task's loop."""

    class Broken:
        def timestamp(self) -> tuple[int, int]:
            raise RuntimeError("no timestamp")

    tap = TaskTap(TaskId("c", 0), "sink", _converters(), None)
    sub = TapSubscription("read")
    tap.add(sub)
    tap.on_sink_consumed([Broken()])  # does not raise
    assert sub.events.empty()
