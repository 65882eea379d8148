"""OpenLineage run events (spec 2-0-2) as plain JSON-ready dicts: no client library needed.

:func:`run_event` builds one event of a connector's run: the job (``lineage.namespace``, the
connector's name) with a ``jobType`` facet (``STREAMING``, integration ``CONNECTRT``, job type
``SOURCE_CONNECTOR`` / ``SINK_CONNECTOR``); the run (its UUID) with a ``processing_engine``
facet, and on FAIL an ``errorMessage`` facet (the failure's first line as message, the redacted
trace as stack trace); the input and output datasets, each with a ``schema`` facet when its
fields are known, and the record counts of the run so far: records read as the first input's
``inputStatistics``, records written as the first output's ``outputStatistics`` (the worker
counts per task, not per dataset, so a connector with several inputs or outputs reports its
total on the first one).

Facet schema URLs are the versions openlineage-python 1.54 generates its model from, so a
lineage server validating them finds their definitions. Pure functions, thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from connectrt.runtime.worker.lineage.datasets import Dataset, DatasetSides

__all__ = ["PRODUCER", "SCHEMA_URL", "RecordCounts", "run_event"]

PRODUCER = "https://github.com/connectrt/connectrt"
"""The ``producer`` of every event (and facet): the software that emitted it."""
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
_FACETS = "https://openlineage.io/spec/facets/"
_JOB_TYPE = _FACETS + "2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"
_ENGINE = _FACETS + "1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet"
_ERROR = _FACETS + "1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
_SCHEMA = _FACETS + "1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
_INPUT_STATS = (
    _FACETS + "1-0-0/InputStatisticsInputDatasetFacet.json#/$defs/InputStatisticsInputDatasetFacet"
)
_OUTPUT_STATS = (
    _FACETS
    + "1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
)

RecordCounts = Mapping[str, int]
"""``{"read": n, "written": m}``: records the connector's tasks read (polled from the source,
or consumed from Kafka) and wrote (acknowledged by Kafka, or accepted by ``put()``)."""


def _facet(schema_url: str, **values: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": schema_url, **values}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dataset(d: Dataset) -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": d.namespace, "name": d.name, "facets": {}}
    if d.fields:
        out["facets"]["schema"] = _facet(
            _SCHEMA, fields=[{"name": n, "type": t} for n, t in d.fields]
        )
    return out


def run_event(
    event_type: str,
    run_id: str,
    job_namespace: str,
    connector: str,
    connector_type: str,
    datasets: DatasetSides,
    counts: RecordCounts | None = None,
    error: str | None = None,
    engine_version: str = "",
) -> dict[str, Any]:
    """One run event (``event_type``: START, RUNNING, COMPLETE or FAIL) of ``connector``'s
    run ``run_id``; ``counts`` (RUNNING, COMPLETE, FAIL) go into the statistics facets,
    ``error`` (FAIL) into the errorMessage facet."""
    run_facets: dict[str, Any] = {
        "processing_engine": _facet(_ENGINE, version=engine_version or "unknown", name="connectrt")
    }
    if error is not None:
        message = error.strip().splitlines()[0] if error.strip() else "failed"
        run_facets["errorMessage"] = _facet(
            _ERROR, message=message, programmingLanguage="python", stackTrace=error
        )
    inputs = [_dataset(d) for d in datasets.inputs]
    outputs = [_dataset(d) for d in datasets.outputs]
    if counts is not None:
        if inputs:
            inputs[0]["inputFacets"] = {
                "inputStatistics": _facet(_INPUT_STATS, rowCount=int(counts.get("read", 0)))
            }
        if outputs:
            outputs[0]["outputFacets"] = {
                "outputStatistics": _facet(_OUTPUT_STATS, rowCount=int(counts.get("written", 0)))
            }
    job_type = "SINK_CONNECTOR" if connector_type == "sink" else "SOURCE_CONNECTOR"
    return {
        "eventType": event_type,
        "eventTime": _now(),
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
        "run": {"runId": run_id, "facets": run_facets},
        "job": {
            "namespace": job_namespace,
            "name": connector,
            "facets": {
                "jobType": _facet(
                    _JOB_TYPE, processingType="STREAMING", integration="CONNECTRT", jobType=job_type
                )
            },
        },
        "inputs": inputs,
        "outputs": outputs,
    }
