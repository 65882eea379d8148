"""Exactly-once source (KIP-618) with tasks launched over Spark Connect.

The same check as :func:`tests.spark.test_exactly_once_spark.check_killed_attempt`, with the
driver a Spark Connect client (``mapInArrow`` launches in a real Connect server started from
the installed pyspark, ``local[4,3]``): a source task with ``exactly.once.support=required``
and ``transaction.boundary=interval`` whose Python worker dies inside ``poll()`` on attempt 0,
with its interval's transaction open. The server re-runs it; in the committed view computed
from the stored markers, its open transaction is aborted and the records are ``0..N-1``
exactly once, the offsets committed with them transaction by transaction.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from connectrt.broker import EmbeddedBroker
from connectrt.spark.launchers import ConnectLauncher
from tests.spark.test_backend import SparkWorker, remove_connectors, running_spark_worker
from tests.spark.test_exactly_once_spark import check_killed_attempt

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark_connect: SparkSession) -> Iterator[SparkWorker]:
    with running_spark_worker(
        broker, spark_connect, **{"exactly.once.source.support": "enabled"}
    ) as running:
        assert isinstance(running.executor.launcher, ConnectLauncher)
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    """Whatever a test asserted, its connectors are gone afterwards and their slots free."""
    yield
    remove_connectors(worker)


def test_a_killed_attempt_rerun_over_spark_connect_commits_every_record_once(
    worker: SparkWorker,
) -> None:
    check_killed_attempt(worker, "interval", "poll", 3000)
