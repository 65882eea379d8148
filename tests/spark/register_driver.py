"""A driver script as a user writes it: a plain local SparkSession (no connectrt helper, no
PYSPARK_PYTHON set by it), ``register(spark)``, one batch read.

``python tests/spark/register_driver.py BOOTSTRAP TOPIC`` prints ``ROWS <n>``, or
``REGISTER FAILED <message>`` and exits with status 3.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from connectrt.spark.datasource import register
from connectrt.spark.python_env import WorkerEnvironmentError


def main() -> int:
    bootstrap, topic = sys.argv[1:3]
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    try:
        try:
            register(spark)
        except WorkerEnvironmentError as e:
            print(f"REGISTER FAILED {e}", flush=True)
            return 3
        df = (
            spark.read.format("connectrt")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("value.converter.schemas.enable", "false")
            .load()
        )
        print(f"ROWS {df.count()}", flush=True)
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
