"""Checks an OpenLineage run event against the model openlineage-python ships.

openlineage-python (1.54) ships no JSON schema files: it ships the classes its build generates
from the spec's JSON schemas (``openlineage.client.generated``), each carrying its schema's URL
(``_get_schema()``) and the spec's constraints as attrs validators (a UUID run id, an ISO 8601
event time with a time, the EventType enum, required fields). :func:`validate_run_event` builds
those classes from an event, strictly: every key of the event and of each facet must be a
field of the class the spec defines for it, every required field present, and each facet's
``_schemaURL`` exactly the one of the package's facet class. Anything else raises.
"""

from __future__ import annotations

from typing import Any

import attr
from openlineage.client.generated import (
    base,
    error_message_run,
    input_statistics_input_dataset,
    job_type_job,
    output_statistics_output_dataset,
    processing_engine_run,
    schema_dataset,
)

__all__ = ["validate_run_event"]

_FACET_CLASSES: list[type[Any]] = [
    error_message_run.ErrorMessageRunFacet,
    input_statistics_input_dataset.InputStatisticsInputDatasetFacet,
    job_type_job.JobTypeJobFacet,
    output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet,
    processing_engine_run.ProcessingEngineRunFacet,
    schema_dataset.SchemaDatasetFacet,
]
_BY_SCHEMA = {cls._get_schema(): cls for cls in _FACET_CLASSES}


def _build(cls: type[Any], doc: dict[str, Any], nested: dict[str, Any] | None = None) -> Any:
    """``cls`` from ``doc`` by its attrs fields' init names; unknown keys fail."""
    fields = {f.alias: f for f in attr.fields(cls) if f.init}
    unknown = set(doc) - set(fields) - {"_producer", "_schemaURL"}
    assert not unknown, f"{cls.__name__} has no field {sorted(unknown)}"
    kwargs = {k: v for k, v in doc.items() if k in fields}
    if "_producer" in doc:
        kwargs["producer"] = doc["_producer"]
    for key, build in (nested or {}).items():
        if key in kwargs and kwargs[key] is not None:
            kwargs[key] = build(kwargs[key])
    return cls(**kwargs)


def _facet(doc: dict[str, Any]) -> Any:
    schema_url = doc.get("_schemaURL")
    assert schema_url in _BY_SCHEMA, f"unknown facet schema {schema_url!r}"
    assert doc.get("_producer"), "a facet needs its _producer"
    cls = _BY_SCHEMA[schema_url]
    nested = {}
    if cls is schema_dataset.SchemaDatasetFacet:
        nested["fields"] = lambda fs: [
            _build(schema_dataset.SchemaDatasetFacetFields, f) for f in fs
        ]
    facet = _build(cls, doc, nested)
    assert facet._schemaURL == schema_url
    return facet


def _facets(docs: dict[str, Any] | None) -> dict[str, Any]:
    return {name: _facet(doc) for name, doc in (docs or {}).items()}


def validate_run_event(event: dict[str, Any]) -> Any:
    """The package's ``RunEvent`` built from ``event`` (see the module docstring)."""
    allowed = {"eventType", "eventTime", "producer", "schemaURL", "run", "job", "inputs", "outputs"}
    assert set(event) <= allowed, f"unexpected keys {sorted(set(event) - allowed)}"
    assert event["schemaURL"] == base.RunEvent._get_schema()
    assert set(event["run"]) <= {"runId", "facets"} and set(event["job"]) <= {
        "namespace",
        "name",
        "facets",
    }
    for d in event.get("inputs", []):
        assert set(d) <= {"namespace", "name", "facets", "inputFacets"}, d
    for d in event.get("outputs", []):
        assert set(d) <= {"namespace", "name", "facets", "outputFacets"}, d
    return base.RunEvent(
        eventTime=event["eventTime"],
        producer=event["producer"],
        eventType=base.EventType(event["eventType"]),
        run=base.Run(runId=event["run"]["runId"], facets=_facets(event["run"].get("facets"))),
        job=base.Job(
            namespace=event["job"]["namespace"],
            name=event["job"]["name"],
            facets=_facets(event["job"].get("facets")),
        ),
        inputs=[
            base.InputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=_facets(d.get("facets")),
                inputFacets=_facets(d.get("inputFacets")),
            )
            for d in event.get("inputs", [])
        ],
        outputs=[
            base.OutputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=_facets(d.get("facets")),
                outputFacets=_facets(d.get("outputFacets")),
            )
            for d in event.get("outputs", [])
        ],
    )
