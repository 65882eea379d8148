"""The console's status fragment of a share-group sink (issue 37): the share group it names
(``"share_group"`` of ``GET /connectors/{name}/status``) and each task's acknowledgement
counters, taken from the task's metrics snapshot; a classic sink shows neither."""

from __future__ import annotations

from typing import Any

from connectrt.rest.console.routes import _templates
from connectrt.rest.console.views import share_counters
from connectrt.runtime.metrics import TaskMetrics


def _status(share_group: str | None, share: dict[str, int] | None) -> dict[str, Any]:
    """A status in the wire shape of ``GET /connectors/{name}/status`` plus the per-task
    metrics :func:`connectrt.rest.console.views.connector_status` adds."""
    status: dict[str, Any] = {
        "name": "orders-sink",
        "type": "sink",
        "connector": {"state": "RUNNING", "worker_id": "w1:8083"},
        "tasks": [
            {
                "id": 0,
                "state": "RUNNING",
                "worker_id": "w1:8083",
                "records": 17,
                "dlq": 0,
                "partition_lag": [],
                "share": share,
            }
        ],
    }
    if share_group is not None:
        status["share_group"] = share_group
    return status


def _render(status: dict[str, Any]) -> str:
    return _templates.env.get_template("_status.html").render(name=status["name"], status=status)


def test_share_counters_come_from_the_task_metrics_snapshot() -> None:
    metrics = TaskMetrics("orders-sink", 0)
    metrics.share_acquired, metrics.share_accepted = 17, 12
    metrics.share_released, metrics.share_rejected, metrics.share_archived = 4, 1, 2
    assert share_counters(metrics.snapshot()) == {
        "acquired": 17,
        "accepted": 12,
        "released": 4,
        "rejected": 1,
    }
    assert share_counters(None) is None


def test_a_share_group_sink_shows_its_group_and_task_counters() -> None:
    counters = {"acquired": 17, "accepted": 12, "released": 4, "rejected": 1}
    html = _render(_status("connect-orders-sink", counters))
    assert 'class="share-group">Share group <code>connect-orders-sink</code>' in html
    assert "acquired 17 · accepted 12 · released 4 · rejected 1" in html


def test_a_classic_sink_shows_no_share_group() -> None:
    html = _render(_status(None, None))
    assert "share-group" not in html
    assert "acquired" not in html
    assert '<tr data-task="0">' in html
