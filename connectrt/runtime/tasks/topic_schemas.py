"""The value schema's fields of each topic a task reads or writes, for lineage's schema facets.

:func:`note_topic_schema` files, once per topic, the top-level fields of a record's Connect
value schema (name and Kafka Connect's lower-case type name; a non-struct schema is one field
named ``value``) in :attr:`~connectrt.runtime.metrics.TaskMetrics.topic_fields`. The runners
call it for the first record to or from a topic (sources) or for the first record of a batch
while they still look (sinks: the first 100 batches), so it costs nothing per record. Called
on the task's thread; readers take the dict as it is (one writer, whole-value stores).
"""

from __future__ import annotations

from connectrt.data import Schema
from connectrt.runtime.metrics import TaskMetrics

__all__ = ["note_topic_schema", "schema_fields"]


def schema_fields(schema: Schema) -> list[list[str]]:
    """``[[name, type], ...]`` of a struct schema's fields; ``[["value", type]]`` otherwise."""
    if schema.fields:
        return [[f.name, f.schema.type.value] for f in schema.fields]
    return [["value", schema.type.value]]


def note_topic_schema(metrics: TaskMetrics, topic: str, schema: Schema | None) -> None:
    """Keep ``schema``'s fields as ``topic``'s, unless the topic already has some."""
    if schema is not None and topic not in metrics.topic_fields:
        metrics.topic_fields[topic] = schema_fields(schema)
