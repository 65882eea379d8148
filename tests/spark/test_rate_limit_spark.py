"""``task.rate.limit.records.per.sec`` on the Spark executor, with a real local SparkSession,
broker and REST server: the tasks run in Spark's Python workers, built there by the same runner
factory as on the threads and processes executors, so the limit holds there too.

The same measurement as ``tests/integration/test_task_rate_limit.py`` (:mod:`tests.rate_support`):
the committed source offset and the committed sink consumer offset read through REST over 10 s
after a warm-up, within 10% of the limit (upper bound strictly; the lower one too, see
:func:`~tests.rate_support.assert_within_10_percent`). Spark Connect runs its tasks through the
same :func:`~connectrt.spark.executor_task.run_task`; its source is measured in
``tests/spark/test_connect_backend.py``, next to the Spark Connect server it needs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from tests.rate_support import (
    WINDOW_S,
    assert_within_10_percent,
    measured_rate,
    sink_committed,
    source_committed,
)
from tests.spark.test_backend import SparkWorker, remove_connectors, running_spark_worker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"
RATE = 2000.0
WARM_UP = int(2 * RATE)


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, spark: SparkSession) -> Iterator[SparkWorker]:
    with running_spark_worker(broker, spark) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: SparkWorker) -> Iterator[None]:
    yield
    remove_connectors(worker)


def _create(worker: SparkWorker, name: str, config: dict[str, str]) -> None:
    response = worker.http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text


def test_a_spark_source_is_held_to_its_records_rate(worker: SparkWorker):
    run = os.urandom(4).hex()
    name, topic = f"rate-source-{run}", f"rate-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    _create(
        worker,
        name,
        {
            "connector.class": "tests.plugins.sequence.SequenceSource",
            "tasks.max": "1",
            "topic": topic,
            "key.converter": STRING,
            "value.converter": STRING,
            "batch.size": "100",
            "batch.interval.ms": "0",  # unlimited: the task could do far more than RATE
            "task.rate.limit.records.per.sec": str(RATE),
        },
    )
    rate = measured_rate(
        source_committed(worker.http, name), WARM_UP, "the committed source offset"
    )
    assert_within_10_percent(rate, RATE)


def test_a_spark_sink_is_held_to_its_records_rate(worker: SparkWorker):
    run = os.urandom(4).hex()
    name, topic = f"rate-sink-{run}", f"rate-in-{run}"
    create_topic(worker.bootstrap, topic, partitions=1)
    total = int(RATE * (WINDOW_S + 25))  # more than the test can consume at RATE
    produce(worker.bootstrap, topic, (f"v{i}" for i in range(total)))
    _create(
        worker,
        name,
        {
            "connector.class": "tests.plugins.hanging.HangingSink",
            "tasks.max": "1",
            "topics": topic,
            "store.id": run,
            "key.converter": STRING,
            "value.converter": STRING,
            "task.rate.limit.records.per.sec": str(RATE),
        },
    )
    committed = sink_committed(worker.http, name)
    rate = measured_rate(committed, WARM_UP, "the committed sink offset")
    assert committed() < total, "the sink ran out of records inside the window"
    assert_within_10_percent(rate, RATE)
