"""A small streaming query run as its own driver process (killed with -9 by a test).

``python -m tests.spark.stream_driver BOOTSTRAP TOPIC CHECKPOINT DB_URL CONNECTOR_NAME``
streams TOPIC through the bridge into the JDBC sink (exactly-once mode) until killed.
"""

from __future__ import annotations

import sys

from connectrt.spark.datasource import register
from connectrt.testing.spark import local_spark_session


def start_query(spark: object, argv: list[str], available_now: bool = False) -> object:
    """The query both the driver process and the restarting test run (same plan).

    The driver reads small micro-batches (100 records) so that it is killed mid-stream; the
    restart (``available_now``) replays the logged batch, then takes the rest in one batch.
    """
    bootstrap, topic, checkpoint, db_url, name = argv
    register(spark)  # type: ignore[arg-type]
    df = (
        spark.readStream.format("connectrt")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("value.converter.schemas.enable", "true")
        .option("maxOffsetsPerTrigger", "1000000" if available_now else "100")
        .load()
        .selectExpr("partition AS src_partition", "offset AS src_offset", "value.n AS n")
    )
    writer = (
        df.writeStream.format("connectrt")
        .option("checkpointLocation", checkpoint)
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", db_url)
        .option("topic", "events")
        .option("auto.create", "true")
        .option("exactly.once.enabled", "true")
        .option("name", name)
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="0 seconds")
    return writer.start()


def main() -> None:
    spark = local_spark_session("local[2,3]", app_name="bridge-stream-driver")
    query = start_query(spark, sys.argv[1:])
    print("started", flush=True)
    query.awaitTermination()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
