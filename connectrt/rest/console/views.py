"""What the console's templates show, read from the herder in the REST API's own shapes.

Every function reads through the same herder calls as the REST routes and shapes with
:mod:`connectrt.rest.models`, so the console shows exactly what ``GET /connectors/...`` answers
(secrets masked the same way); nothing here changes anything. Changes go from the browser to
the REST API itself. Called from the REST app's thread pool; the herder is thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from connectrt.errors import NotFoundError
from connectrt.rest import models
from connectrt.rest.console.charts import sparkline
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.tasks.tap import DEFAULT_RATE, MAX_RATE, stage_names

__all__ = [
    "connector_page",
    "connector_rows",
    "connector_status",
    "plugin_choices",
    "share_counters",
    "task_charts",
    "validation",
    "validation_config",
    "worker_summary",
]

_HIDDEN = "[hidden]"
# What a masked password inside a URL's userinfo is validated as: "user:[hidden]@host" is no
# URL (urlsplit reads "[hidden]" as an IPv6 literal and a plugin's parser raises), while
# "user:hidden@host" parses as the stored URL does.
HIDDEN_IN_URL = "hidden"


def worker_summary(herder: Herder) -> dict[str, Any]:
    """Version, cluster id, worker id and whether the herder is ready. Not the full health
    check (``GET /health`` may wait for the herder's lock and ask Kafka; a page should not)."""
    info = herder.overview.server_info()
    ready = herder.ready
    return {
        **info,
        "worker_id": herder.worker.status.worker_id,
        "health": "healthy" if ready else "starting",
        "health_message": "ready (GET /health runs the full check)"
        if ready
        else "the worker is starting",
    }


def _task_totals(herder: Herder) -> dict[str, dict[str, Any]]:
    """Per connector: records in, dead letter queue records and total lag of its tasks."""
    totals: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"records": 0, "dlq": 0, "dlq_failures": 0, "lag": None}
    )
    for t in herder.overview.metrics_snapshot()["tasks"]:
        row = totals[t["connector"]]
        row["records"] += t["records_polled"]
        row["dlq"] += t["deadletterqueue_produce_requests"]
        row["dlq_failures"] += t["deadletterqueue_produce_failures"]
        if t["partition_lag"]:
            row["lag"] = (row["lag"] or 0) + sum(p["lag"] for p in t["partition_lag"])
    return totals


def _latest_rate(herder: Herder, name: str) -> float | None:
    series = herder.overview.history.series(name)
    rates = [points[-1].rate for points in series.values() if points]
    return sum(rates) if rates else None


def connector_rows(herder: Herder) -> list[dict[str, Any]]:
    """One row per connector for the overview table (a connector deleted meanwhile is left
    out)."""
    totals = _task_totals(herder)
    rows = []
    for name in sorted(herder.connectors()):
        try:
            status = models.ConnectorStateInfo.of(herder.connector_status(name)).wire()
            config = herder.connector_config(name)
        except NotFoundError:
            continue
        tasks = status["tasks"]
        rows.append(
            {
                "name": name,
                "type": status["type"],
                "class": config.get("connector.class", ""),
                "state": status["connector"]["state"],
                "worker_id": status["connector"]["worker_id"],
                "tasks_running": sum(1 for t in tasks if t["state"] == "RUNNING"),
                "tasks_failed": sum(1 for t in tasks if t["state"] == "FAILED"),
                "tasks_total": len(tasks),
                "rate": _latest_rate(herder, name),
                **totals[name],
            }
        )
    return rows


# The acknowledgement counters of a share-group sink's task the console shows (TaskMetrics'
# share_<name>; share_archived stays on /metrics).
_SHARE_COUNTERS = ("acquired", "accepted", "released", "rejected")


def share_counters(metrics: Mapping[str, Any] | None) -> dict[str, int] | None:
    """A share-group sink task's ``{acquired, accepted, released, rejected}`` from its metrics
    snapshot (:meth:`~connectrt.runtime.metrics.TaskMetrics.snapshot`); None without one."""
    if metrics is None:
        return None
    return {k: int(metrics.get(f"share_{k}", 0)) for k in _SHARE_COUNTERS}


def connector_status(herder: Herder, name: str) -> dict[str, Any]:
    """The connector's status (``GET /connectors/{name}/status``, with ``share_group`` for a
    share-group sink) with per-task metrics; a share-group sink's tasks also carry their
    acknowledgement counters as ``share`` (see :func:`share_counters`)."""
    status = models.ConnectorStateInfo.of(herder.connector_status(name)).wire()
    metrics = {
        t["task"]: t for t in herder.overview.metrics_snapshot()["tasks"] if t["connector"] == name
    }
    in_share_group = "share_group" in status
    for task in status["tasks"]:
        m = metrics.get(task["id"])
        task["records"] = m["records_polled"] if m else None
        task["dlq"] = m["deadletterqueue_produce_requests"] if m else None
        task["partition_lag"] = m["partition_lag"] if m else []
        task["share"] = share_counters(m) if in_share_group else None
    return status


def connector_page(herder: Herder, name: str) -> dict[str, Any]:
    """Info, masked config and topics of one connector."""
    info = models.ConnectorInfo.of(herder.connector_info(name)).wire()
    return {
        "info": info,
        "config": dict(sorted(herder.connector_config(name).items())),
        "topics": herder.topics.active(name),
    }


def task_charts(herder: Herder, name: str) -> list[dict[str, Any]]:
    """Per task: throughput and lag sparklines over the history's window, and the end-to-end
    latency's p50/p99 over it."""
    history = herder.overview.history
    latency = history.latency(name)
    charts = []
    for task, points in sorted(history.series(name).items()):
        p50, p99 = latency.get(task, (None, None))
        rates = [p.rate for p in points]
        lags = [p.lag for p in points if p.lag is not None]
        charts.append(
            {
                "task": task,
                "rate_svg": sparkline(rates, f"task {task} records per second"),
                "rate_now": rates[-1] if rates else None,
                "rate_max": max(rates) if rates else None,
                "lag_svg": sparkline([float(v) for v in lags], f"task {task} consumer lag")
                if lags
                else None,
                "lag_now": lags[-1] if lags else None,
                "lag_max": max(lags) if lags else None,
                "minutes": round(history.window / 60),
                "latency_p50": _duration(p50),
                "latency_p99": _duration(p99),
            }
        )
    return charts


def _duration(seconds: float | None) -> str:
    """A latency for the console: a dash for none, ms below 10 s, else seconds."""
    if seconds is None:
        return "\u2013"
    if seconds < 10.0:
        return f"{seconds * 1000:.1f} ms" if seconds < 1.0 else f"{seconds * 1000:.0f} ms"
    return f"{seconds:.0f} s"


def plugin_choices(herder: Herder) -> list[dict[str, Any]]:
    return [models.PluginInfo.of(p).wire() for p in herder.plugins.list_plugins(True)]


def _undefined_key(name: str, herder: Herder, definition: Any) -> dict[str, Any]:
    """A form field for a key outside the plugin's definition (an override, an extra setting),
    so that editing a config keeps it."""
    secret = herder.masker.is_secret(name, definition)
    return {
        "name": name,
        "type": "PASSWORD" if secret else "STRING",
        "required": False,
        "default_value": None,
        "importance": "",
        "documentation": "Not in the plugin's config definition; passed to the connector as is.",
        "group": "Other settings",
        "order_in_group": 0,
        "width": "NONE",
        "display_name": name,
        "dependents": [],
    }


def validation_config(config: dict[str, str | None]) -> dict[str, str | None]:
    """A masked config as the Edit form validates it: a ``[hidden]`` password inside a URL
    (``scheme://user:[hidden]@host``) replaced by :data:`HIDDEN_IN_URL`, so that plugins
    parse the URL as they parse the stored one. Only the form is built from the answer; the
    values the form shows (and saves) stay the masked ones."""
    out: dict[str, str | None] = {}
    for key, value in config.items():
        if value is not None and "://" in value and f":{_HIDDEN}@" in value:
            value = value.replace(f":{_HIDDEN}@", f":{HIDDEN_IN_URL}@")
        out[key] = value
    return out


def validation(herder: Herder, plugin: str, config: dict[str, str | None]) -> dict[str, Any]:
    """``PUT /connector-plugins/{plugin}/config/validate``'s answer, grouped for the form:
    ``{"name", "error_count", "groups": [(group, [config info, ...]), ...]}``."""
    result = herder.plugins.validate(plugin, config)
    definition = result.definition
    infos = models.ConfigInfos.of(
        result, lambda key: herder.masker.is_secret(key, definition)
    ).wire()
    grouped: dict[str, list[dict[str, Any]]] = {g: [] for g in infos["groups"]}
    for entry in infos["configs"]:
        if entry["definition"] is None:  # a key the definition does not know: kept as text
            entry["definition"] = _undefined_key(entry["value"]["name"], herder, definition)
        d = entry["definition"]
        grouped.setdefault(d["group"] or "Other", []).append(entry)
    for entries in grouped.values():
        entries.sort(key=lambda e: (e["definition"]["order_in_group"], e["definition"]["name"]))
    return {
        "name": infos["name"],
        "error_count": infos["error_count"],
        "groups": [(g, entries) for g, entries in grouped.items() if entries],
    }


def tap_page(herder: Herder, name: str) -> dict[str, Any]:
    """What the record inspector's page offers: the connector's stages (from its config's
    ``transforms``, so the page works before a task runs) and the rate bounds."""
    herder.require(name)
    config = herder.connector_config(name)
    aliases = [a.strip() for a in config.get("transforms", "").split(",") if a.strip()]
    kind = herder.connector_type(name)
    return {
        "kind": kind,
        "stages": stage_names(kind, aliases),
        "rates": [r for r in (0.2, 1, 2, 5, 10, 20) if r <= MAX_RATE],
        "default_rate": DEFAULT_RATE,
    }
