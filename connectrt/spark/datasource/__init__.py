"""The Spark DataFrame bridge: Kafka topics as DataFrames, DataFrames into sink connectors.

``register(spark)`` makes ``format("connectrt")`` available to a SparkSession::

    from connectrt.spark.datasource import register

    register(spark)
    df = (spark.read.format("connectrt")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "orders")
          .option("value.converter", "org.apache.kafka.connect.json.JsonConverter")
          .load())
    (df.select("value.*").write.format("connectrt")
       .option("connector.class", "FileStreamSink").option("file", "out.txt").save())

Reading: :mod:`.source` (options, schema planning), :mod:`.offsets` (partition ends),
:mod:`.decode` (converters, transforms, ``errors.*``), :mod:`.schema` (type mapping).
Writing: :mod:`.sink` (the writers), :mod:`.sink_plan` (options -> plan), :mod:`.sink_task`
(rows -> sink task), :mod:`.sink_context`. Needs pyspark >= 4.2 and pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMAT", "register"]

FORMAT = "connectrt"


def register(spark: SparkSession, *, check: bool | None = None) -> str:
    """Register the ``connectrt`` data source with ``spark`` (a classic or a Spark Connect
    session); returns the format name.

    Makes sure Spark's Python workers can import connectrt first
    (:mod:`connectrt.spark.python_env`): a classic ``local`` session whose workers would run
    the default ``python3`` gets this interpreter instead; otherwise (Spark Connect, a
    cluster, an explicit ``PYSPARK_PYTHON``) one tiny job checks the workers and a
    :class:`~connectrt.spark.python_env.WorkerEnvironmentError` says what to set.
    ``check=True`` always runs that job, ``check=False`` never does.
    """
    from connectrt.spark.python_env import adopt_local_workers, check_workers

    adopted = adopt_local_workers(spark)
    if check if check is not None else not adopted:
        check_workers(spark)
    from connectrt.spark.datasource.source import ConnectrtDataSource

    spark.dataSource.register(ConnectrtDataSource)
    return FORMAT
