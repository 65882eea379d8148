"""Prometheus text exposition of the herder's metrics snapshot."""

from __future__ import annotations

from typing import Any

__all__ = ["render_prometheus"]

_STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING")
_COUNTERS = {
    "records_polled": "Records returned by poll() (source) or consumed from Kafka (sink)",
    "records_produced": "Source records acknowledged by Kafka",
    "records_put": "Sink records accepted by put()",
    "records_committed": "Records whose offsets were committed",
    "records_skipped": "Records dropped by transforms or tolerated errors",
    "offset_commits": "Successful offset commits",
    "offset_commit_failures": "Failed or postponed offset commits",
    "errors": "Task failures",
    "retries": "Retried poll()/put() calls after a RetriableError",
    "batches": "Batches processed",
}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_prometheus(snapshot: dict[str, Any]) -> str:
    lines: list[str] = []
    lines += [
        "# HELP connectrt_connector_state 1 for the connector's current state, 0 otherwise.",
        "# TYPE connectrt_connector_state gauge",
    ]
    for name, info in sorted(snapshot["connectors"].items()):
        for state in _STATES:
            value = 1 if info["state"] == state else 0
            lines.append(
                f'connectrt_connector_state{{connector="{_label(name)}",type="{info["type"]}",'
                f'state="{state}"}} {value}'
            )
    lines += [
        "# HELP connectrt_task_state 1 for the task's current state, 0 otherwise.",
        "# TYPE connectrt_task_state gauge",
    ]
    for name, info in sorted(snapshot["connectors"].items()):
        for task, task_state in sorted(info["tasks"].items()):
            for state in _STATES:
                value = 1 if task_state == state else 0
                lines.append(
                    f'connectrt_task_state{{connector="{_label(name)}",task="{task}",'
                    f'state="{state}"}} {value}'
                )
    tasks = snapshot["tasks"]
    for counter, help_text in _COUNTERS.items():
        metric = f"connectrt_task_{counter}_total"
        lines += [f"# HELP {metric} {help_text}.", f"# TYPE {metric} counter"]
        for t in tasks:
            lines.append(
                f'{metric}{{connector="{_label(t["connector"])}",task="{t["task"]}"}} {t[counter]}'
            )
    lines += [
        "# HELP connectrt_task_batch_seconds Time spent converting and delivering batches.",
        "# TYPE connectrt_task_batch_seconds summary",
    ]
    for t in tasks:
        labels = f'connector="{_label(t["connector"])}",task="{t["task"]}"'
        lines.append(f"connectrt_task_batch_seconds_sum{{{labels}}} {t['batch_seconds_total']}")
        lines.append(f"connectrt_task_batch_seconds_count{{{labels}}} {t['batches']}")
    lines += [
        "# HELP connectrt_uptime_seconds Seconds since the worker started.",
        "# TYPE connectrt_uptime_seconds gauge",
        f"connectrt_uptime_seconds {snapshot['uptime_seconds']:.3f}",
    ]
    return "\n".join(lines) + "\n"
