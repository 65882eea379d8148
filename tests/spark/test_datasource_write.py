"""df.write.format("connectrt"): Spark rows through real sink connectors (file, JDBC).

JDBC on a real SQLite file and on the session's PostgreSQL server; the exactly-once mode makes
a replayed batch id a no-op.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from connectrt.broker import EmbeddedBroker
from connectrt.spark.datasource import register
from connectrt.testing.harness import read_topic
from connectrt.testing.postgres import PostgresServer

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType(), False),
        T.StructField("name", T.StringType(), True),
        T.StructField("amount", T.DecimalType(10, 2), True),
        T.StructField("day", T.DateType(), True),
        T.StructField("at", T.TimestampType(), True),
    ]
)
N = 30


def rows(start: int = 0, n: int = N) -> list[tuple[Any, ...]]:
    return [
        (
            i,
            None if i % 7 == 0 else f"name-{i}",
            decimal.Decimal(i) / 4,
            dt.date(2026, 3, 1) + dt.timedelta(days=i),
            dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC) + dt.timedelta(minutes=i),
        )
        for i in range(start, start + n)
    ]


def test_write_through_the_file_sink(spark: SparkSession, tmp_path: Path) -> None:
    register(spark)
    out = tmp_path / "out.txt"
    df = spark.createDataFrame([(f"line {i}",) for i in range(N)], "value string").repartition(3)
    (
        df.write.format("connectrt")
        .option("connector.class", "FileStreamSink")
        .option("file", str(out))
        .option("value.column", "value")
        .mode("append")
        .save()
    )
    assert sorted(out.read_text().splitlines()) == sorted(f"line {i}" for i in range(N))


def test_unknown_connector_class_is_a_clear_error(spark: SparkSession) -> None:
    register(spark)
    df = spark.createDataFrame([(1,)], "n int")
    with pytest.raises(Exception, match="NoSuchSink"):
        df.write.format("connectrt").option("connector.class", "NoSuchSink").mode("append").save()


def write_jdbc(
    spark: SparkSession, url: str | tuple[str, str], table: str, data: list[Any], **extra: str
) -> None:
    url, user = url if isinstance(url, tuple) else (url, "")
    writer = (
        spark.createDataFrame(data, SCHEMA)
        .repartition(2)
        .write.format("connectrt")
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", url)
        .option("topic", table)
        .option("auto.create", "true")
        .mode("append")
    )
    if user:
        writer = writer.option("connection.user", user)
    for k, v in extra.items():
        writer = writer.option(k, v)
    writer.save()


def table_rows(url: str, table: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            t = sa.Table(table, sa.MetaData(), autoload_with=conn)
            return [tuple(r) for r in conn.execute(sa.select(t).order_by(t.c.id))]
    finally:
        engine.dispose()


def check_upserts(
    spark: SparkSession, url: str | tuple[str, str], sa_url: str, name: Callable[[str], str]
) -> None:
    """Upserts keyed by the value's id: writing twice leaves one row per id, the new data."""
    table = name("orders")
    upsert = {"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"}
    write_jdbc(spark, url, table, rows(), **upsert)
    changed = [(i, f"new-{i}", *rest) for i, _, *rest in rows()]
    write_jdbc(spark, url, table, changed, **upsert)
    got = table_rows(sa_url, table)
    assert [r[0] for r in got] == list(range(N))
    assert [r[1] for r in got] == [f"new-{i}" for i in range(N)]
    assert [decimal.Decimal(str(r[2])) for r in got] == [decimal.Decimal(i) / 4 for i in range(N)]


def check_exactly_once(
    spark: SparkSession, url: str | tuple[str, str], sa_url: str, name: Callable[[str], str]
) -> None:
    """exactly.once.enabled: a replayed batch id writes nothing, a new one appends."""
    table = name("events")
    eos = {"exactly.once.enabled": "true", "name": name("bridge")}
    write_jdbc(spark, url, table, rows(), **eos, **{"batch.id": "7"})
    write_jdbc(spark, url, table, rows(), **eos, **{"batch.id": "7"})
    assert sorted(r[0] for r in table_rows(sa_url, table)) == list(range(N))
    write_jdbc(spark, url, table, rows(N, 5), **eos, **{"batch.id": "8"})
    assert sorted(r[0] for r in table_rows(sa_url, table)) == list(range(N + 5))


def test_write_through_the_jdbc_sink_on_sqlite(
    spark: SparkSession, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    register(spark)
    db = tmp_path / "bridge.db"
    names = iter(range(100))
    url, sa_url = f"jdbc:sqlite:{db}", f"sqlite:///{db}"
    check_upserts(spark, url, sa_url, lambda p: f"{p}_{next(names)}")
    check_exactly_once(spark, url, sa_url, lambda p: f"{p}_{next(names)}")


@pytest.mark.postgres
def test_write_through_the_jdbc_sink_on_postgresql(
    spark: SparkSession, postgres: PostgresServer
) -> None:
    database = f"bridge_{uuid.uuid4().hex[:8]}"
    url = postgres.create_database(database)
    names = iter(range(100))
    register(spark)
    target = (postgres.jdbc_url(database), postgres.user)
    # upserts are covered on SQLite; here the exactly-once offsets table on PostgreSQL
    check_exactly_once(spark, target, url, lambda p: f"{p}_{next(names)}")


def test_records_the_sink_rejects_follow_errors_tolerance(
    spark: SparkSession,
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    register(spark)
    db = tmp_path / "rejects.db"
    # a string value: the JDBC sink writes structs only and reports each record (KIP-610)
    df = spark.createDataFrame([(f"text {i}",) for i in range(5)], "line string")

    def write(**extra: str) -> None:
        writer = (
            df.write.format("connectrt")
            .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
            .option("connection.url", f"jdbc:sqlite:{db}")
            .option("value.column", "line")
            .option("topic", "lines")
            .option("auto.create", "true")
            .mode("append")
        )
        for k, v in extra.items():
            writer = writer.option(k, v)
        writer.save()

    with pytest.raises(Exception, match="writes struct values"):
        write()
    dlq = unique_name("write-dlq")
    write(
        **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
            "kafka.bootstrap.servers": broker.bootstrap_servers,
        }
    )
    dead = [json.loads(v or b"{}") for _, v in read_topic(broker.bootstrap_servers, dlq)[0]]
    assert sorted(d["value"] for d in dead) == [f"text {i}" for i in range(5)]
    assert {d["topic"] for d in dead} == {"lines"}
