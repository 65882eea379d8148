"""Spark reads what the object storage sink wrote: typed columns and the right row count.

A real worker on the embedded broker writes a 4-partition topic as Parquet into a local
directory; the session's ``local[2]`` SparkSession reads the directory (partition=<p> becomes a
column by Spark's partition discovery) and sees a timestamp, a decimal and a nested struct.
"""

from __future__ import annotations

import decimal
import runpy
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic
from tests.docs_support import ROOT
from tests.objectstore_support import T0, count_records, produce

pytestmark = [pytest.mark.spark, pytest.mark.integration]

RECORDS = 1_000
PARTITIONS = 4


def test_spark_reads_the_parquet_objects_with_their_types(
    spark: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    import pyarrow.fs as pafs

    topic = unique_name("ospark")
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, RECORDS, PARTITIONS)
    root = tmp_path / "lake"
    with WorkerHarness(bootstrap) as h:
        try:
            h.start_connector(
                "ospark",
                {
                    "connector.class": "S3SinkConnector",
                    "topics": topic,
                    "store.url": root.as_uri(),
                    "flush.size": "50",
                    "format.class": "parquet",
                },
            )
            h.wait_for_tasks("ospark", State.RUNNING, timeout=60)
            h.wait_until(
                lambda: (
                    sum(count_records(pafs.LocalFileSystem(), str(root / "topics")).values())
                    >= RECORDS
                ),
                120,
                "every record in the Parquet objects",
            )
        finally:
            h.running.delete_connector("ospark")

    df = spark.read.parquet(str(root / "topics" / topic))
    fields = {f.name: f.dataType for f in df.schema.fields}
    assert fields["n"] == T.LongType()
    assert fields["at"] == T.TimestampType()
    assert fields["amount"] == T.DecimalType(38, 2)
    customer = fields["customer"]
    assert isinstance(customer, T.StructType)
    assert (
        customer["name"].dataType == T.StringType() and customer["tier"].dataType == T.IntegerType()
    )
    assert fields["partition"] == T.IntegerType()  # from the partition=<p> directories
    assert df.count() == RECORDS
    assert df.select(F.countDistinct("n")).first()[0] == RECORDS
    row = df.where(F.col("n") == 12).withColumn("at_ms", F.unix_millis("at")).first()
    assert row is not None
    assert row["amount"] == decimal.Decimal("0.89")  # (12 * 7 + 5) cents
    assert row["at_ms"] == T0 + 12
    assert row["customer"]["name"] == "c12" and row["customer"]["tier"] is None
    assert row["partition"] == 0 and row["p"] == 0
    assert df.where(F.col("customer").isNull()).count() == RECORDS // 5

    # the docs' example (docs/connectors/object-storage.md) on the same objects
    example = runpy.run_path(str(ROOT / "examples" / "objectstore_spark.py"))
    days = example["daily_totals"](spark, str(root / "topics" / topic)).collect()
    assert sum(day["orders"] for day in days) == RECORDS
    expected = sum(decimal.Decimal(n * 7 + 5) / 100 for n in range(RECORDS))
    assert sum(day["amount"] for day in days) == expected
