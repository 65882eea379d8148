"""Configurations a real Kafka cluster would refuse are refused by connectrt first, on every
broker: replication factors above the cluster's broker count (at create and validate time, over
HTTP), a compacted topic for records without keys, an internal topic that is not compacted (the
worker refuses to start), and a dead letter queue that cannot be set up (the task fails at
start, before consuming anything).

Broker-agnostic: the broker count is read from the cluster, never assumed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, produce
from connectrt.testing.rest import RestWorker, rest_worker_props, start_rest_worker

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DLQ_RF = "errors.deadletterqueue.topic.replication.factor"


def _brokers(bootstrap: str) -> int:
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers)


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    w = start_rest_worker(broker.bootstrap_servers)
    try:
        yield w
    finally:
        w.stop()


def _refused(worker: RestWorker, name: str, config: dict[str, str], key: str, plugin: str) -> None:
    """Create (PUT and POST) answer 400 naming ``key``; validate reports it on ``key``; the
    connector does not exist afterwards."""
    put = worker.http.put(f"/connectors/{name}/config", json=config)
    assert put.status_code == 400, put.text
    assert key in put.json()["message"]
    post = worker.http.post("/connectors", json={"name": name, "config": config})
    assert post.status_code == 400, post.text
    assert key in post.json()["message"]
    assert worker.http.get(f"/connectors/{name}").status_code == 404
    validated = worker.http.put(
        f"/connector-plugins/{plugin}/config/validate", json={**config, "name": name}
    )
    assert validated.status_code == 200, validated.text
    body = validated.json()
    assert body["error_count"] >= 1
    (entry,) = [c["value"] for c in body["configs"] if c["value"]["name"] == key]
    assert entry["errors"] and key in entry["errors"][0], entry


def test_dlq_replication_factor_above_the_brokers_is_refused_at_create_and_validate(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    brokers = _brokers(broker.bootstrap_servers)
    config = {
        "connector.class": "FileStreamSink",
        "file": str(tmp_path / "out.txt"),
        "topics": unique_name("in"),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": unique_name("dlq"),
        DLQ_RF: str(brokers + 2),
    }
    _refused(worker, unique_name("dlq-rf"), config, DLQ_RF, "FileStreamSink")
    # Left unset, Kafka Connect's default of 3 applies, and is refused the same way where
    # the cluster has fewer brokers.
    del config[DLQ_RF]
    if brokers < 3:
        _refused(worker, unique_name("dlq-default"), config, DLQ_RF, "FileStreamSink")
    # What the cluster can hold is accepted.
    config[DLQ_RF] = "1"
    name = unique_name("dlq-ok")
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    assert worker.http.delete(f"/connectors/{name}").status_code == 204


def test_topic_creation_group_replication_factor_above_the_brokers_is_refused(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    too_many = str(_brokers(broker.bootstrap_servers) + 2)
    config = {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": unique_name("big"),
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.groups": "big",
        "topic.creation.big.include": "big-.*",
        "topic.creation.big.replication.factor": too_many,
    }
    key = "topic.creation.big.replication.factor"
    _refused(worker, unique_name("tc-rf"), config, key, "FileStreamSource")
    config.pop(key)
    config["topic.creation.default.replication.factor"] = too_many
    default_key = "topic.creation.default.replication.factor"
    _refused(worker, unique_name("tc-rf-default"), config, default_key, "FileStreamSource")


def test_compacted_topic_for_a_source_without_keys_is_refused(
    worker: RestWorker, tmp_path: Path, unique_name
) -> None:
    config = {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": unique_name("compact"),
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.default.cleanup.policy": "compact",
    }
    key = "topic.creation.default.cleanup.policy"
    _refused(worker, unique_name("compact"), config, key, "FileStreamSource")
    message = worker.http.put(f"/connectors/{unique_name('c')}/config", json=config).json()
    assert "accepts only records with a key" in message["message"]


def test_worker_refuses_an_offsets_topic_that_is_not_compacted(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    topic = unique_name("offsets")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    new = NewTopic(
        topic,
        num_partitions=1,
        replication_factor=1,
        config={"cleanup.policy": "delete", "retention.ms": "60000"},
    )
    admin.create_topics([new])[topic].result(15)
    props = rest_worker_props(broker.bootstrap_servers, **{"offset.storage.topic": topic})
    props_file = tmp_path / "worker.properties"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "worker", str(props_file)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert (
        f"Topic '{topic}' supplied via the 'offset.storage.topic' property is required to have "
        "'cleanup.policy=compact' to guarantee consistency and durability of source connector "
        "offsets, but found the topic currently has 'cleanup.policy=delete'."
    ) in output, output
    assert time.monotonic() - started < 170  # it exits by itself, it does not hang


def test_sink_whose_dlq_cannot_be_set_up_fails_at_start_before_consuming(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    # Validation does not see the cluster on this path (an in-process worker, as with
    # connectors given on the command line), so the task start is what refuses the DLQ.
    topic, dlq = unique_name("in"), unique_name("dlq")
    create_topic(broker.bootstrap_servers, topic)
    produce(broker.bootstrap_servers, topic, [b"one", b"two", b"three"])
    out = tmp_path / "out.txt"
    config = {
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": topic,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        DLQ_RF: str(_brokers(broker.bootstrap_servers) + 2),
    }
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector("dlq-broken", config)
        (failed,) = h.wait_for_tasks("dlq-broken", State.FAILED, timeout=120)
    trace = failed.trace or ""
    first = trace.splitlines()[0]
    assert first.endswith(f"Could not initialize dead letter queue with topic={dlq}"), trace
    assert DLQ_RF in trace  # the cause, below
    assert trace.index(DLQ_RF) > len(first)
    assert not out.exists() or out.read_text() == ""  # nothing consumed, nothing written
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=15)
    assert dlq not in topics.topics
