"""Executor side of writing through a sink connector: one Spark partition's rows, encoded as
Connect records with synthetic coordinates, through a fresh sink task (see
:mod:`connectrt.spark.datasource.sink` for the lifecycle and the idempotent replays).

Rows are put in chunks of ``put.batch.size`` as :class:`~connectrt.api.SinkRecordBatch` es
built from columns (the converted keys and values, the coordinates): a sink that reads columns
gets no ``SinkRecord`` per row, one that iterates gets them built as it goes. ``put`` and the
commit step are the sink lifecycle's (:mod:`connectrt.runtime.sink.lifecycle`), as in the
consumer loop: retries of ``RetriableError``, then the dead letter queue flushed before
``pre_commit``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.datasource import WriterCommitMessage

from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import TimestampType, TopicPartition
from connectrt.api.task import SinkTask
from connectrt.errors import RetriableError
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.lifecycle import pre_commit, put_with_retries
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskId
from connectrt.spark.datasource.schema import connect_schema, row_converter
from connectrt.spark.datasource.sink_context import BridgeReporter, BridgeTaskContext
from connectrt.spark.datasource.sink_plan import SinkPlan

__all__ = ["OFFSET_STRIDE", "SinkCommit", "run_sink_task"]

OFFSET_STRIDE = 1 << 32


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one Spark task wrote: rows put, rows skipped as already written."""

    partition: int
    rows: int
    skipped: int


def _extractor(
    data_type: T.DataType | None, index: list[int] | int | None, optional: bool
) -> tuple[Any, Any]:
    """(Connect schema, row -> Connect value) for the key or value side of a row."""
    if data_type is None or index is None:
        return None, lambda row: None
    schema = connect_schema(data_type, optional, None)
    convert = row_converter(data_type, schema)
    if isinstance(index, int):
        return schema, lambda row: convert(row[index])
    return schema, lambda row: convert([row[i] for i in index])


def _chunk(
    tp: TopicPartition,
    key_schema: Any,
    keys: list[Any] | None,
    value_schema: Any,
    values: list[Any],
    start: int,
    now: int,
) -> SinkRecordBatch:
    """The batch of the rows at offsets ``start``.. (contiguous: only a prefix is skipped)."""
    n = len(values)
    return SinkRecordBatch.from_columns(
        n,
        topics=(tp.topic,) * n,
        partitions=(tp.partition,) * n,
        offsets=range(start, start + n),
        key_schemas=(key_schema,) * n,
        keys=keys,
        value_schemas=(value_schema,) * n,
        values=values,
        timestamps=(now,) * n,
        timestamp_types=(TimestampType.CREATE_TIME,) * n,
        next_offsets={tp: start + n},
    )


def _put(task: SinkTask, ctx: BridgeTaskContext, records: SinkRecordBatch, retries: int) -> None:
    """put() through the sink lifecycle, retrying a RetriableError ``retries`` times (the task's
    ``context.timeout()`` apart, 10 ms at least); the last one fails the Spark task."""

    def retry(error: RetriableError, attempt: int) -> bool:
        if attempt > retries:
            raise error
        time.sleep(max(ctx.timeout_ms, 10) / 1000.0)
        return True

    put_with_retries(task, records, retry)


def run_sink_task(plan: SinkPlan, rows: Iterator[Row], partition: int, batch_id: int) -> SinkCommit:
    """Executor side: deliver one Spark partition's rows to a fresh sink task."""
    tp = TopicPartition(plan.topic, partition)
    task_config = plan.task_configs[partition % len(plan.task_configs)]
    value_optional = isinstance(plan.value_index, int)
    value_schema, to_value = _extractor(plan.value_type, plan.value_index, value_optional)
    key_schema, to_key = _extractor(plan.key_type, plan.key_index, isinstance(plan.key_index, int))
    task = plan.task_class()
    policy = ErrorPolicy.from_config(plan.config)
    handler = None
    if policy.reporting:
        client = plan.kafka if policy.dlq_topic else None
        handler = ErrorHandler(
            TaskId(plan.config["name"], partition),
            policy,
            TaskMetrics(plan.config["name"], partition),
            client,
            client,
        )
    ctx = BridgeTaskContext(
        task_config, tp, None if handler is None else BridgeReporter(handler, task)
    )
    task.initialize(ctx)
    task.start(task_config)
    base = batch_id * OFFSET_STRIDE
    next_offset = base
    written = skipped = 0
    try:
        task.open([tp])
        skip_below = ctx.rewinds.get(tp, 0)
        has_key = plan.key_type is not None and plan.key_index is not None
        values: list[Any] = []
        keys: list[Any] | None = [] if has_key else None
        start = base
        now = int(time.time() * 1000)
        for index, row in enumerate(rows):
            offset = base + index
            next_offset = offset + 1
            if offset < skip_below:
                skipped += 1
                continue
            if not values:
                start = offset
            values.append(to_value(row))
            if keys is not None:
                keys.append(to_key(row))
            if len(values) >= plan.batch_size:
                chunk = _chunk(tp, key_schema, keys, value_schema, values, start, now)
                _put(task, ctx, chunk, plan.max_retries)
                written += len(values)
                values = []
                keys = [] if has_key else None
        if values:
            chunk = _chunk(tp, key_schema, keys, value_schema, values, start, now)
            _put(task, ctx, chunk, plan.max_retries)
            written += len(values)
        offsets = {tp: next_offset}
        # The task is thrown away after this partition: whatever its pre_commit() defers is
        # flushed first; then the sink lifecycle's commit step (dead letters, pre_commit()).
        task.flush(offsets)
        pre_commit(task, handler, offsets)
        task.close([tp])
    finally:
        try:
            task.stop()
        finally:
            if handler is not None:
                handler.close()
    return SinkCommit(partition, written, skipped)
