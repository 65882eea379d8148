"""Writing Spark data through a connectrt sink connector: ``df.write`` / ``df.writeStream``
``.format("connectrt").option("connector.class", ...)``.

Options: ``connector.class`` (a sink connector alias or Python path) and that connector's own
config keys (``connection.url``, ``insert.mode``, ...; ``name`` defaults to ``spark-bridge``),
plus:

* ``topic`` (default ``spark``): the topic name the sink sees on every record (what
  ``${topic}`` table name formats use);
* record value: a struct of all columns except the key's, or, with ``value.column``, that one
  column with its own type (a struct column becomes a Connect struct, a string a string);
* record key: none, ``key.column`` (one column as it is) or ``key.columns`` (comma-separated
  columns as a struct);
* ``tasks.max`` (default 1): ``task_configs()`` is asked for this many configs; Spark
  partition *i* runs config ``i % n``;
* ``put.batch.size`` (default 5000): records per ``put()``;
* ``batch.id``: the batch id of a ``df.write`` (streaming writes use the micro-batch id);
* ``errors.tolerance``, ``errors.log.*``, ``errors.deadletterqueue.*`` (with
  ``kafka.bootstrap.servers`` and ``kafka.*`` for the dead letter queue's producer, security
  keys Java-style as for reading, :func:`~.options.kafka_client_settings`): the sink
  task's errant record reporter (KIP-610), as on a worker: a record the sink reports fails the
  Spark task with ``none``; with ``all`` it is skipped, logged if asked and written to the
  dead letter queue as a JSON document of the record (with the context headers if enabled).

Lifecycle: the driver starts the connector once per query plan (validating its config) and
takes its task configs. Each Spark task (one partition of one micro-batch) creates a task,
``initialize``/``start``/``open`` it, ``put``s its rows in chunks, then ``flush``,
``close``, ``stop``. A failed task is retried by Spark with a fresh sink task.

Idempotent replays: each record carries synthetic coordinates: topic ``topic``, partition =
the Spark partition id, offset = ``batch_id * 2**32 + row index``. Offsets grow from batch to
batch, so a sink that stores offsets next to its data (the JDBC sink with
``exactly.once.enabled=true``) and rewinds with ``context.offset()`` in ``open()`` makes a
replayed micro-batch (after a driver crash, Spark re-runs the batch logged in its checkpoint)
a no-op; the bridge also skips rows below a requested rewind itself. This relies on a
replayed batch delivering its rows in the same partitions and order, which holds for reads
from Kafka without a shuffle; after a shuffle, use upserts keyed by the data.

This module holds the two writers; :mod:`.sink_plan` is the driver side (options -> plan),
:mod:`.sink_task` the executor side (rows -> records -> sink task) and :mod:`.sink_context` the
sink task's context and errant record reporter.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from connectrt.spark.datasource.sink_plan import plan_sink
from connectrt.spark.datasource.sink_task import SinkCommit, run_sink_task

log = logging.getLogger(__name__)

__all__ = ["BatchSinkWriter", "StreamSinkWriter"]


def _task_info(default_batch: int) -> tuple[int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, default_batch
    batch = ctx.getLocalProperty("streaming.sql.batchId")
    return ctx.partitionId(), default_batch if batch is None else int(batch)


def _log_commit(messages: Collection[Any], batch_id: int) -> None:
    done = [m for m in messages if isinstance(m, SinkCommit)]
    log.info(
        "Batch %d: %d rows written, %d skipped as already written, %d tasks",
        batch_id,
        sum(m.rows for m in done),
        sum(m.skipped for m in done),
        len(done),
    )


class _SinkTaskWriter:
    """What the batch and the streaming writer share: the plan made on the driver, and
    ``write``, which runs one sink task over a partition's rows (on an executor)."""

    def __init__(self, options: Mapping[str, Any], schema: T.StructType) -> None:
        self.plan = plan_sink(options, schema)

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        partition, batch_id = _task_info(self.plan.batch_id)
        return run_sink_task(self.plan, iterator, partition, batch_id)


class BatchSinkWriter(_SinkTaskWriter, DataSourceWriter):
    """``df.write.format("connectrt")``."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_commit(messages, self.plan.batch_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("Write aborted; sink tasks already put their rows (no rollback)")


class StreamSinkWriter(_SinkTaskWriter, DataSourceStreamWriter):
    """``df.writeStream.format("connectrt")``: one sink task per partition and micro-batch."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("Batch %d aborted; sink tasks already put their rows", batchId)
