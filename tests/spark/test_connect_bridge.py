"""The DataFrame bridge through a Spark Connect session.

A real Spark Connect server started from the installed pyspark (``spark_connect_server``, one
per test run), the embedded broker, real sinks. The client registers ``format("connectrt")``
through its Connect session; the server's Python workers plan and read (Arrow batches) and
write (sink tasks).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from connectrt.broker import EmbeddedBroker
from connectrt.converters.json import JsonConverter
from connectrt.spark.datasource import register
from connectrt.spark.python_env import is_connect_session
from connectrt.testing.harness import create_topic
from tests.spark.bridge_helpers import check_order_row, expected_value_type, order, produce_raw

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ROW = {"type": "struct", "fields": [{"field": "n", "type": "int32", "optional": False}]}


@pytest.fixture(scope="module")
def bridge(spark_connect: SparkSession) -> SparkSession:
    assert is_connect_session(spark_connect)
    # Over Connect the workers are the server's: register checks they import connectrt.
    assert register(spark_connect) == "connectrt"
    return spark_connect


def produce_numbers(bootstrap: str, topic: str, numbers: range) -> None:
    produce_raw(
        bootstrap,
        topic,
        ((None, json.dumps({"schema": ROW, "payload": {"n": i}}).encode(), i % 2) for i in numbers),
    )


def test_batch_read_over_connect_gives_typed_columns(
    bridge: SparkSession, broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("orders")
    create_topic(broker.bootstrap_servers, topic, 2)
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, False)
    n = 30
    produce_raw(
        broker.bootstrap_servers,
        topic,
        (
            (f"k{i}".encode(), conv.from_connect_data(topic, order(i).schema, order(i)), i % 2)
            for i in range(n)
        ),
    )
    df = (
        bridge.read.format("connectrt")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("key.converter", "org.apache.kafka.connect.storage.StringConverter")
        .load()
    )
    assert df.schema["key"].dataType == T.StringType()
    assert df.schema["value"].dataType == expected_value_type(10)
    assert df.schema["timestamp"].dataType == T.TimestampType()
    rows = df.collect()
    assert len(rows) == n
    for row in rows:
        i = row["value"]["id"]
        check_order_row(row["value"], i)
        assert (row["key"], row["topic"], row["partition"], row["offset"]) == (
            f"k{i}",
            topic,
            i % 2,
            i // 2,
        )
    # SQL over the typed columns runs on the server
    by_customer = {
        r["customer"]: r["n"]
        for r in df.groupBy("value.customer").count().withColumnRenamed("count", "n").collect()
    }
    assert by_customer == {
        c: sum(1 for i in range(n) if order(i).get("customer") == c)
        for c in {order(i).get("customer") for i in range(n)}
    }


def test_write_over_connect_through_a_sink_connector(bridge: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    df = bridge.range(0, 50, 1, 2).selectExpr("CAST(id AS STRING) AS line")
    (
        df.write.format("connectrt")
        .option("connector.class", "FileStreamSink")
        .option("file", str(out))
        .option("value.column", "line")
        .mode("append")
        .save()
    )
    assert sorted(int(x) for x in out.read_text().splitlines()) == list(range(50))


def events(db: Path) -> list[Any]:
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("events"):
                return []
            return list(conn.execute(sa.text('SELECT src_partition, src_offset, n FROM "events"')))
    finally:
        engine.dispose()


def start_stream(
    spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path, db: Path, **trigger: Any
) -> Any:
    df = (
        spark.readStream.format("connectrt")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "60")
        .load()
        .selectExpr("partition AS src_partition", "offset AS src_offset", "value.n AS n")
    )
    return (
        df.writeStream.format("connectrt")
        .option("checkpointLocation", str(checkpoint))
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", f"sqlite:///{db}")
        .option("topic", "events")
        .option("auto.create", "true")
        .option("exactly.once.enabled", "true")
        .option("name", "connect-stream")
        .trigger(**trigger)
        .start()
    )


def test_streaming_read_over_connect_restarts_from_its_checkpoint(
    bridge: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    """A query stopped mid-stream and started again on its checkpoint: every record lands in
    the table once (plain inserts: a replayed record would be a second row)."""
    topic = unique_name("stream")
    create_topic(broker.bootstrap_servers, topic, 2)
    first = 600
    produce_numbers(broker.bootstrap_servers, topic, range(first))
    checkpoint, db = tmp_path / "ckpt", tmp_path / "events.db"
    query = start_stream(
        bridge, broker.bootstrap_servers, topic, checkpoint, db, processingTime="0 seconds"
    )
    try:
        deadline = time.monotonic() + 180
        while len(events(db)) < 120:  # a few micro-batches of 60 records are in
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, "the first micro-batches wrote nothing in 180 s"
            time.sleep(0.2)
    finally:
        query.stop()
    at_stop = len(events(db))
    assert 120 <= at_stop < first  # stopped mid-stream

    produce_numbers(broker.bootstrap_servers, topic, range(first, first + 100))
    query = start_stream(bridge, broker.bootstrap_servers, topic, checkpoint, db, availableNow=True)
    try:
        assert query.awaitTermination(180), "the restarted query did not finish in 180 s"
        assert query.exception() is None
    finally:
        query.stop()
    rows = events(db)
    assert len(rows) == first + 100  # nothing lost, nothing duplicated
    assert sorted(r[2] for r in rows) == list(range(first + 100))
    assert {(r[0], r[1]) for r in rows} == {(i % 2, i // 2) for i in range(first + 100)}
