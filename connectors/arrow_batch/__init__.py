"""Connect data as Arrow: Connect schemas as Arrow types, a batch's values as a RecordBatch.

Shared by the sinks that write columnar files (object storage, Iceberg). Needs pyarrow
(the ``objectstore`` extra).

* :func:`arrow_type` / :func:`arrow_schema`: a Connect schema as an Arrow type / schema
  (logical Decimal, Date, Time and Timestamp; nested STRUCT, ARRAY and MAP; optional fields
  as nullable ones).
* :class:`ArrowBatchBuilder`: built once per value schema, turns a column of Connect values
  (``SinkRecordBatch.values``) into a ``pyarrow.RecordBatch``, field by field, without a dict
  per record; :meth:`ArrowBatchBuilder.split_failing` finds the values that cannot be
  converted so a sink can send just those to the dead letter queue.
"""

from connectors.arrow_batch.convert import (
    VALUE_COLUMN,
    ArrowBatchBuilder,
    SchemalessValueError,
    arrow_field,
    arrow_schema,
    arrow_type,
)

__all__ = [
    "VALUE_COLUMN",
    "ArrowBatchBuilder",
    "SchemalessValueError",
    "arrow_field",
    "arrow_schema",
    "arrow_type",
]
