"""Reading Kafka topics into Spark: ``spark.read`` / ``spark.readStream`` ``.format("connectrt")``.

Planning (driver side) decides the schema and the offset ranges; ``read()`` (executors) reads
one Kafka partition's range with its own consumer, decodes it (:mod:`.decode`) and yields
``pyarrow.RecordBatch`` chunks of ``batch.rows`` rows (Arrow batches cross into the JVM far
cheaper than tuples).

The schema must be known when the query is planned. In order of precedence:

1. ``spark.read.schema(...)`` given by the user (columns: any of key, value, topic,
   partition, offset, timestamp, timestampType, headers);
2. ``key.schema`` / ``value.schema``: a Connect schema as JSON (the ``schema`` part of a
   JsonConverter envelope), or ``key.schema.subject`` / ``value.schema.subject``: the latest
   Avro schema of a registry subject (``<kind>.converter.schema.registry.url``);
3. otherwise a sample: the first record of the first non-empty partition (from its earliest
   offset), decoded and transformed like every record. Records that fail to decode are passed
   over (up to 100). An empty topic without 1. or 2. is an error that says so.

The stream reader's driver-side methods run in one long-lived Python process per query, so
it keeps its probing consumer between calls. ``read()`` is stateless.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from connectrt.api.config import ConfigError
from connectrt.data import Schema
from connectrt.errors import ConnectError
from connectrt.spark.datasource import offsets as ko
from connectrt.spark.datasource.decode import RecordDecoder, output_schema
from connectrt.spark.datasource.options import BridgeOptions
from connectrt.spark.datasource.schema import spark_type

log = logging.getLogger(__name__)

__all__ = [
    "BatchReader",
    "ConnectrtDataSource",
    "KafkaRange",
    "StreamReader",
    "infer_schema",
    "read_partition",
]

SAMPLE_LIMIT = 100


@dataclass
class KafkaRange(InputPartition):
    """One Spark task: offsets ``[start, end)`` of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__(None)
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def read_partition(
    options: BridgeOptions, schema: T.StructType, split: KafkaRange, task: int
) -> Iterator[pa.RecordBatch]:
    """Executor side: decode ``split`` into Arrow batches of the planned ``schema``."""
    decoder = RecordDecoder(options, schema, task)
    try:
        pending: list[Any] = []
        for msgs in ko.read_range(options, split.topic, split.partition, split.start, split.end):
            pending.extend(msgs)
            if len(pending) >= options.batch_rows:
                batch = decoder.batch(pending)
                pending = []
                if batch is not None:
                    yield batch
        if pending:
            batch = decoder.batch(pending)
            if batch is not None:
                yield batch
    finally:
        decoder.close()


# -- schema planning -------------------------------------------------------------------------
def _explicit(options: BridgeOptions, kind: str) -> tuple[bool, Schema | None]:
    config = options.connector
    text = config.get(f"{kind}.schema", "").strip()
    if text:
        from connectrt.converters.json import JsonConverter

        try:
            return True, JsonConverter().schema_from_json(text.encode())
        except Exception as e:
            raise ConfigError(f"Option {kind}.schema is not a Connect schema: {e}") from e
    subject = config.get(f"{kind}.schema.subject", "").strip()
    if subject:
        from connectrt.converters.avro import SchemaRegistryClient
        from connectrt.data.avro_schema import avro_to_connect

        url = config.get(f"{kind}.converter.schema.registry.url", "").split(",")[0].strip()
        if not url:
            raise ConfigError(
                f"Option {kind}.schema.subject needs {kind}.converter.schema.registry.url"
            )
        client = SchemaRegistryClient(url)
        try:
            _, text = client.latest(subject)
        finally:
            client.close()
        return True, avro_to_connect(json.loads(text))
    return False, None


def _sample(options: BridgeOptions) -> tuple[Schema | None, Schema | None]:
    c = ko.consumer(options, probe=True)
    try:
        limits = ko.bounds(c, ko.topic_partitions(c, options))
    finally:
        c.close()
    # Sampling reports nothing: a bad record is passed over here and handled by errors.*
    # (logged, sent to the dead letter queue) once, when it is read.
    quiet = {k: v for k, v in options.connector.items() if not k.startswith("errors.")}
    decoder = RecordDecoder(dataclasses.replace(options, connector=quiet), None)
    try:
        for (topic, partition), (lo, hi) in sorted(limits.items()):
            if hi <= lo:
                continue
            tried = 0
            for msgs in ko.read_range(options, topic, partition, lo, min(hi, lo + SAMPLE_LIMIT)):
                for msg in msgs:
                    tried += 1
                    try:
                        pairs = decoder.records([msg])
                    except Exception as e:
                        log.info("Sampling %s[%d]@%d: %s", topic, partition, msg.offset(), e)
                        continue
                    if pairs:
                        record = pairs[0][1]
                        return record.key_schema, record.value_schema
    finally:
        decoder.errors.close()
    subscribed = options.pattern or ",".join(options.topics)
    raise ConnectError(
        f"Cannot infer the schema of {subscribed}: no decodable record to sample. Produce "
        "data first, or set value.schema (Connect schema JSON) or value.schema.subject (a "
        "registry subject), or give the schema with spark.read.schema(...)"
    )


def infer_schema(options: BridgeOptions) -> T.StructType:
    """The Spark schema of the rows (driver side; see the module docstring)."""
    key_given, key_schema = _explicit(options, "key")
    value_given, value_schema = _explicit(options, "value")
    if not (key_given and value_given):
        sampled_key, sampled_value = _sample(options)
        key_schema = key_schema if key_given else sampled_key
        value_schema = value_schema if value_given else sampled_value
    return output_schema(spark_type(key_schema), spark_type(value_schema), options.include_headers)


def split_ranges(ranges: list[KafkaRange], min_partitions: int | None) -> list[KafkaRange]:
    """``minPartitions``: with fewer non-empty ranges than that, split each in proportion to
    its share of the records (as Spark's Kafka source does); empty ranges are dropped."""
    ranges = [r for r in ranges if r.end > r.start]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.end - r.start for r in ranges)
    out: list[KafkaRange] = []
    for r in ranges:
        size = r.end - r.start
        parts = max(1, round(size / total * min_partitions))
        start, remaining = r.start, size
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            if this > 0:
                out.append(KafkaRange(r.topic, r.partition, start, start + this))
            start += this
    return out


# -- batch ---------------------------------------------------------------------------------
class BatchReader(DataSourceReader):
    """``spark.read``: ranges from ``startingOffsets`` (default earliest) to ``endingOffsets``
    (default the end), split by ``minPartitions``."""

    def __init__(self, options: BridgeOptions, schema: T.StructType) -> None:
        self.options = options
        self.schema = schema
        self.starting = options.starting_for(streaming=False)
        self.ending = options.ending_for(streaming=False)

    def partitions(self) -> Sequence[InputPartition]:
        c = ko.consumer(self.options, probe=True)
        try:
            limits = ko.bounds(c, ko.topic_partitions(c, self.options))
            start = ko.resolve(c, self.options, self.starting, limits, starting=True)
            end = ko.resolve(c, self.options, self.ending, limits, starting=False)
        finally:
            c.close()
        ranges = []
        for tp in sorted(limits):
            if end[tp] < start[tp]:
                raise ConfigError(
                    f"The ending offset {end[tp]} of {tp[0]}[{tp[1]}] is before its starting "
                    f"offset {start[tp]}"
                )
            ranges.append(KafkaRange(tp[0], tp[1], start[tp], end[tp]))
        return split_ranges(ranges, self.options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one range. When every range is empty, ``partitions()`` is empty and
        Spark still runs one task, with a plain ``InputPartition(None)``: it reads nothing."""
        if not isinstance(partition, KafkaRange):
            if partition.value is not None:
                raise TypeError(f"Not a Kafka offset range: {partition!r}")
            return iter(())
        if partition.end <= partition.start:
            return iter(())
        return read_partition(self.options, self.schema, partition, partition.partition)


# -- streaming -------------------------------------------------------------------------------
def delay_batch(available: int, minimum: int | None, waited_ms: float, max_delay_ms: int) -> bool:
    """``minOffsetsPerTrigger``: skip this trigger while fewer than ``minimum`` records are
    available and less than ``maxTriggerDelay`` passed since the last batch (as Spark)."""
    return minimum is not None and available < minimum and waited_ms < max_delay_ms


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches over ``{"topic": {"partition": offset}}`` offsets.

    ``initialOffset`` resolves ``startingOffsets`` (default latest) once (Spark logs it as
    batch 0's start, so a restart resumes from the checkpoint, never re-resolves ``latest``).
    ``latestOffset`` probes partition ends (new partitions and, with ``subscribePattern``, new
    topics start at their earliest offset), reports data loss (a checkpointed offset no longer
    in its partition, a partition gone), applies ``maxOffsetsPerTrigger`` spread over the
    partitions with a backlog in proportion to it, and holds a trigger back while fewer than
    ``minOffsetsPerTrigger`` records wait, for up to ``maxTriggerDelay`` (not under
    ``availableNow``, which would wait forever).
    """

    def __init__(self, options: BridgeOptions, schema: T.StructType) -> None:
        self.options = dataclasses.replace(options, streaming=True)
        self.schema = schema
        self.starting = options.starting_for(streaming=True)
        options.ending_for(streaming=True)  # endingOffsets is refused for a stream
        self._consumer: Any = None
        self._target: ko.Offsets | None = None
        self._last_batch: float | None = None

    def _probe(self) -> dict[ko.TP, tuple[int, int]]:
        if self._consumer is None:
            self._consumer = ko.consumer(self.options, probe=True)
        return ko.bounds(self._consumer, ko.topic_partitions(self._consumer, self.options))

    def _ends(self) -> ko.Offsets:
        return {tp: hi for tp, (_, hi) in self._probe().items()}

    def initialOffset(self) -> dict:
        limits = self._probe()
        return ko.encode_offsets(
            ko.resolve(self._consumer, self.options, self.starting, limits, starting=True)
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._ends()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = ko.decode_offsets(start)
        limits = self._probe()
        gone = sorted(tp for tp in begin if tp not in limits)
        if gone:
            named = ", ".join(f"{t}[{p}]" for t, p in gone)
            ko.report_data_loss(self.options, f"Partitions {named} are gone")
            for tp in gone:
                del begin[tp]
        for tp, (lo, hi) in limits.items():
            if tp in begin:
                begin[tp] = ko.check_range(self.options, tp, begin[tp], lo, hi)
            else:
                begin[tp] = lo  # a new partition or topic: from its earliest offset
        latest = (
            self._target if self._target is not None else {tp: hi for tp, (_, hi) in limits.items()}
        )
        end = {tp: max(latest.get(tp, offset), offset) for tp, offset in begin.items()}
        if isinstance(limit, ReadMaxRows):
            end = _limit(begin, end, limit.max_rows)
        available = sum(end[tp] - begin[tp] for tp in end)
        now = time.monotonic()
        if self._target is None and self._last_batch is not None:
            waited_ms = (now - self._last_batch) * 1000
            if delay_batch(
                available,
                self.options.min_offsets_per_trigger,
                waited_ms,
                self.options.max_trigger_delay_ms,
            ):
                return start
        if available > 0:
            self._last_batch = now
        return ko.encode_offsets(end)

    def reportLatestOffset(self) -> dict | None:
        return ko.encode_offsets(self._ends())

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = ko.decode_offsets(start)
        stop = ko.decode_offsets(end)
        ranges = []
        for (t, p), hi in sorted(stop.items()):
            lo = begin.get((t, p), 0)
            if lo > hi:  # a checkpointed offset beyond a recreated partition's end
                ko.report_data_loss(
                    self.options, f"The offset of {t}[{p}] went back from {lo} to {hi}"
                )
                lo = 0
            ranges.append(KafkaRange(t, p, lo, hi))
        return split_ranges(ranges, self.options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaRange)
        return read_partition(self.options, self.schema, partition, partition.partition)

    def commit(self, end: dict) -> None:
        """Spark's checkpoint is the record of progress; nothing to do."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _limit(begin: ko.Offsets, end: ko.Offsets, max_rows: int) -> ko.Offsets:
    backlog = {tp: end[tp] - begin.get(tp, 0) for tp in end}
    total = sum(b for b in backlog.values() if b > 0)
    if total <= max_rows:
        return end
    out = dict(end)
    for tp in sorted(tp for tp, b in backlog.items() if b > 0):
        share = max(1, backlog[tp] * max_rows // total)
        out[tp] = begin.get(tp, 0) + min(backlog[tp], share)
    return out


class ConnectrtDataSource(DataSource):
    """``format("connectrt")``: read Kafka topics with connectrt converters; write through a
    connectrt sink connector (see :mod:`connectrt.spark.datasource.sink`)."""

    @classmethod
    def name(cls) -> str:
        return "connectrt"

    def _options(self) -> BridgeOptions:
        return BridgeOptions.parse(self.options)

    def schema(self) -> T.StructType:
        return infer_schema(self._options())

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return BatchReader(self._options(), schema)

    def streamReader(self, schema: T.StructType) -> DataSourceStreamReader:
        return StreamReader(self._options(), schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> Any:
        from connectrt.spark.datasource.sink import BatchSinkWriter

        return BatchSinkWriter(dict(self.options), schema)

    def streamWriter(self, schema: T.StructType, overwrite: bool) -> Any:
        from connectrt.spark.datasource.sink import StreamSinkWriter

        return StreamSinkWriter(dict(self.options), schema)
