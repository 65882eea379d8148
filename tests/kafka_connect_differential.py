"""Running the Kafka Connect differential: both sides on one broker, a scenario on both at once.

:func:`running_sides` starts one Kafka Connect 4.4 JVM and one connectrt worker (in parallel;
the JVM takes the longer) on ``bootstrap``, both with the same extra client settings, and
yields their :class:`~tests.kafka_connect_rest_support.Side` pair; it skips the test when Kafka
Connect cannot run here and stops both on the way out. :func:`replay` runs one scenario of
:mod:`tests.kafka_connect_rest_support` on both sides, each on a thread of its own, and returns
the compared results with each difference's reason from ``DELIBERATE`` (``""`` when none).
Used by the plaintext differential (``test_kafka_connect_rest_diff.py``) and its SASL_SSL rerun
(``test_secured_reruns.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

from connectrt.errors import ConnectError
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_connect import KafkaConnect
from connectrt.testing.rest import RestWorker, rest_worker_props, start_rest_worker
from tests.kafka_connect_rest_reasons import DELIBERATE
from tests.kafka_connect_rest_support import SCENARIOS, Side, compare, run_scenario

__all__ = ["replay", "running_sides"]


@contextmanager
def running_sides(
    bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    settings: Mapping[str, str] | None = None,
    keep_log: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[Side, Side]]:
    """(Kafka Connect, connectrt) on ``bootstrap``, each with its own prefix and scratch
    folder, both configured with ``settings`` (client security, say); Kafka Connect's log is
    kept (and named) when ``keep_log()`` says so at the end."""
    extra = dict(settings or {})
    connect = KafkaConnect(bootstrap, properties=extra)
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(connect.start)
        worker: RestWorker | None = None
        try:
            worker = start_rest_worker(bootstrap, rest_worker_props(bootstrap, **extra))
            started.result()
        except (JavaUnavailable, ConnectError) as exc:
            if worker is not None:
                worker.stop()
            connect.stop()
            pytest.skip(f"Kafka Connect cannot run here: {exc}")
    run = uuid.uuid4().hex[:6]
    kafka = Side("Kafka Connect", connect.url, f"kc{run}", tmp_path_factory.mktemp("kc"))
    ours = Side("connectrt", worker.url, f"cr{run}", tmp_path_factory.mktemp("cr"))
    try:
        yield kafka, ours
    finally:
        kafka.http.close()
        ours.http.close()
        worker.stop()
        if keep_log():
            connect.keep_data = True
            print(f"Kafka Connect's log kept: {connect.log_path}")
        connect.stop()


def replay(scenario: str, kafka: Side, ours: Side) -> list[dict[str, Any]]:
    """The results of ``scenario`` on both sides (see
    :func:`~tests.kafka_connect_rest_support.compare`), each difference with a ``reason``."""
    steps = SCENARIOS[scenario]
    with ThreadPoolExecutor(2) as pool:
        on_kafka = pool.submit(run_scenario, kafka, steps)
        on_ours = pool.submit(run_scenario, ours, steps)
        kafka_answers, our_answers = on_kafka.result(), on_ours.result()
    results = compare(scenario, steps, (kafka, kafka_answers), (ours, our_answers))
    for result in results:
        if not result["same"]:
            result["reason"] = DELIBERATE.get(result["id"], "")
    return results
