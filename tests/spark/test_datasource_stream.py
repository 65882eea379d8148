"""Streaming read with a kill -9 of the driver and a restart from the same checkpoint.

A separate driver process streams a topic through the bridge into the JDBC sink (SQLite,
exactly-once mode, plain inserts: a duplicate would be a second row). It is killed with
SIGKILL mid-stream; the test then restarts the same query on the same checkpoint and checks
that every record is in the table exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic
from tests.spark.bridge_helpers import produce_raw
from tests.spark.stream_driver import start_query

pytestmark = [pytest.mark.spark, pytest.mark.integration]

N = 1500
KILL_AFTER = 250
ROW = {"type": "struct", "fields": [{"field": "n", "type": "int32", "optional": False}]}
ROOT = Path(__file__).resolve().parents[2]


def count(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("events"):
                return 0
            return int(conn.execute(sa.text('SELECT count(*) FROM "events"')).scalar_one())
    finally:
        engine.dispose()


def test_kill_9_of_the_driver_and_restart_loses_and_duplicates_nothing(
    spark: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("stream")
    create_topic(broker.bootstrap_servers, topic, 2)
    produce_raw(
        broker.bootstrap_servers,
        topic,
        (
            (None, json.dumps({"schema": ROW, "payload": {"n": i}}).encode(), i % 2)
            for i in range(N)
        ),
    )
    db = tmp_path / "events.db"
    args = [broker.bootstrap_servers, topic, str(tmp_path / "ckpt"), f"sqlite:///{db}", "eos"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    driver_log = tmp_path / "driver.log"
    with driver_log.open("wb") as log:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.stream_driver", *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # A new driver starts a JVM, a SparkSession and the query before its first row: 15-30 s
        # at a load of 3-5, far more when the machine is busier still.
        deadline = time.monotonic() + 300
        while count(f"sqlite:///{db}") < KILL_AFTER:
            assert driver.poll() is None, (
                "the driver process exited on its own; the end of its output:\n"
                + driver_log.read_text("utf-8", errors="replace")[-4000:]
            )
            assert time.monotonic() < deadline, (
                f"the streaming query did not write {KILL_AFTER} rows in 300 s"
            )
            time.sleep(0.2)
        family = psutil.Process(driver.pid).children(recursive=True)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)
    psutil.wait_procs(family, timeout=30)  # the JVM exits once its gateway's stdin closes
    at_kill = count(f"sqlite:///{db}")
    assert KILL_AFTER <= at_kill < N  # killed mid-stream

    query = start_query(spark, args, available_now=True)
    try:
        assert query.awaitTermination(180)  # type: ignore[attr-defined]
        assert query.exception() is None  # type: ignore[attr-defined]
    finally:
        query.stop()  # type: ignore[attr-defined]  # a no-op once it has terminated

    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text('SELECT src_partition, src_offset, n FROM "events"')).all()
    finally:
        engine.dispose()
    assert len(rows) == N  # nothing lost, nothing duplicated
    assert sorted(r[2] for r in rows) == list(range(N))
    assert {(r[0], r[1]) for r in rows} == {(i % 2, i // 2) for i in range(N)}


def test_stream_from_latest_delivers_only_later_records_to_the_file_sink(
    spark: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    topic = unique_name("latest")
    create_topic(broker.bootstrap_servers, topic, 2)

    def produce(numbers: range) -> None:
        produce_raw(
            broker.bootstrap_servers,
            topic,
            (
                (None, json.dumps({"schema": ROW, "payload": {"n": i}}).encode(), i % 2)
                for i in numbers
            ),
        )

    produce(range(20))  # before the query: skipped by startingOffsets=latest
    out = tmp_path / "out.txt"
    from connectrt.spark.datasource import register

    register(spark)
    query = (
        spark.readStream.format("connectrt")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .option("startingOffsets", "latest")
        .load()
        .selectExpr("CAST(value.n AS STRING) AS line")
        .writeStream.format("connectrt")
        .option("connector.class", "FileStreamSink")
        .option("file", str(out))
        .option("value.column", "line")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()  # batch 0 fixes the starting offsets
        produce(range(20, 30))
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(int(line) for line in out.read_text().splitlines()) == list(range(20, 30))
