"""Read what the object storage sink wrote with Spark: one row per day, orders and amount.

Usage: python examples/objectstore_spark.py /data/lake/topics/orders
(for S3, an s3a:// path and Spark's hadoop-aws package and credentials instead).
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def daily_totals(spark: SparkSession, path: str) -> DataFrame:
    # The sink's Parquet schema is the Connect schema: `at` is a timestamp, `amount` a
    # decimal, `customer` a struct; the partition=<p> directories become a `partition` column.
    orders = spark.read.parquet(path)
    return (
        orders.groupBy(F.to_date("at").alias("day"))
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("amount"))
        .orderBy("day")
    )


if __name__ == "__main__":
    session = SparkSession.builder.master("local[2]").getOrCreate()
    daily_totals(session, sys.argv[1]).show()
    session.stop()
