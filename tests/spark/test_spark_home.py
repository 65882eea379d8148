"""Local test JVMs start from a view of pyspark's distribution without ``python/``, so that
Spark's Python workers import the installed, compiled pyspark rather than ``pyspark.zip``
(``connectrt.testing.spark_home``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectrt.testing.spark_home import local_spark_home, spark_home

pytestmark = [pytest.mark.spark]


def test_the_view_has_the_distribution_but_not_its_python_zips() -> None:
    home, view = spark_home(), local_spark_home()
    assert (home / "python" / "lib" / "pyspark.zip").is_file()  # what Spark would hand out
    assert view != home
    assert not (view / "python").exists()
    for part in ("bin", "jars", "sbin"):
        assert (view / part).resolve() == (home / part).resolve()
    assert (view / "bin" / "spark-submit").is_file()
    assert local_spark_home() == view  # made once


def _pyspark_file(_: Iterator[Any]) -> Iterator[str]:
    import pyspark

    yield pyspark.__file__ or ""


def test_python_workers_import_the_installed_pyspark(spark: SparkSession) -> None:
    [where] = spark.sparkContext.parallelize([0], 1).mapPartitions(_pyspark_file).collect()
    assert ".zip" not in where
    assert where == str(spark_home() / "__init__.py")
