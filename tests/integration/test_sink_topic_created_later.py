"""A sink whose topic does not exist yet when its task starts: the usual order when a pipeline's
source and sink are created together (or a standalone worker starts both), since the source
creates the topic only when it first produces.

librdkafka finds a subscribed topic that appears later only at its next metadata refresh
(``topic.metadata.refresh.interval.ms``, 5 minutes by default), and the consumer's group join
waits for that. The runtime refreshes a named subscription's metadata every 5 s, so the sink
starts consuming within seconds of the topic's creation, as a Kafka Connect sink does.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, produce

pytestmark = pytest.mark.integration


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_a_sink_consumes_a_topic_created_after_it_started(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    topic, name = unique_name("later"), unique_name("later-sink")
    out = tmp_path / "sink.txt"
    config = {
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": str(out),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "consumer.override.session.timeout.ms": "6000",
    }
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(name, config)
        h.wait_for_tasks(name, State.RUNNING, timeout=60)
        # Let the task's consumer join its group while the topic is still missing.
        time.sleep(8)
        create_topic(broker.bootstrap_servers, topic, partitions=1)
        lines = [f"line {i}" for i in range(50)]
        produce(broker.bootstrap_servers, topic, lines)
        h.wait_until(
            lambda: len(_lines(out)) >= len(lines),
            timeout=90,
            what="the sink to write the lines of the topic created after it started (a consumer "
            "that waited for librdkafka's 5-minute metadata refresh would miss this)",
        )
        assert _lines(out) == lines
