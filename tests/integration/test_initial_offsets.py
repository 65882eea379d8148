"""KIP-995 through real HTTP: ``initial_offsets`` in ``POST /connectors``.

The offsets (KIP-875's PATCH shape) replace whatever the connector name had before any task
starts, so the connector's first records come from them; the answer carries ``offsets_status``.
Offsets that are malformed, or that the connector refuses, give 400 and leave no connector.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.client import ConnectClient
from connectrt.testing.harness import create_topic, produce, read_topic
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for

pytestmark = pytest.mark.integration

STRING = "org.apache.kafka.connect.storage.StringConverter"
ALTERED = "The offsets for this connector have been altered successfully"
LINES = [f"line {i}" for i in range(20)]


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(broker.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _source_file(tmp: Path) -> Path:
    path = tmp / f"in-{uuid.uuid4().hex[:6]}.txt"
    path.write_text("".join(f"{line}\n" for line in LINES))
    return path


def _position_of(line: int) -> int:
    """FileStreamSource's offset before ``line``: characters read, newlines included."""
    return sum(len(f"{text}\n") for text in LINES[:line])


def _source(path: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSource",
        "file": str(path),
        "topic": topic,
        "value.converter": STRING,
    }


def _values(bootstrap: str, topic: str) -> list[str]:
    return [v.decode() for records in read_topic(bootstrap, topic).values() for _, v in records]


def _create(worker: RestWorker, name: str, config: dict[str, str], **body: Any):
    return worker.http.post("/connectors", json={"name": name, "config": config, **body})


def _committed_position(worker: RestWorker, name: str) -> int | None:
    offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
    return offsets[0]["offset"]["position"] if offsets else None


def test_source_starts_from_its_initial_offsets(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    path, topic, name = _source_file(tmp_path), unique_name("t"), unique_name("src")
    create_topic(broker.bootstrap_servers, topic)
    start = {"partition": {"filename": str(path)}, "offset": {"position": _position_of(12)}}
    r = _create(worker, name, _source(path, topic), initial_offsets=[start])
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["offsets_status"] == {"message": ALTERED}
    assert body["name"] == name and body["type"] == "source"
    wait_for(
        lambda: _committed_position(worker, name) == _position_of(20),
        60,
        "the source to commit the end of its file",
    )
    # Nothing before line 12 was ever produced: the offsets were in place before the task ran.
    assert _values(broker.bootstrap_servers, topic) == LINES[12:]
    # Other endpoints returning ConnectorInfo are unchanged.
    assert "offsets_status" not in worker.http.get(f"/connectors/{name}").json()


def test_initial_offsets_replace_what_a_former_connector_of_that_name_left(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    path, name = _source_file(tmp_path), unique_name("src")
    first, second = unique_name("t"), unique_name("t")
    for topic in (first, second):
        create_topic(broker.bootstrap_servers, topic)
    assert _create(worker, name, _source(path, first)).status_code == 201
    wait_for(
        lambda: _committed_position(worker, name) == _position_of(20),
        60,
        "the first connector to commit its whole file",
    )
    assert worker.http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: name not in worker.http.get("/connectors").json(), 60, "the deletion")

    start = {"partition": {"filename": str(path)}, "offset": {"position": _position_of(15)}}
    with ConnectClient(worker.url) as client:  # connectrt's client sends the same request
        info = client.create(
            name, _source(path, second), initial_state="STOPPED", initial_offsets=[start]
        )
    assert info["tasks"] == [] and info["offsets_status"] == {"message": ALTERED}
    assert worker.http.get(f"/connectors/{name}/offsets").json() == {"offsets": [start]}
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(
        lambda: _committed_position(worker, name) == _position_of(20),
        60,
        "the recreated connector to commit the end of its file",
    )
    assert _values(broker.bootstrap_servers, second) == LINES[15:]


def test_sink_starts_from_its_initial_offsets(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, name = unique_name("t"), unique_name("sink")
    create_topic(broker.bootstrap_servers, topic)
    produce(broker.bootstrap_servers, topic, [f"v{i}" for i in range(10)])
    out = tmp_path / "out.txt"
    config = {
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": topic,
        "value.converter": STRING,
    }
    start = {
        "partition": {"kafka_topic": topic, "kafka_partition": 0},
        "offset": {"kafka_offset": 6},
    }
    r = _create(worker, name, config, initial_offsets=[start])
    assert r.status_code == 201, r.text
    assert r.json()["offsets_status"] == {"message": ALTERED}

    def committed() -> int | None:
        offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
        return offsets[0]["offset"]["kafka_offset"] if offsets else None

    # Its group is at 6 before any task joins; it ends at 10 once the sink has written the rest.
    wait_for(lambda: committed() == 10, 90, "the sink group to commit offset 10")
    assert out.read_text().splitlines() == [f"v{i}" for i in range(6, 10)]


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([], "Partitions / offsets need to be provided for an alter offsets request"),
        ({"partition": {}}, "Each entry of 'offsets' needs a 'partition' object"),
        ([{"offset": {"position": 1}}], "Each entry of 'offsets' needs a 'partition' object"),
        ([{"partition": {"filename": "f"}, "offset": 5}], "Offsets must be JSON objects or null"),
    ],
)
def test_malformed_initial_offsets_are_400_and_nothing_is_created(
    worker: RestWorker, tmp_path: Path, unique_name, offsets: Any, message: str
):
    name = unique_name("src")
    r = _create(worker, name, _source(_source_file(tmp_path), "t"), initial_offsets=offsets)
    assert (r.status_code, r.json()) == (400, {"error_code": 400, "message": message})
    assert worker.http.get(f"/connectors/{name}").status_code == 404


def test_sink_offsets_without_a_topic_are_400(worker: RestWorker, tmp_path: Path, unique_name):
    name = unique_name("sink")
    config = {"connector.class": "FileStreamSink", "file": str(tmp_path / "o"), "topics": "x"}
    bad = [{"partition": {"kafka_partition": 0}, "offset": {"kafka_offset": 1}}]
    r = _create(worker, name, config, initial_offsets=bad)
    assert r.status_code == 400
    assert r.json()["message"] == "Partitions must contain a non-empty 'kafka_topic' string"
    assert worker.http.get(f"/connectors/{name}").status_code == 404


def test_offsets_the_connector_refuses_are_400_and_the_connector_is_removed(
    worker: RestWorker, tmp_path: Path, unique_name
):
    path, name = _source_file(tmp_path), unique_name("src")
    refused = [{"partition": {"filename": str(path)}, "offset": {"position": -4}}]
    r = _create(worker, name, _source(path, unique_name("t")), initial_offsets=refused)
    assert r.status_code == 400
    assert r.json()["message"] == (
        f"Failed to modify offsets for connector {name}: The 'position' offset must be a "
        "non-negative integer"
    )
    assert worker.http.get(f"/connectors/{name}").status_code == 404
    assert name not in worker.http.get("/connectors").json()
    # The name is free again, and nothing of the refused offsets was stored under it.
    r = _create(worker, name, _source(path, unique_name("t")), initial_state="STOPPED")
    assert r.status_code == 201 and "offsets_status" not in r.json()
    assert worker.http.get(f"/connectors/{name}/offsets").json() == {"offsets": []}
