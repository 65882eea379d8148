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
  ``kafka.bootstrap.servers`` and ``kafka.*`` for the dead letter queue's producer): the sink
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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from connectrt.api.config import ConfigError
from connectrt.api.connector import SinkConnector, SinkConnectorContext
from connectrt.api.records import SinkRecord, TimestampType, TopicPartition
from connectrt.api.task import ErrantRecordReporter, SinkTask, SinkTaskContext
from connectrt.errors import ConnectError, RetriableError
from connectrt.runtime.error_handling import ErrorHandler, ErrorPolicy, Failure, ToleranceExceeded
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.plugins import registry
from connectrt.runtime.task_runner import TaskId, TaskStage, class_path
from connectrt.spark.datasource.schema import connect_schema, row_converter

log = logging.getLogger(__name__)

__all__ = ["BatchSinkWriter", "SinkCommit", "StreamSinkWriter", "run_sink_task"]

OFFSET_STRIDE = 1 << 32
_BRIDGE_KEYS = frozenset(
    {
        "connector.class",
        "topic",
        "key.column",
        "key.columns",
        "value.column",
        "put.batch.size",
        "batch.id",
        "path",
    }
)


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one Spark task wrote: rows put, rows skipped as already written."""

    partition: int
    rows: int
    skipped: int


class _ConnectorContext(SinkConnectorContext):
    def request_task_reconfiguration(self) -> None:
        log.info("The Spark bridge ignores task reconfiguration requests")

    def raise_error(self, error: BaseException) -> None:
        raise error


class _Reporter(ErrantRecordReporter):
    """KIP-610 for bridged sink tasks: report under the ``errors.*`` policy (the sink task's
    thread only)."""

    def __init__(self, handler: ErrorHandler, task: SinkTask) -> None:
        self.handler = handler
        self.task = task

    def report(self, record: SinkRecord, error: BaseException) -> None:
        handler = self.handler
        handler.metrics.errors += 1
        handler.report(Failure(TaskStage.TASK_PUT, class_path(self.task), error, None, record))
        if not handler.policy.tolerate_all:
            raise ToleranceExceeded(
                f"Tolerance exceeded in error handler: task {handler.task_id} reported a record "
                f"it could not write (topic={record.topic}, partition={record.kafka_partition}, "
                f"offset={record.kafka_offset}): {error!r}"
            ) from error
        handler.metrics.records_skipped += 1


class BridgeTaskContext(SinkTaskContext):
    """The sink task's view of its one synthetic partition (one Spark task's thread only)."""

    def __init__(
        self,
        config: Mapping[str, str],
        tp: TopicPartition,
        reporter: ErrantRecordReporter | None = None,
    ) -> None:
        self._config = dict(config)
        self._tp = tp
        self._reporter = reporter
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms = 1000

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    def offset(
        self, offsets: Mapping[TopicPartition, int] | TopicPartition, offset: int | None = None
    ) -> None:
        if isinstance(offsets, TopicPartition):
            assert offset is not None
            offsets = {offsets: offset}
        for tp, value in offsets.items():
            self.rewinds[TopicPartition(tp.topic, tp.partition)] = int(value)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = int(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        return {self._tp}

    def pause(self, *partitions: TopicPartition) -> None:
        """Nothing to pause: rows are pushed by the bridge."""

    def resume(self, *partitions: TopicPartition) -> None:
        """Nothing to resume."""

    def request_commit(self) -> None:
        """Each Spark task flushes at its end anyway."""


@dataclass
class SinkPlan:
    """Everything a Spark task needs to run the sink (picklable, built on the driver)."""

    task_class: type[SinkTask]
    task_configs: list[dict[str, str]]
    topic: str
    key_index: list[int] | int | None  # columns wrapped in a struct, one column, or no key
    value_index: list[int] | int
    key_type: T.DataType | None
    value_type: T.DataType
    batch_size: int
    batch_id: int
    max_retries: int = 10
    config: dict[str, str] = field(default_factory=dict)
    kafka: dict[str, str] = field(default_factory=dict)


def plan_sink(options: Mapping[str, Any], schema: T.StructType) -> SinkPlan:
    """Driver side: start the connector (validating its config) and take its task configs."""
    opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
    class_name = opts.get("connector.class", "").strip()
    if not class_name:
        raise ConfigError("Option connector.class (a sink connector) is required for writing")
    cls = registry.connector_class(class_name)
    if not issubclass(cls, SinkConnector):
        raise ConfigError(f"{class_name} is not a sink connector", "connector.class", class_name)
    config = {k: v for k, v in opts.items() if k not in _BRIDGE_KEYS and not k.startswith("kafka.")}
    kafka = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    policy = ErrorPolicy.from_config(config)
    if policy.dlq_topic and not kafka.get("bootstrap.servers"):
        raise ConfigError(
            "errors.deadletterqueue.topic.name needs kafka.bootstrap.servers for its producer"
        )
    config.setdefault("name", "spark-bridge")
    topic = opts.get("topic") or "spark"
    config.setdefault("topics", topic)
    names = schema.fieldNames()
    key_index: list[int] | int | None = None
    value_index: list[int] | int

    def column(key: str) -> int:
        name = opts[key].strip()
        if name not in names:
            raise ConfigError(f"{key} {name!r} is not a column of the DataFrame ({names})")
        return names.index(name)

    key_columns = [c.strip() for c in opts.get("key.columns", "").split(",") if c.strip()]
    missing = [c for c in key_columns if c not in names]
    if missing:
        raise ConfigError(f"key.columns {missing} are not columns of the DataFrame ({names})")
    if opts.get("key.column", "").strip():
        key_index = column("key.column")
    elif key_columns:
        key_index = [names.index(c) for c in key_columns]
    if opts.get("value.column", "").strip():
        value_index = column("value.column")
    else:
        taken = {key_index} if isinstance(key_index, int) else set(key_index or [])
        value_index = [i for i in range(len(names)) if i not in taken]
    tasks_max = int(config.get("tasks.max", "1") or 1)
    connector = cls()
    connector.initialize(_ConnectorContext())
    connector.start(config)
    try:
        task_configs = connector.task_configs(max(1, tasks_max))
        task_class = connector.task_class()
    finally:
        connector.stop()
    if not task_configs:
        raise ConnectError(f"{class_name} returned no task configs")
    if not (isinstance(task_class, type) and issubclass(task_class, SinkTask)):
        raise ConfigError(f"{class_name}.task_class() is not a SinkTask")
    return SinkPlan(
        task_class=task_class,
        task_configs=[dict(c) for c in task_configs],
        topic=topic,
        key_index=key_index,
        value_index=value_index,
        key_type=_column_type(schema, key_index),
        value_type=_column_type(schema, value_index),
        batch_size=int(opts.get("put.batch.size", "5000") or 5000),
        batch_id=int(opts.get("batch.id", "0") or 0),
        config=config,
        kafka=kafka,
    )


def _column_type(schema: T.StructType, index: list[int] | int | None) -> Any:
    if index is None:
        return None
    if isinstance(index, int):
        return schema.fields[index].dataType
    return T.StructType([schema.fields[i] for i in index])


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


def _put(task: SinkTask, ctx: BridgeTaskContext, records: list[SinkRecord], retries: int) -> None:
    attempt = 0
    while True:
        try:
            task.put(records)
            return
        except RetriableError:
            attempt += 1
            if attempt > retries:
                raise
            time.sleep(max(ctx.timeout_ms, 10) / 1000.0)


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
    ctx = BridgeTaskContext(task_config, tp, None if handler is None else _Reporter(handler, task))
    task.initialize(ctx)
    task.start(task_config)
    base = batch_id * OFFSET_STRIDE
    next_offset = base
    written = skipped = 0
    try:
        task.open([tp])
        skip_below = ctx.rewinds.get(tp, 0)
        topic = plan.topic
        records: list[SinkRecord] = []
        now = int(time.time() * 1000)
        for index, row in enumerate(rows):
            offset = base + index
            next_offset = offset + 1
            if offset < skip_below:
                skipped += 1
                continue
            value = to_value(row)
            key = to_key(row)
            records.append(
                SinkRecord(
                    topic,
                    partition,
                    key_schema,
                    key,
                    value_schema,
                    value,
                    offset,
                    now,
                    TimestampType.CREATE_TIME,
                )
            )
            if len(records) >= plan.batch_size:
                _put(task, ctx, records, plan.max_retries)
                written += len(records)
                records = []
        if records:
            _put(task, ctx, records, plan.max_retries)
            written += len(records)
        offsets = {tp: next_offset}
        task.flush(offsets)
        if handler is not None:
            handler.flush()  # dead letters are written before the batch counts as done
        task.pre_commit(offsets)
        task.close([tp])
    finally:
        try:
            task.stop()
        finally:
            if handler is not None:
                handler.close()
    return SinkCommit(partition, written, skipped)


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


class BatchSinkWriter(DataSourceWriter):
    """``df.write.format("connectrt")``."""

    def __init__(self, options: Mapping[str, Any], schema: T.StructType) -> None:
        self.plan = plan_sink(options, schema)

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        partition, batch_id = _task_info(self.plan.batch_id)
        return run_sink_task(self.plan, iterator, partition, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_commit(messages, self.plan.batch_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("Write aborted; sink tasks already put their rows (no rollback)")


class StreamSinkWriter(DataSourceStreamWriter):
    """``df.writeStream.format("connectrt")``: one sink task per partition and micro-batch."""

    def __init__(self, options: Mapping[str, Any], schema: T.StructType) -> None:
        self.plan = plan_sink(options, schema)

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        partition, batch_id = _task_info(self.plan.batch_id)
        return run_sink_task(self.plan, iterator, partition, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("Batch %d aborted; sink tasks already put their rows", batchId)
