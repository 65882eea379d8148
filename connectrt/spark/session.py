"""The SparkSession a Spark worker runs on, built from its ``spark.*`` worker properties.

Under ``spark-submit`` the session comes from spark-submit's settings, the worker properties'
``spark.*`` keys adding only what spark-submit does not set; run directly, those keys build it
(``spark.master`` defaults to ``local[*,4]``: all cores, 4 attempts per task). With
``spark.remote=sc://host:port`` the session is a Spark Connect client of that server instead:
the server's own settings (master, executors, Python) apply, only ``spark.sql.*`` keys are
passed on as session settings, and other ``spark.*`` keys are ignored with a warning.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from connectrt.spark.config import spark_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark_session_from_props"]

log = logging.getLogger(__name__)


def spark_session_from_props(props: Mapping[str, str]) -> SparkSession:
    """Get or create the SparkSession the ``spark.*`` worker properties describe."""
    conf = spark_conf(props)
    remote = conf.pop("spark.remote", "").strip()
    if remote:
        return _connect_session(remote, conf)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if submitted:
        conf = _not_submitted(conf)
    master = conf.get("spark.master") or os.environ.get("MASTER")
    if not submitted and (master or "local").startswith("local"):
        # Local executors are this machine's Python workers: run them with this interpreter.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(conf.pop("spark.app.name", "connectrt"))
    if "spark.master" not in conf and not submitted:
        # No spark-submit and no master given: all cores, retries as on a cluster.
        builder = builder.master("local[*,4]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _not_submitted(conf: dict[str, str]) -> dict[str, str]:
    """Under spark-submit: the worker properties' ``spark.*`` keys that spark-submit's
    settings (``--master``, ``--conf``, ``--archives``, its defaults file) do not set, so that
    the command line wins over the file (a file's ``spark.master=local[4,3]`` does not turn a
    cluster submission into a local run)."""
    from pyspark import SparkConf, SparkContext

    # Joins spark-submit's JVM; without it SparkConf() would be an empty Python-side conf.
    SparkContext._ensure_initialized()
    launched = SparkConf()  # spark-submit's settings (the JVM's system properties)
    kept = {k: v for k, v in conf.items() if not launched.contains(k)}
    overridden = sorted(k for k in conf if k not in kept and launched.get(k) != conf[k])
    if overridden:
        log.info(
            "spark-submit's settings win over the worker properties' %s", ", ".join(overridden)
        )
    if launched.contains("spark.app.name"):
        kept["spark.app.name"] = str(launched.get("spark.app.name"))
    return kept


def _connect_session(remote: str, conf: dict[str, str]) -> SparkSession:
    from pyspark.sql import SparkSession

    ignored = sorted(k for k in conf if not k.startswith("spark.sql."))
    if ignored:
        log.warning(
            "spark.remote is set: the Spark Connect server's own settings apply; ignoring %s",
            ", ".join(ignored),
        )
    builder = SparkSession.builder.remote(remote)
    for key, value in conf.items():
        if key.startswith("spark.sql."):
            builder = builder.config(key, value)
    return builder.getOrCreate()
