"""SMTs applied by the runtime: routing, reshaping, filtering with predicates, fan-out."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.plugins.registry import registry
from connectrt.storage import decode_value, encode_key
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic
from tests.plugins.fanout import Twice

pytestmark = pytest.mark.integration


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_source_and_sink_chains(broker: EmbeddedBroker, tmp_path: Path, unique_name):
    registry.register_class(Twice, "transformation")
    base = unique_name("smt")
    raw, clean = f"{base}-raw", f"{base}-clean"
    create_topic(broker.bootstrap_servers, clean)
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("".join(f"l{i}\n" for i in range(50)))
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "src",
            {
                "connector.class": "FileStreamSource",
                "file": str(src),
                "topic": raw,
                "transforms": "hoist,route",
                "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
                "transforms.hoist.field": "line",
                "transforms.route.type": "RegexRouter",
                "transforms.route.regex": "(.*)-raw",
                "transforms.route.replacement": "$1-clean",
            },
        )
        h.start_connector(
            "sink",
            {
                "connector.class": "FileStreamSink",
                "file": str(dst),
                "topics": clean,
                "transforms": "extract,twice",
                "transforms.extract.type": "ExtractField$Value",
                "transforms.extract.field": "line",
                "transforms.twice.type": "tests.plugins.fanout.Twice",
            },
        )
        h.wait_until(
            lambda: len(_lines(dst)) >= 100, 60, "100 fanned-out lines (the group join included)"
        )
        h.wait_until(
            lambda: h.metrics("sink")[0].records_committed >= 50,
            60,
            "the sink offsets of the 50 records committed",
        )
    envelope = orjson.loads(read_topic(broker.bootstrap_servers, clean)[0][0][1])
    assert envelope["schema"]["type"] == "struct"
    assert envelope["schema"]["fields"] == [{"type": "string", "optional": False, "field": "line"}]
    assert envelope["payload"] == {"line": "l0"}
    expected = []
    for i in range(50):
        expected += [f"l{i}", f"l{i}-copy"]
    assert _lines(dst) == expected


def test_filtered_source_records_still_commit_offsets(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic = unique_name("dropped")
    create_topic(broker.bootstrap_servers, topic)
    src = tmp_path / "in.txt"
    src.write_text("".join(f"x{i}\n" for i in range(30)))
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "drop",
            {
                "connector.class": "FileStreamSource",
                "file": str(src),
                "topic": topic,
                "transforms": "drop",
                "transforms.drop.type": "Filter",
                "transforms.drop.predicate": "mine",
                "predicates": "mine",
                "predicates.mine.type": "TopicNameMatches",
                "predicates.mine.pattern": "dropped-.*",
            },
        )
        h.wait_until(
            lambda: h.metrics("drop")[0].records_skipped == 30, 60, "all 30 records filtered"
        )
        key = encode_key("drop", {"filename": str(src)})
        store = h.running.offset_store
        h.wait_until(
            lambda: store.get([key])[key] is not None, 60, "the source offset of the file stored"
        )
        assert decode_value(store.get([key])[key]) == {"position": src.stat().st_size}
    assert read_topic(broker.bootstrap_servers, topic) == {0: []}


def test_invalid_transform_config_is_rejected_per_field(broker: EmbeddedBroker, unique_name):
    from connectrt.errors import ConfigError

    with WorkerHarness(broker.bootstrap_servers) as h, pytest.raises(ConfigError) as err:
        h.start_connector(
            "bad",
            {
                "connector.class": "FileStreamSource",
                "file": "f",
                "topic": unique_name("t"),
                "transforms": "r",
                "transforms.r.type": "RegexRouter",
            },
        )
    assert 'transforms.r.regex: Missing required configuration "regex"' in str(err.value)
