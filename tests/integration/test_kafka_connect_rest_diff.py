"""connectrt's REST API against Kafka Connect 4.4's own, answer for answer.

One Kafka Connect JVM (distributed mode, :mod:`connectrt.testing.kafka_connect`) and one
connectrt worker run on the session's Apache Kafka broker; the scenarios of
:mod:`tests.kafka_connect_rest_support` (lifecycle, pause/stop/resume, restart, the offsets API,
validate, plugins, loggers, topics, not-found and bad-request paths) are replayed against both,
and the normalised status codes and bodies compared step by step.

Every step that differs must be listed in ``DELIBERATE`` with its reason; a listed step that no
longer differs fails too. The results are the committed
``tests/integration/kafka_connect_rest_results.json``, from which the generated section of
``docs/reference/kafka-connect-compatibility.md`` is rendered (``tests/unit/test_kafka_connect_
compat_page.py`` checks the page against the file): a run whose results differ from the file
fails. ``CONNECTRT_UPDATE_REST_DIFF=1`` rewrites both instead.

Needs the Apache Kafka broker (``CONNECTRT_TEST_BROKER=kafka``) and a JDK 17+ (javac).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_connect import KAFKA_CONNECT_VERSION, KafkaConnect
from connectrt.testing.rest import RestWorker, start_rest_worker
from tests.kafka_connect_rest_reasons import DELIBERATE, result_key
from tests.kafka_connect_rest_support import (
    PAGE,
    RESULTS,
    SCENARIOS,
    Side,
    compare,
    render_section,
    run_scenario,
    write_page_section,
)

pytestmark = [pytest.mark.integration, pytest.mark.java]

UPDATE = os.environ.get("CONNECTRT_UPDATE_REST_DIFF") == "1"

_results: dict[str, list[dict[str, Any]]] = {}
_lock = threading.Lock()


@pytest.fixture(scope="module")
def sides(
    broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[Side, Side]]:
    """(Kafka Connect, connectrt), each with its own prefix and scratch folder."""
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("Kafka Connect needs Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    connect = KafkaConnect(broker.bootstrap_servers)
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(connect.start)
        worker: RestWorker | None = None
        try:
            worker = start_rest_worker(broker.bootstrap_servers)
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
        if request.session.testsfailed:
            connect.keep_data = True
            print(f"Kafka Connect's log kept: {connect.log_path}")
        connect.stop()


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_answers_as_kafka_connect(sides: tuple[Side, Side], scenario: str) -> None:
    kafka, ours = sides
    steps = SCENARIOS[scenario]
    with ThreadPoolExecutor(2) as pool:
        on_kafka = pool.submit(run_scenario, kafka, steps)
        on_ours = pool.submit(run_scenario, ours, steps)
        kafka_answers, our_answers = on_kafka.result(), on_ours.result()
    results = compare(scenario, steps, (kafka, kafka_answers), (ours, our_answers))
    for result in results:
        if not result["same"]:
            result["reason"] = DELIBERATE.get(result["id"], "")
    with _lock:
        _results[scenario] = results
    unexplained = [r for r in results if not r["same"] and not r["reason"]]
    stale = [r["id"] for r in results if r["same"] and r["id"] in DELIBERATE]
    assert not unexplained, "differences without a reason in DELIBERATE:\n" + "\n".join(
        json.dumps(r, indent=1) for r in unexplained
    )
    assert not stale, f"steps listed in DELIBERATE that now answer as Kafka Connect: {stale}"


def test_results_are_the_committed_ones() -> None:
    """Runs last in the module: the scenarios' results equal the committed file (from which
    the compatibility page is generated), or are written there under UPDATE."""
    if set(_results) != set(SCENARIOS):
        pytest.skip("not every scenario ran in this session")
    live = {
        "kafka_connect_version": KAFKA_CONNECT_VERSION,
        "steps": [r for name in SCENARIOS for r in _results[name]],
    }
    if UPDATE:
        RESULTS.write_text(json.dumps(live, indent=1, ensure_ascii=False) + "\n", "utf-8")
        write_page_section(render_section(live), PAGE)
    committed = json.loads(RESULTS.read_text("utf-8"))
    # Compared: what the page shows (statuses, where bodies differ, reasons); the short bodies
    # in the file are for reading and may carry timing (a task's state mid-restart).
    live_keys = {result_key(s) for s in live["steps"]}
    changed = sorted(live_keys ^ {result_key(s) for s in committed["steps"]}, key=str)
    assert not changed, (
        "the differential's results changed (review them, then rerun with "
        "CONNECTRT_UPDATE_REST_DIFF=1 to rewrite tests/integration/kafka_connect_rest_results.json "
        f"and the page's generated section): {changed}"
    )
