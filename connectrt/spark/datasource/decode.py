"""Consumed Kafka messages -> Connect records -> Arrow record batches, under ``errors.*``.

A :class:`RecordDecoder` holds what a sink task runner would: the key/value/header converters
(built by :func:`connectrt.runtime.executors.runner_factory.create_converter` from the
connector-style options, defaults JsonConverter and SimpleHeaderConverter as on a worker), the
optional SMT chain (``transforms=...``) and an
:class:`~connectrt.runtime.tasks.error_handling.ErrorHandler` for the ``errors.*`` options.
Undecodable records take the handler's slow path stage by stage: with ``errors.tolerance=none`` the
read fails with "Tolerance exceeded ... stage VALUE_CONVERTER ... (record topic=t, partition=p,
offset=o)"; with ``all`` they are skipped, logged if asked and sent to
``errors.deadletterqueue.topic.name`` with the ``__connect.errors.*`` headers. A value that does
not fit the planned Spark schema fails in the VALUE_CONVERTER (or KEY_CONVERTER) stage likewise.

Lifecycle: create one per Spark task (it is not picklable), feed it message lists, then
:meth:`close` it (flushes the dead letter queue). Single-threaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from connectrt.api.records import SinkRecord, TimestampType
from connectrt.runtime.executors.runner_factory import create_converter
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.sink.message_records import message_to_record, message_to_record_tolerant
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskId, TaskStage
from connectrt.spark.datasource.options import BridgeOptions
from connectrt.spark.datasource.schema import arrow_type, to_arrow_value
from connectrt.transforms.chain import TransformationChain, failed_transformation

__all__ = ["METADATA_FIELDS", "RecordDecoder", "build_converters", "output_schema"]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
HEADERS_TYPE = T.ArrayType(
    T.StructType(
        [T.StructField("key", T.StringType(), True), T.StructField("value", T.BinaryType(), True)]
    ),
    True,
)
METADATA_FIELDS = [
    T.StructField("topic", T.StringType(), True),
    T.StructField("partition", T.IntegerType(), True),
    T.StructField("offset", T.LongType(), True),
    T.StructField("timestamp", T.TimestampType(), True),
    T.StructField("timestampType", T.IntegerType(), True),
]
HEADERS_FIELD = T.StructField("headers", HEADERS_TYPE, True)
_META_NAMES = [f.name for f in METADATA_FIELDS]
# Spark's timestampType column holds Kafka's TimestampType ids.
_TIMESTAMP_TYPE_IDS = {
    TimestampType.NO_TIMESTAMP_TYPE: -1,
    TimestampType.CREATE_TIME: 0,
    TimestampType.LOG_APPEND_TIME: 1,
}


def output_schema(key: T.DataType, value: T.DataType, headers: bool = False) -> T.StructType:
    """The rows the bridge yields, Spark's Kafka source columns in its order: key and value
    (typed by the converters), topic, partition, offset, timestamp, timestampType, and with
    ``includeHeaders`` the headers (``array<struct<key: string, value: binary>>``)."""
    return T.StructType(
        [
            T.StructField("key", key, True),
            T.StructField("value", value, True),
            *METADATA_FIELDS,
            *([HEADERS_FIELD] if headers else []),
        ]
    )


def build_converters(config: Mapping[str, str]) -> tuple[Any, Any, Any]:
    """Key, value and header converters as a worker would build them for ``config``: the
    defaults (JsonConverter, SimpleHeaderConverter) take their ``<kind>.converter.*`` settings
    too, so ``value.converter.schemas.enable=false`` alone configures the default."""

    def default(kind: str, class_name: str) -> Any:
        prefix = f"{kind}.converter."
        settings = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
        return lambda: (class_name, settings)

    return (
        create_converter(registry, config, "key", default("key", JSON_CONVERTER)),
        create_converter(registry, config, "value", default("value", JSON_CONVERTER)),
        create_converter(registry, config, "header", default("header", HEADER_CONVERTER)),
    )


def _raw_headers(raw: list[tuple[str, bytes | None]] | None) -> list[dict[str, Any]] | None:
    if not raw:
        return None
    return [{"key": k, "value": v} for k, v in raw]


class RecordDecoder:
    """Decodes message batches for one Spark task (see the module docstring)."""

    def __init__(self, options: BridgeOptions, schema: T.StructType | None, task: int = 0) -> None:
        config = options.connector
        self.key_conv, self.value_conv, self.header_conv = build_converters(config)
        self.transforms: TransformationChain[SinkRecord] | None = None
        if config.get("transforms", "").strip():
            self.transforms = TransformationChain(config, registry.transform_class)
        self.metrics = TaskMetrics(options.name, task)
        policy = ErrorPolicy.from_config(config)
        client = {"bootstrap.servers": options.bootstrap_servers, **options.kafka}
        self.errors = ErrorHandler(
            TaskId(options.name, task),
            policy,
            self.metrics,
            client if policy.dlq_topic else None,
            client if policy.dlq_topic else None,
        )
        self.schema = schema
        self._columns: list[T.StructField] = []
        self._key_fn: Callable[[Any], Any] | None = None
        self._value_fn: Callable[[Any], Any] | None = None
        if schema is not None:
            self._plan(schema)

    def _plan(self, schema: T.StructType) -> None:
        names = schema.fieldNames()
        self._columns = list(schema.fields)
        self._arrow = pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in schema.fields])
        self._key_fn = to_arrow_value(schema["key"].dataType) if "key" in names else None
        self._value_fn = to_arrow_value(schema["value"].dataType) if "value" in names else None
        self._headers = "headers" in names
        unknown = set(names) - {"key", "value", *_META_NAMES, "headers"}
        if unknown:
            raise ValueError(
                f"Unknown columns {sorted(unknown)}: the bridge yields key, value, "
                + ", ".join([*_META_NAMES, "headers"])
            )

    # -- Kafka message -> SinkRecord ---------------------------------------------------------
    def records(self, msgs: list[Any]) -> list[tuple[Any, SinkRecord]]:
        """(message, record) pairs; failed or dropped records are left out."""
        key, value, header = self.key_conv, self.value_conv, self.header_conv
        out: list[tuple[Any, SinkRecord]] = []
        for msg in msgs:
            try:
                record = message_to_record(msg, key, value, header)
            except Exception:
                slow = message_to_record_tolerant(msg, key, value, header, self.errors)
                if slow is None:
                    self.metrics.records_skipped += 1
                    continue
                record = slow
            out.append((msg, record))
        chain = self.transforms
        if chain is None or not out:
            return out
        # The whole batch through the chain at once, as the sink runner does; record by record
        # when a stage drops, fans out or fails (errors.* then handles the failing record).
        transformed = chain.apply_batch([record for _, record in out])
        if transformed is not None:
            return [(msg, t) for (msg, _), t in zip(out, transformed, strict=True)]
        return [(msg, t) for msg, record in out for t in self._transform(msg, record)]

    def _transform(self, msg: Any, record: SinkRecord) -> list[SinkRecord]:
        chain = self.transforms
        assert chain is not None
        try:
            result = chain.apply(record)
        except Exception as exc:
            ok, result = self.errors.call(
                TaskStage.TRANSFORMATION,
                failed_transformation(exc) or type(chain).__name__,
                lambda: chain.apply(record),
                raw=msg,
                record=record,
            )
            if not ok:
                self.metrics.records_skipped += 1
                return []
        if not result:
            self.metrics.records_skipped += 1
        return result or []

    # -- SinkRecord -> Arrow --------------------------------------------------------------
    def _row(self, msg: Any, record: SinkRecord) -> dict[str, Any]:
        key_fn, value_fn = self._key_fn, self._value_fn
        ts = record.timestamp
        row = {
            "key": key_fn(record.key) if key_fn is not None else None,
            "value": value_fn(record.value) if value_fn is not None else None,
            "topic": record.topic,
            "partition": record.kafka_partition,
            "offset": record.kafka_offset,
            "timestamp": None if ts is None else ts * 1000,
            "timestampType": _TIMESTAMP_TYPE_IDS.get(record.timestamp_type, -1),
        }
        if self._headers:
            row["headers"] = self._header_bytes(msg, record)
        return row

    def _header_bytes(self, msg: Any, record: SinkRecord) -> list[dict[str, Any]] | None:
        """The record's headers as bytes: the message's own when no transform ran (they
        cannot have changed), else the transformed record's, encoded by the header
        converter."""
        if self.transforms is None:
            return _raw_headers(msg.headers())
        if not record.headers:
            return None
        encode = self.header_conv.from_connect_header
        return [
            {"key": h.key, "value": encode(record.topic, h.key, h.schema, h.value)}
            for h in record.headers
        ]

    def batch(self, msgs: list[Any]) -> pa.RecordBatch | None:
        """One Arrow record batch for ``msgs`` in the planned schema (None if all dropped)."""
        rows: list[dict[str, Any]] = []
        append = rows.append
        for msg, record in self.records(msgs):
            try:
                append(self._row(msg, record))
            except Exception:
                ok, row = self.errors.call(
                    TaskStage.VALUE_CONVERTER,
                    "connectrt.spark.datasource.schema.to_arrow_value",
                    functools.partial(self._checked_row, msg, record),
                    raw=msg,
                    record=record,
                )
                if ok:
                    append(row)
                else:
                    self.metrics.records_skipped += 1
        if not rows:
            return None
        try:
            return self._to_arrow(rows)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            return self._to_arrow(self._fitting_rows(msgs, rows))

    def _to_arrow(self, rows: list[dict[str, Any]]) -> pa.RecordBatch:
        arrays = [
            pa.array([r[f.name] for r in rows], type=self._arrow.field(f.name).type)
            for f in self._columns
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self._arrow)

    def _checked_row(self, msg: Any, record: SinkRecord) -> dict[str, Any]:
        row = self._row(msg, record)
        self._to_arrow([row])  # raises when a value does not fit its column
        return row

    def _fitting_rows(self, msgs: list[Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Slow path after a batch failed to convert: check row by row under errors.*."""
        by_coords = {(m.topic(), m.partition(), m.offset()): m for m in msgs}
        kept = []
        for row in rows:
            try:
                self._to_arrow([row])
                kept.append(row)
            except (pa.ArrowException, OverflowError, TypeError, ValueError) as e:
                msg = by_coords.get((row["topic"], row["partition"], row["offset"]))

                def fail(error: Exception = e) -> Any:
                    raise error

                self.errors.call(
                    TaskStage.VALUE_CONVERTER,
                    "connectrt.spark.datasource.schema.to_arrow_value",
                    fail,
                    raw=msg,
                )
                self.metrics.records_skipped += 1
        return kept

    def close(self) -> None:
        try:
            self.errors.flush()
        finally:
            self.errors.close()
            if self.transforms is not None:
                self.transforms.close()
            for conv in (self.key_conv, self.value_conv, self.header_conv):
                close = getattr(conv, "close", None)
                if callable(close):
                    close()
