"""The ``mapInArrow`` function a task launch over Spark Connect runs in its one Spark task.

The launch's DataFrame is ``spark.range(0, 1, 1, 1)``: one partition of one row, which the
function ignores. Its closure (a ``functools.partial``, pickled by the Connect client and
unpickled in the server's Python worker) holds the :class:`~.executor_task.SparkTaskPayload`; the
function runs the task to its end with :func:`~.executor_task.run_task`, exactly as the
classic launcher's ``mapPartitions`` does, and yields one row: the task's result dict as
JSON. A failed task raises (:class:`~.executor_task.TaskAttemptFailed`), so Spark re-runs it.

Runs in a Spark Connect server's Python worker, which must import connectrt (the server's
``PYSPARK_PYTHON``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from connectrt.spark.executor_task import SparkTaskPayload, run_task

__all__ = ["RESULT_SCHEMA", "run_task_batches"]

RESULT_SCHEMA = "result binary"


def run_task_batches(payload: SparkTaskPayload, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` function (after ``functools.partial(run_task_batches, payload)``)."""
    import pyarrow as pa

    for _ in batches:  # the single placeholder row
        pass
    result = run_task(payload)
    yield pa.RecordBatch.from_pydict(
        {"result": [orjson.dumps(result, default=str)]},
        schema=pa.schema([("result", pa.binary())]),
    )
