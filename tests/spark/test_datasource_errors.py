"""Bad input on the read path follows errors.*: fail naming the record, or skip + DLQ."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.spark.datasource import register
from connectrt.testing.harness import create_topic, read_topic
from tests.spark.bridge_helpers import produce_raw

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ROW_SCHEMA = {
    "type": "struct",
    "name": "Row",
    "optional": False,
    "fields": [
        {"field": "n", "type": "int32", "optional": False},
        {"field": "secret", "type": "string", "optional": True},
    ],
}
BAD_JSON = 4  # not JSON at all
BAD_SHAPE = 7  # valid JSON, but a string: ReplaceField fails on it
BAD_TYPE = 8  # a struct whose n is text: does not fit the planned int column
N = 10


def payload(i: int) -> bytes:
    if i == BAD_JSON:
        return b"{not json"
    if i == BAD_SHAPE:
        return json.dumps({"schema": {"type": "string"}, "payload": "oops"}).encode()
    if i == BAD_TYPE:
        schema = json.loads(json.dumps(ROW_SCHEMA))
        schema["fields"][0]["type"] = "string"
        return json.dumps({"schema": schema, "payload": {"n": "eight", "secret": "s"}}).encode()
    return json.dumps({"schema": ROW_SCHEMA, "payload": {"n": i, "secret": f"s{i}"}}).encode()


@pytest.fixture
def bad_topic(broker: EmbeddedBroker, unique_name: Callable[[str], str]) -> str:
    topic = unique_name("bad")
    create_topic(broker.bootstrap_servers, topic, 1)
    produce_raw(broker.bootstrap_servers, topic, ((None, payload(i), 0) for i in range(N)))
    return topic


def load(spark: SparkSession, broker: EmbeddedBroker, topic: str, **extra: str) -> Any:
    register(spark)
    reader = (
        spark.read.format("connectrt")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("value.converter.schemas.enable", "true")
    )
    for k, v in extra.items():
        reader = reader.option(k, v)
    return reader.load()


def test_undecodable_record_fails_the_query_naming_it(
    spark: SparkSession, broker: EmbeddedBroker, bad_topic: str
) -> None:
    df = load(spark, broker, bad_topic)
    with pytest.raises(Exception) as failure:
        df.collect()
    text = str(failure.value)
    assert "Tolerance exceeded in error handler" in text
    assert "VALUE_CONVERTER" in text
    assert f"record topic={bad_topic}, partition=0, offset={BAD_JSON}" in text


def test_tolerated_records_are_skipped_and_sent_to_the_dlq(
    spark: SparkSession,
    broker: EmbeddedBroker,
    bad_topic: str,
    unique_name: Callable[[str], str],
) -> None:
    dlq = unique_name("dlq")
    df = load(
        spark,
        broker,
        bad_topic,
        **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
            # a transform with a mixed-case alias: Spark lower-cases option keys
            "transforms": "DropSecret",
            "transforms.DropSecret.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
            "transforms.DropSecret.exclude": "secret",
        },
    )
    assert df.schema["value"].dataType.fieldNames() == ["n"]  # planned after the transform
    got = sorted(r["value"]["n"] for r in df.collect())
    bad = (BAD_JSON, BAD_SHAPE, BAD_TYPE)
    assert got == [i for i in range(N) if i not in bad]

    dead = read_topic(broker.bootstrap_servers, dlq)
    assert sorted(v or b"" for _, v in dead[0]) == sorted(payload(i) for i in bad)
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": unique_name("g")}
    )
    try:
        consumer.assign([KafkaTopicPartition(dlq, 0, 0)])
        msgs = consumer.consume(3, 10)
    finally:
        consumer.close()
    headers = [dict(m.headers() or []) for m in msgs]
    stages = {int(h["__connect.errors.offset"]): h["__connect.errors.stage"] for h in headers}
    assert stages == {
        BAD_JSON: b"VALUE_CONVERTER",
        BAD_SHAPE: b"TRANSFORMATION",
        BAD_TYPE: b"VALUE_CONVERTER",
    }
    assert {h["__connect.errors.topic"] for h in headers} == {bad_topic.encode()}
