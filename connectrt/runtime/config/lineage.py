"""Worker config keys of OpenLineage events (:mod:`connectrt.runtime.worker.lineage`).

``lineage.transport`` picks where run events go: ``none`` (the default: no events, no thread),
``http`` (POSTed as JSON to ``lineage.url`` + ``lineage.endpoint``, with ``lineage.api.key`` as
a bearer token), ``console`` (logged, one JSON document per event) or ``file`` (appended as
JSON lines to ``lineage.file.path``). Read-only after import.
"""

from __future__ import annotations

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range, ValidString

__all__ = ["LINEAGE_CONFIG_DEF", "LINEAGE_TRANSPORTS"]

LINEAGE_TRANSPORTS = ("none", "http", "console", "file")

LINEAGE_CONFIG_DEF = (
    ConfigDef()
    .define(
        "lineage.transport",
        ConfigType.STRING,
        "none",
        ValidString.of(*LINEAGE_TRANSPORTS),
        Importance.LOW,
        "connectrt: where OpenLineage run events go: 'none' (no events), 'http' (POST to "
        "lineage.url + lineage.endpoint), 'console' (logged by the "
        "connectrt.lineage logger at INFO) or 'file' (JSON lines appended to "
        "lineage.file.path). One run per connector: START when it starts, RUNNING every "
        "lineage.running.interval.ms with record counts, COMPLETE when it is stopped or "
        "deleted, FAIL with the error when it or one of its tasks fails.",
    )
    .define(
        "lineage.url",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "connectrt: the lineage server's base URL for lineage.transport=http, e.g. "
        "http://marquez:5000.",
    )
    .define(
        "lineage.endpoint",
        ConfigType.STRING,
        "api/v1/lineage",
        None,
        Importance.LOW,
        "connectrt: the path under lineage.url that events are POSTed to.",
    )
    .define(
        "lineage.api.key",
        ConfigType.PASSWORD,
        None,
        None,
        Importance.LOW,
        "connectrt: sent as 'Authorization: Bearer <key>' with every HTTP event; a secret "
        "(never logged, never returned by the REST API).",
    )
    .define(
        "lineage.timeout.ms",
        ConfigType.INT,
        5000,
        Range.at_least(1),
        Importance.LOW,
        "connectrt: how long one HTTP event may take; an event that fails is logged and "
        "dropped (lineage never holds up a connector).",
    )
    .define(
        "lineage.file.path",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "connectrt: the file lineage.transport=file appends events to, one JSON document a line.",
    )
    .define(
        "lineage.namespace",
        ConfigType.STRING,
        "connectrt",
        None,
        Importance.LOW,
        "connectrt: the OpenLineage job namespace of the connectors' runs (the job name is "
        "the connector's name).",
    )
    .define(
        "lineage.running.interval.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(100),
        Importance.LOW,
        "connectrt: how often a running connector's RUNNING event (with its record counts) "
        "is sent.",
    )
)
