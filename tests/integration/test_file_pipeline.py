"""file -> Kafka -> file through the real worker and broker: content and order exact."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.storage import FileOffsetStore, decode_value, encode_key
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.smoke]

LINES = 100_000


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_100k_lines_file_to_kafka_to_file(broker: EmbeddedBroker, tmp_path: Path, unique_name):
    topic = unique_name("lines")
    create_topic(broker.bootstrap_servers, topic, partitions=3)
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"line-{i:07d} ünïcode" for i in range(LINES)]
    src.write_text("".join(line + "\n" for line in expected), encoding="utf-8")

    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "src", {"connector.class": "FileStreamSource", "file": str(src), "topic": topic}
        )
        h.start_connector(
            "sink",
            {"connector.class": "FileStreamSinkConnector", "file": str(dst), "topics": topic},
        )
        h.wait_for_tasks("src", State.RUNNING, timeout=60)
        h.wait_until(lambda: _count_lines(dst) >= LINES, timeout=180, what="all lines in sink")
        # Let the sink commit, then stop gracefully.
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics("sink").values()) >= LINES,
            timeout=60,
            what="the sink offsets of all lines committed",
        )

    written = dst.read_text(encoding="utf-8").splitlines()
    assert len(written) == LINES, "duplicates or losses in the sink file"
    assert sorted(written) == expected

    # Per-partition order: within each Kafka partition the lines are in file order, and the
    # sink wrote each partition's lines in that same order.
    per_partition = read_topic(broker.bootstrap_servers, topic)
    assert sum(len(v) for v in per_partition.values()) == LINES
    assert all(len(v) > 0 for v in per_partition.values()), "records spread over partitions"
    position = {line: i for i, line in enumerate(written)}
    for records in per_partition.values():
        lines = [orjson.loads(v)["payload"] for _, v in records]  # JsonConverter envelope
        assert lines == sorted(lines)
        sink_positions = [position[line] for line in lines]
        assert sink_positions == sorted(sink_positions)


@pytest.mark.parametrize("store", ["kafka", "file"])
def test_source_resumes_from_committed_offsets_after_restart(
    broker: EmbeddedBroker, tmp_path: Path, unique_name, store: str
):
    topic = unique_name("resume")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    src = tmp_path / "in.txt"
    src.write_text("".join(f"a{i}\n" for i in range(500)))
    config = {"connector.class": "FileStreamSource", "file": str(src), "topic": topic}

    props = {
        "offset.storage.type": store,
        "offset.storage.file.filename": str(tmp_path / "offsets.json"),
    }
    h = WorkerHarness(broker.bootstrap_servers, props).start()
    try:
        h.start_connector("src", config)
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics("src").values()) >= 500,
            60,
            "the offsets of the first 500 lines committed",
        )
        h.stop()
        with src.open("a") as f:
            f.write("".join(f"b{i}\n" for i in range(300)))
        h.start()
        h.start_connector("src", config)
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics("src").values()) >= 300,
            60,
            "the offsets of the 300 new lines committed after the restart",
        )
    finally:
        h.stop()
    values = [orjson.loads(v)["payload"] for _, v in read_topic(broker.bootstrap_servers, topic)[0]]
    assert values == [f"a{i}" for i in range(500)] + [f"b{i}" for i in range(300)]
    if store == "file":
        stored = FileOffsetStore(str(tmp_path / "offsets.json"))
        stored.start()
        key = encode_key("src", {"filename": str(src)})
        assert decode_value(stored.get([key])[key]) == {"position": src.stat().st_size}
