"""Prometheus text exposition of the herder's metrics snapshot."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
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


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _plugin_lines(metrics: Iterable[dict[str, Any]]) -> list[str]:
    """KIP-877 plugin metrics: one gauge family per metric name, ``connectrt_plugin_<name>``
    (non-alphanumerics become ``_``), labelled with the metric's tags in order."""
    families: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        family = "connectrt_plugin_" + re.sub(r"[^a-zA-Z0-9_]", "_", m["name"])
        families.setdefault(family, []).append(m)
    lines: list[str] = []
    for family, members in sorted(families.items()):
        description = next((m["description"] for m in members if m["description"]), "")
        help_text = description or "A metric a plugin registered (KIP-877)."
        lines += [f"# HELP {family} {_help(help_text)}", f"# TYPE {family} gauge"]
        for m in members:
            labels = ",".join(
                f'{re.sub(r"[^a-zA-Z0-9_]", "_", k)}="{_label(v)}"' for k, v in m["tags"].items()
            )
            lines.append(f"{family}{{{labels}}} {_number(m['value'])}")
    return lines


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


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
    stalled = {(c, t) for c, t in snapshot.get("stalled", ())}
    lines += [
        "# HELP connectrt_task_stalled 1 while the task is stuck in one call longer than "
        "task.stall.timeout.ms, 0 otherwise.",
        "# TYPE connectrt_task_stalled gauge",
    ]
    for name, info in sorted(snapshot["connectors"].items()):
        for task in sorted(info["tasks"]):
            value = 1 if (name, task) in stalled else 0
            lines.append(
                f'connectrt_task_stalled{{connector="{_label(name)}",task="{task}"}} {value}'
            )
    lines += _plugin_lines(snapshot.get("plugins", ()))
    lines += [
        "# HELP connectrt_uptime_seconds Seconds since the worker started.",
        "# TYPE connectrt_uptime_seconds gauge",
        f"connectrt_uptime_seconds {snapshot['uptime_seconds']:.3f}",
    ]
    return "\n".join(lines) + "\n"
