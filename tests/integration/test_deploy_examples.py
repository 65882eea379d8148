"""The deploy/standalone example files, run as their comments say on the session's broker: the
source creates its topic with one partition (KIP-158), so the sink writes the lines in the
input's order, whatever the broker gives a topic an unconfigured source would auto-create (four
partitions on the embedded broker, ``num.partitions`` on Apache Kafka)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.harness import produce
from connectrt.testing.rest import wait_for

pytestmark = pytest.mark.integration

STANDALONE = Path(__file__).resolve().parents[2] / "deploy" / "standalone"


def _partitions(bootstrap: str, topic: str) -> int:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    return len(metadata.topics[topic].partitions)


def _auto_create_partitions(broker: SessionBroker) -> int:
    """How many partitions ``broker`` gives a topic a produce auto-creates."""
    if isinstance(broker, EmbeddedBroker):
        return 4  # Tansu's fixed choice (broker.md)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    metadata = admin.list_topics(timeout=30)
    node = str(next(iter(metadata.brokers)))
    resource = ConfigResource(ResourceType.BROKER, node)
    configs = admin.describe_configs([resource])[resource].result(30)
    return int(configs["num.partitions"].value)


def test_standalone_example_keeps_line_order(broker: SessionBroker, tmp_path: Path, unique_name):
    work = tmp_path / "standalone"
    shutil.copytree(STANDALONE, work)
    topic = unique_name("connect-test")
    port = free_port()
    worker = work / "worker.properties"
    text = worker.read_text()
    assert "bootstrap.servers=localhost:9092" in text and "listeners=http://:8083" in text
    assert "consumer.session.timeout.ms=6000" in text
    worker.write_text(
        text.replace("localhost:9092", broker.bootstrap_servers).replace(
            "http://:8083", f"http://127.0.0.1:{port}"
        )
    )
    for name in ("connect-file-source.properties", "connect-file-sink.properties"):
        path = work / name
        path.write_text(path.read_text().replace("connect-test", topic))
    lines = [f"line {i}" for i in range(3000)]
    (work / "test.txt").write_text("".join(f"{line}\n" for line in lines))

    command = [sys.executable, "-m", "connectrt.cli", "--log-level", "WARNING", "standalone"]
    files = ["worker.properties", "connect-file-source.properties", "connect-file-sink.properties"]
    with (work / "worker.log").open("wb") as log:
        proc = subprocess.Popen([*command, *files], cwd=work, stdout=log, stderr=subprocess.STDOUT)
    try:
        output = work / "test.sink.txt"

        def written() -> list[str]:
            assert proc.poll() is None, (work / "worker.log").read_text()
            return output.read_text().splitlines() if output.exists() else []

        wait_for(
            lambda: len(written()) >= len(lines),
            90,
            "the sink to write every line (its group join and an offset flush included)",
        )
        assert written() == lines  # one partition: the input's order
        assert _partitions(broker.bootstrap_servers, topic) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    # What the topic.creation settings make independent of the broker: the partition count of
    # an auto-created topic (4 on the embedded broker, where the lines' order would be lost).
    auto = unique_name("auto-created")
    produce(broker.bootstrap_servers, auto, [b"x"])
    assert _partitions(broker.bootstrap_servers, auto) == _auto_create_partitions(broker)
