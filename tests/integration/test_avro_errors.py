"""A record whose Avro header names a schema id the registry does not know goes through
errors.*: to the dead letter queue when tolerated (the pipeline goes on), FAILED with a trace
naming the stage and the id when not."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.converters.avro import AvroConverter
from connectrt.data import Schema
from connectrt.runtime.status import State
from connectrt.schema_registry.server import SchemaRegistryServer
from connectrt.testing.harness import WorkerHarness, create_topic, produce

pytestmark = pytest.mark.integration

UNKNOWN_ID = 987654
UNKNOWN = b"\x00" + struct.pack(">I", UNKNOWN_ID) + b"\x06bad"  # Avro string "bad"


@pytest.fixture
def registry(broker: EmbeddedBroker, unique_name) -> Iterator[SchemaRegistryServer]:
    server = SchemaRegistryServer(
        broker.bootstrap_servers, unique_name("_schemas"), "http://127.0.0.1:0"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _fill(broker: EmbeddedBroker, registry: SchemaRegistryServer, topic: str) -> None:
    """``a``, a record with an unknown schema id, ``c``."""
    converter = AvroConverter()
    converter.configure({"schema.registry.url": registry.url}, False)
    try:
        good = [converter.from_connect_data(topic, Schema.STRING_SCHEMA, v) for v in "ac"]
    finally:
        converter.close()
    assert good[0] is not None and good[1] is not None
    create_topic(broker.bootstrap_servers, topic)
    produce(broker.bootstrap_servers, topic, [good[0], UNKNOWN, good[1]])


def _sink(h: WorkerHarness, name: str, topic: str, out: Path, url: str, **extra: str) -> None:
    h.start_connector(
        name,
        {
            "connector.class": "FileStreamSink",
            "file": str(out),
            "topics": topic,
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": url,
            **extra,
        },
    )


def _dlq(broker: EmbeddedBroker, topic: str) -> list[tuple[bytes | None, dict[str, str]]]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([KafkaTopicPartition(topic, 0, -2)])
    out = []
    try:
        done = False
        while not done:
            msgs = consumer.consume(100, 5)
            if not msgs:
                break
            for m in msgs:
                if m.error():
                    done = True
                    continue
                out.append((m.value(), {k: v.decode() for k, v in m.headers() or []}))
    finally:
        consumer.close()
    return out


def test_unknown_schema_id_tolerated_goes_to_the_dlq_and_the_pipeline_continues(
    broker: EmbeddedBroker, registry: SchemaRegistryServer, tmp_path: Path, unique_name
):
    topic, dlq = unique_name("avro-bad"), unique_name("avro-dlq")
    _fill(broker, registry, topic)
    out = tmp_path / "out.txt"
    with WorkerHarness(broker.bootstrap_servers) as h:
        _sink(
            h,
            "avro-lenient",
            topic,
            out,
            registry.url,
            **{
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("avro-lenient")[0].records_committed >= 3,
            60,
            "the sink to commit all 3 records (the bad one through the DLQ)",
        )
        assert h.task_states("avro-lenient")[0].state is State.RUNNING
    assert out.read_text().splitlines() == ["a", "c"]
    ((value, headers),) = _dlq(broker, dlq)
    assert value == UNKNOWN
    assert headers["__connect.errors.topic"] == topic
    assert headers["__connect.errors.offset"] == "1"
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert headers["__connect.errors.class.name"] == "connectrt.converters.avro.AvroConverter"
    assert headers["__connect.errors.exception.class.name"].endswith("DataError")
    assert f"Schema id {UNKNOWN_ID} not found" in headers["__connect.errors.exception.message"]


def test_unknown_schema_id_not_tolerated_fails_the_task_with_a_clear_trace(
    broker: EmbeddedBroker, registry: SchemaRegistryServer, tmp_path: Path, unique_name
):
    topic = unique_name("avro-strict")
    _fill(broker, registry, topic)
    out = tmp_path / "out.txt"
    with WorkerHarness(broker.bootstrap_servers) as h:
        _sink(h, "avro-strict", topic, out, registry.url)
        (failed,) = h.wait_for_tasks("avro-strict", State.FAILED, timeout=60)
    trace = failed.trace or ""
    assert "Tolerance exceeded in error handler" in trace
    assert "VALUE_CONVERTER" in trace and "AvroConverter" in trace
    assert f"topic={topic}, partition=0, offset=1" in trace
    assert f"Schema id {UNKNOWN_ID} not found in the registry" in trace
