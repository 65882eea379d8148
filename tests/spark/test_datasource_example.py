"""The end-to-end example, run in-process on the session's SparkSession and broker:
SQLite table -> JDBC source (connectrt worker) -> Kafka -> Spark streaming totals -> JDBC
sink through the bridge; the totals must equal the same aggregation on the source table."""

from __future__ import annotations

import importlib.util
import sqlite3
import time
from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.spark.datasource import register

pytestmark = [pytest.mark.spark, pytest.mark.integration]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_jdbc_pipeline.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_jdbc_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_pipeline_totals_match_the_source_table(
    spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    example = load_example()
    shop_db, totals_db = tmp_path / "shop.db", tmp_path / "totals.db"
    example.create_orders(shop_db, 200)
    process, stop, thread = example.start_worker(broker.bootstrap_servers, shop_db, tmp_path)

    def produced() -> int:
        runners = process.herder.worker.runners("shop-orders-source")
        return sum(r.metrics.records_produced for r in runners.values())

    try:
        example.wait_for_topic(process)
        register(spark)
        query = example.start_query(spark, broker.bootstrap_servers, totals_db, tmp_path / "ck")
        try:
            query.processAllAvailable()
            with sqlite3.connect(shop_db) as conn:
                example.insert_orders(conn, 50)  # new rows while the query runs
            deadline = time.monotonic() + 60
            while produced() < 250:
                assert time.monotonic() < deadline, f"the source produced {produced()} of 250"
                time.sleep(0.1)
            query.processAllAvailable()
        finally:
            query.stop()
        assert example.compare(shop_db, totals_db)
        with sqlite3.connect(totals_db) as conn:
            orders = conn.execute('SELECT sum(orders) FROM "customer_totals"').fetchone()[0]
        assert orders == 250
    finally:
        stop.set()
        thread.join(30)
