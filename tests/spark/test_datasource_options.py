"""spark-sql-kafka option parity: Spark's option names, defaults and checks, on real reads.

The session's broker, the session's local SparkSession. The per-test topics carry records
whose CreateTime is set, so timestamp options have exact answers.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.spark.datasource import register
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import wait_for
from tests.spark.bridge_helpers import produce_raw

pytestmark = [pytest.mark.spark, pytest.mark.integration]

N = 40
# CreateTime of record i: BASE + i s, in the past hour (Apache Kafka refuses a CreateTime more
# than log.message.timestamp.after.max.ms, an hour by default, ahead of its clock, and deletes
# records older than retention.ms, a week by default).
BASE = (int(time.time()) - 3600) * 1000


@pytest.fixture(scope="module")
def bridge(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


@pytest.fixture
def timed_topic(broker: EmbeddedBroker, unique_name: Callable[[str], str]) -> str:
    """Record i (value {"n": i}) on partition i % 2 with CreateTime BASE + i s."""
    topic = unique_name("timed")
    create_topic(broker.bootstrap_servers, topic, 2)
    produce_raw(
        broker.bootstrap_servers,
        topic,
        ((None, json.dumps({"n": i}).encode(), i % 2) for i in range(N)),
        timestamps=[BASE + i * 1000 for i in range(N)],
    )
    return topic


def reader(spark: SparkSession, broker: EmbeddedBroker, **options: str) -> Any:
    r = (
        spark.read.format("connectrt")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("value.converter.schemas.enable", "false")
    )
    for key, value in options.items():
        r = r.option(key, value)
    return r


def numbers(df: Any) -> list[int]:
    return sorted(json.loads(r["value"])["n"] for r in df.collect())


def test_batch_read_options_mean_what_they_mean_in_spark(
    bridge: SparkSession, broker: EmbeddedBroker, timed_topic: str
) -> None:
    t = timed_topic
    # assign: the named partitions only
    assigned = reader(bridge, broker, assign=json.dumps({t: [1]})).load()
    assert numbers(assigned) == list(range(1, N, 2))

    # minPartitions: the two Kafka partitions split into at least 6 Spark partitions
    split = reader(bridge, broker, subscribe=t, minPartitions="6").load()
    assert split.rdd.getNumPartitions() == 6
    assert numbers(split) == list(range(N))

    # per-partition times: partition 0 from record 10 on, partition 1 from record 21 on,
    # up to (not including) the first record at or after each ending time
    by_time = reader(
        bridge,
        broker,
        subscribe=t,
        startingOffsetsByTimestamp=json.dumps({t: {"0": BASE + 10_000, "1": BASE + 20_000}}),
        endingOffsetsByTimestamp=json.dumps({t: {"0": BASE + 30_000, "1": BASE + 99_000}}),
    ).load()
    assert numbers(by_time) == sorted([*range(10, 30, 2), *range(21, N, 2)])
    # the global startingTimestamp wins over startingOffsetsByTimestamp, as in Spark
    both = reader(
        bridge,
        broker,
        subscribe=t,
        startingTimestamp=str(BASE + 36_000),
        startingOffsetsByTimestamp=json.dumps({t: {"0": BASE, "1": BASE}}),
    ).load()
    assert numbers(both) == [36, 37, 38, 39]
    rows = both.collect()
    assert {r["timestampType"] for r in rows} == {0}
    assert min(r["timestamp"] for r in rows).astimezone(dt.UTC) == dt.datetime.fromtimestamp(
        (BASE + 36_000) / 1000, dt.UTC
    )

    # a starting time after the last record: an error by default, the end with "latest"
    after = json.dumps({t: {"0": BASE + 500_000, "1": BASE}})
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=latest"):
        reader(bridge, broker, subscribe=t, startingOffsetsByTimestamp=after).load().collect()
    at_end = reader(
        bridge,
        broker,
        subscribe=t,
        startingOffsetsByTimestamp=after,
        startingOffsetsByTimestampStrategy="latest",
    ).load()
    assert numbers(at_end) == list(range(1, N, 2))
    # every partition starts at its end: no range to read, no row (and no failed task)
    all_after = json.dumps({t: {"0": BASE + 500_000, "1": BASE + 500_000}})
    nothing = reader(
        bridge,
        broker,
        subscribe=t,
        startingOffsetsByTimestamp=all_after,
        startingOffsetsByTimestampStrategy="latest",
    ).load()
    assert numbers(nothing) == []

    # Spark's checks
    with pytest.raises(Exception, match="not valid for a batch read"):
        reader(bridge, broker, subscribe=t, startingOffsets="latest").load().collect()
    with pytest.raises(Exception, match="must name every partition"):
        reader(
            bridge, broker, subscribe=t, startingOffsets=json.dumps({t: {"0": 1}})
        ).load().collect()
    with pytest.raises(Exception, match=r"kafka\.auto\.offset\.reset is not supported"):
        reader(bridge, broker, subscribe=t, **{"kafka.auto.offset.reset": "latest"}).load()
    with pytest.raises(Exception, match="exactly one of the options subscribe"):
        reader(bridge, broker, subscribe=t, assign=json.dumps({t: [0]})).load()


def start_to_file(
    spark: SparkSession, broker: EmbeddedBroker, topic: str, out: Path, ckpt: Path, **opts: str
) -> Any:
    stream = (
        spark.readStream.format("connectrt")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("value.converter.schemas.enable", "false")
    )
    trigger = {"availableNow": True}
    for key, value in opts.items():
        if key == "processingTime":
            trigger = {"processingTime": value}
        else:
            stream = stream.option(key, value)
    return (
        stream.load()
        .selectExpr("CAST(get_json_object(value, '$.n') AS STRING) AS line")
        .writeStream.format("connectrt")
        .option("connector.class", "FileStreamSink")
        .option("file", str(out))
        .option("value.column", "line")
        .option("checkpointLocation", str(ckpt))
        .trigger(**trigger)
        .start()
    )


def lines(out: Path) -> list[int]:
    return sorted(int(x) for x in out.read_text().splitlines()) if out.exists() else []


def test_fail_on_data_loss_after_the_topic_is_recreated(
    bridge: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("recreated")
    create_topic(broker.bootstrap_servers, topic, 1)
    produce_raw(
        broker.bootstrap_servers,
        topic,
        ((None, json.dumps({"n": i}).encode(), 0) for i in range(30)),
    )
    out, ckpt = tmp_path / "out.txt", tmp_path / "ckpt"
    query = start_to_file(bridge, broker, topic, out, ckpt)
    assert query.awaitTermination(180)
    assert lines(out) == list(range(30))

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.delete_topics([topic]).values():
        future.result(30)

    def recreated() -> bool:
        try:
            create_topic(broker.bootstrap_servers, topic, 1)
            return True
        except Exception:
            return False

    wait_for(recreated, 60, f"topic {topic} created again after its deletion")
    produce_raw(
        broker.bootstrap_servers,
        topic,
        ((None, json.dumps({"n": i}).encode(), 0) for i in range(100, 110)),
    )
    # the checkpoint says offset 30; the new partition ends at 10: data loss
    query = start_to_file(bridge, broker, topic, out, ckpt)
    with pytest.raises(StreamingQueryException, match="failOnDataLoss=false"):
        query.awaitTermination(180)
    assert lines(out) == list(range(30))
    # failOnDataLoss=false: logged, and the query goes on from the earliest offset
    query = start_to_file(bridge, broker, topic, out, ckpt, failOnDataLoss="false")
    assert query.awaitTermination(180)
    assert query.exception() is None
    assert lines(out) == list(range(30)) + list(range(100, 110))


def test_min_offsets_per_trigger_holds_a_batch_back_up_to_max_trigger_delay(
    bridge: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("min-offsets")
    create_topic(broker.bootstrap_servers, topic, 1)

    def produce(numbers: range) -> None:
        produce_raw(
            broker.bootstrap_servers,
            topic,
            ((None, json.dumps({"n": i}).encode(), 0) for i in numbers),
        )

    produce(range(10))
    out, ckpt = tmp_path / "out.txt", tmp_path / "ckpt"
    query = start_to_file(
        bridge,
        broker,
        topic,
        out,
        ckpt,
        processingTime="100 milliseconds",
        minOffsetsPerTrigger="1000",
        maxTriggerDelay="4s",
    )
    try:
        # the first batch is never held back (as in Spark)
        wait_for(lambda: lines(out) == list(range(10)), 120, "the first 10 records")
        produce(range(10, 15))

        def batches() -> list[Any]:
            return [p for p in query.recentProgress if p["numInputRows"] > 0]

        wait_for(lambda: len(batches()) == 2, 120, "the batch of 5 records after the delay")
        assert lines(out) == list(range(15))
        # 5 records are fewer than 1000: they wait for maxTriggerDelay (4 s) since the last
        # batch was planned; the trigger's timestamp is taken just before its planning
        assert [p["numInputRows"] for p in batches()] == [10, 5]
        first, second = (
            dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")) for p in batches()
        )
        assert (second - first).total_seconds() >= 3.5
    finally:
        query.stop()
