"""Spark (``local[2]``) reads what the Iceberg sink wrote, with typed columns.

The task writes an append-only table (timestamps, decimals, dates, a nested struct, an array),
auto-created partitioned by ``days(at), bucket(2, id)``, into a pyiceberg SQL catalog on SQLite;
Spark reads the data files of the current snapshot
through the guide's ``read_data_files`` example (Iceberg's Spark runtime is not installed here:
the guide's catalog example is not run).
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import load_catalog

from connectors.iceberg import IcebergSinkTask
from connectrt.api import SinkRecord, SinkRecordBatch, TopicPartition
from connectrt.data import Date, Decimal, SchemaBuilder, Struct, Timestamp
from connectrt.testing.contexts import RecordingSinkTaskContext
from tests.docs_support import load_example

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]

INNER = SchemaBuilder.struct().field("x", SchemaBuilder.int32()).optional().build()
SCHEMA = (
    SchemaBuilder.struct()
    .field("id", SchemaBuilder.int64())
    .field("amount", Decimal.builder(2))
    .field("at", Timestamp.builder())
    .field("day", Date.builder().optional())
    .field("inner", INNER)
    .field("tags", SchemaBuilder.array(SchemaBuilder.string()).optional())
    .build()
)
AT = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def test_spark_reads_the_sink_output_with_typed_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    from pyspark.sql import types as T

    props = {
        "name": "ice-spark",
        "iceberg.tables": "db.events",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.tables.default-partition-by": "days(at), bucket(2, id)",
        "iceberg.catalog.type": "sql",
        "iceberg.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}",
        "iceberg.catalog.warehouse": f"file://{tmp_path / 'warehouse'}",
        "iceberg.control.commit.interval-ms": "1",
    }
    task = IcebergSinkTask()
    task.initialize(RecordingSinkTaskContext(props))
    task.start(props)
    try:
        task.open([TopicPartition("events", 0)])
        for first in (0, 50):  # two commits: two data files
            values = [
                Struct(SCHEMA)
                .put("id", i)
                .put("amount", decimal.Decimal(i) / 4)
                .put("at", AT + dt.timedelta(minutes=i))
                .put("day", dt.date(2024, 5, 1) + dt.timedelta(days=i % 3))
                .put("inner", Struct(INNER).put("x", i % 7))
                .put("tags", [f"t{i}"])
                for i in range(first, first + 50)
            ]
            task.put(
                SinkRecordBatch(
                    SinkRecord("events", 0, None, None, SCHEMA, v, first + n)
                    for n, v in enumerate(values)
                )
            )
            task.pre_commit({TopicPartition("events", 0): first + 50})
    finally:
        task.stop()
    catalog = load_catalog(
        "iceberg",
        type="sql",
        uri=props["iceberg.catalog.uri"],
        warehouse=props["iceberg.catalog.warehouse"],
    )
    table = catalog.load_table("db.events")
    assert [f.name for f in table.spec().fields] == ["at_day", "id_bucket"]
    files = [t.file.file_path for t in table.scan().plan_files()]
    assert {f.split("/id_bucket=")[1][0] for f in files} == {"0", "1"}, files
    df = load_example("iceberg-spark-files").read_data_files(spark, table)
    types = {f.name: f.dataType for f in df.schema.fields}
    assert types["id"] == T.LongType()
    assert types["amount"] == T.DecimalType(38, 2)
    assert types["at"] == T.TimestampType()
    assert types["day"] == T.DateType()
    inner = types["inner"]
    assert isinstance(inner, T.StructType)
    assert [(f.name, f.dataType) for f in inner.fields] == [("x", T.IntegerType())]
    assert isinstance(types["tags"], T.ArrayType)
    assert df.count() == 100
    row = df.where("id = 42").collect()[0]
    assert row["amount"] == decimal.Decimal("10.50")
    assert row["inner"]["x"] == 0
    assert row["tags"] == ["t42"]
    assert df.selectExpr("count(distinct id)").collect()[0][0] == 100
