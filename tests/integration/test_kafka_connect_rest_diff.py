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
from collections.abc import Iterator
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.kafka_connect import KAFKA_CONNECT_VERSION
from tests.kafka_connect_differential import replay, running_sides
from tests.kafka_connect_rest_reasons import DELIBERATE, result_key
from tests.kafka_connect_rest_support import (
    PAGE,
    RESULTS,
    SCENARIOS,
    Side,
    render_section,
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

    def keep_log() -> bool:
        return bool(request.session.testsfailed)

    with running_sides(broker.bootstrap_servers, tmp_path_factory, keep_log=keep_log) as both:
        yield both


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_answers_as_kafka_connect(sides: tuple[Side, Side], scenario: str) -> None:
    results = replay(scenario, *sides)
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
