"""The compatibility page's generated section is the committed results of the Kafka Connect
differential (``tests/integration/test_kafka_connect_rest_diff.py``), rendered: edit neither by
hand; rerun the differential with ``CONNECTRT_UPDATE_REST_DIFF=1`` to rewrite both."""

from __future__ import annotations

import json

from tests.kafka_connect_rest_support import PAGE, RESULTS, page_section, render_section


def test_page_is_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text("utf-8"))
    assert page_section(PAGE) == render_section(results), (
        "docs/reference/kafka-connect-compatibility.md's rest-differential section is not "
        "tests/integration/kafka_connect_rest_results.json rendered: rerun the differential "
        "with CONNECTRT_UPDATE_REST_DIFF=1"
    )


def test_every_difference_has_its_reason() -> None:
    results = json.loads(RESULTS.read_text("utf-8"))
    assert results["steps"], "no steps in the committed results"
    assert [s["id"] for s in results["steps"] if not s["same"] and not s.get("reason")] == []
