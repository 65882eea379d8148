"""The SparkSession a Spark worker runs on, built from its ``spark.*`` worker properties.

Under ``spark-submit`` the session comes from spark-submit's settings; run directly, the
worker properties' ``spark.*`` keys build it (``spark.master`` defaults to ``local[*,4]``: all
cores, 4 attempts per task).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from connectrt.spark.config import spark_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark_session_from_props"]


def spark_session_from_props(props: Mapping[str, str]) -> SparkSession:
    """Get or create the SparkSession the ``spark.*`` worker properties describe."""
    conf = spark_conf(props)
    master = conf.get("spark.master") or os.environ.get("MASTER")
    if (master or "local").startswith("local"):
        # Local executors are this machine's Python workers: run them with this interpreter.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(conf.pop("spark.app.name", "connectrt"))
    if "spark.master" not in conf and "PYSPARK_GATEWAY_PORT" not in os.environ:
        # No spark-submit and no master given: all cores, retries as on a cluster.
        builder = builder.master("local[*,4]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
