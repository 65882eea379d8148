"""Retries, tolerance, error logging and the dead letter queue (Kafka's ``errors.*``).

:class:`ErrorHandler` is what the task runners consult when a record fails in a stage. It
follows Kafka Connect's RetryWithToleranceOperator:

* a :class:`~connectrt.api.RetriableError` is retried with exponential backoff (300 ms,
  doubling, capped by ``errors.retry.delay.max.ms``, never past ``errors.retry.timeout``;
  ``-1`` retries forever);
* with ``errors.tolerance=all``, any failure in the converter and transformation stages (and
  retriable failures elsewhere, once retries are exhausted) is tolerated: the record is
  skipped, logged if ``errors.log.enable`` and sent to the dead letter queue if one is set;
* otherwise the task fails with "Tolerance exceeded in error handler", its trace naming the
  stage, the connector, the task and the record's coordinates.

The dead letter queue serves sink connectors as in Kafka (the original raw record, with the
``__connect.errors.*`` context headers when enabled) and, beyond Kafka, source connectors too:
a source record that fails conversion or transformation is written as a JSON document of the
record (:mod:`connectrt.runtime.tasks.dlq_documents`: topic, source partition and offset, key,
value, headers, the stage) with the same context headers
(:mod:`connectrt.runtime.tasks.dlq_headers`).

A converter's :class:`~connectrt.converters.schema_drift.SchemaDriftError` is the connector's
``schema.drift`` policy speaking, whatever ``errors.tolerance`` says: ``fail`` fails the task
(nothing goes to the DLQ: the record is read again after the fix), ``dlq`` sends the record to
the DLQ with the ``connectrt.schema.drift*`` headers (and fails the task when no DLQ is set).

The DLQ (its topic, when missing, and its producer) is set up when the task starts
(:meth:`ErrorHandler.open`), before any record is consumed: a DLQ the cluster refuses fails the
task at once with "Could not initialize dead letter queue with topic=..." (Kafka Connect's
words), never at the first bad record with that record's error on top.

A DLQ record larger than its topic accepts is written truncated, marked by the
``__connect.errors.truncated`` header and naming its original topic, partition and offset
(:mod:`connectrt.runtime.tasks.dlq_sizing`): a record too large for the DLQ never fails a task that
tolerates it.

The hot paths do not call this module for records that succeed: runners catch the exception
and hand that one record here. One handler per task, used from the task thread.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api.records import SinkRecord, SourceRecord
from connectrt.converters.schema_drift import DLQ, FAIL, drift_headers, drift_policy_of
from connectrt.errors import ConnectError, RetriableError
from connectrt.runtime.clients.kafka import (
    KafkaAdmin,
    KafkaProducer,
    NewTopic,
    new_admin,
    new_producer,
)
from connectrt.runtime.config.cluster_limits import (
    DLQ_REPLICATION_FACTOR_CONFIG,
    replication_factor_refusal,
)
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.tasks.dlq_documents import source_record_document
from connectrt.runtime.tasks.dlq_headers import RawHeaders, context_headers
from connectrt.runtime.tasks.dlq_sizing import (
    KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    TRUNCATED_HEADER,
    fit_record,
    sized_producer_config,
    topic_record_limit,
)
from connectrt.runtime.tasks.runner import TaskId, TaskStage

log = logging.getLogger(__name__)

__all__ = ["DeadLetterQueueInitError", "ErrorHandler", "ErrorPolicy", "ToleranceExceeded"]

_TOLERABLE_STAGES = frozenset(
    {
        TaskStage.KEY_CONVERTER,
        TaskStage.VALUE_CONVERTER,
        TaskStage.HEADER_CONVERTER,
        TaskStage.TRANSFORMATION,
    }
)
_BACKOFF_START_MS = 300


class ToleranceExceeded(ConnectError):
    """A failure the error policy does not tolerate; the task fails with it."""


class DeadLetterQueueInitError(ConnectError):
    """The dead letter queue could not be set up (its topic created or its producer made)."""


@dataclass(frozen=True)
class ErrorPolicy:
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    tolerate_all: bool = False
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ErrorPolicy:
        def flag(key: str) -> bool:
            return str(config.get(key, "false")).strip().lower() == "true"

        return cls(
            retry_timeout_ms=int(config.get("errors.retry.timeout", 0) or 0),
            retry_delay_max_ms=int(config.get("errors.retry.delay.max.ms", 60000) or 60000),
            tolerate_all=str(config.get("errors.tolerance", "none")).strip().lower() == "all",
            log_enable=flag("errors.log.enable"),
            log_include_messages=flag("errors.log.include.messages"),
            dlq_topic=str(config.get("errors.deadletterqueue.topic.name", "") or "").strip(),
            dlq_replication_factor=int(
                config.get("errors.deadletterqueue.topic.replication.factor", 3) or 3
            ),
            dlq_context_headers=flag("errors.deadletterqueue.context.headers.enable"),
        )

    @property
    def reporting(self) -> bool:
        return self.log_enable or bool(self.dlq_topic)


@dataclass
class Failure:
    """One failed attempt: where it happened and what was being processed."""

    stage: str
    executing_class: str
    error: BaseException
    raw: Any = None  # sink: the consumed confluent_kafka.Message
    record: SourceRecord | SinkRecord | None = None


class ErrorHandler:
    """Retry/tolerate/report for one task (see the module docstring).

    The DLQ's clients are built by ``producer_factory`` and ``admin_factory`` from
    ``producer_config``/``admin_config`` (the real clients by default; unit tests pass the
    in-memory ones of :mod:`connectrt.testing.fake_kafka` and
    :mod:`connectrt.testing.fake_kafka_admin`).
    """

    def __init__(
        self,
        task_id: TaskId,
        policy: ErrorPolicy,
        metrics: TaskMetrics,
        producer_config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
        stopping: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], Any] | None = None,
        *,
        producer_factory: Callable[[dict[str, Any]], KafkaProducer] = new_producer,
        admin_factory: Callable[[dict[str, Any]], KafkaAdmin] = new_admin,
    ) -> None:
        self.task_id = task_id
        self.policy = policy
        self.metrics = metrics
        self._stopping = stopping
        self._stop_event = threading.Event()
        self._sleep = sleep or (lambda s: self._stop_event.wait(s))
        self._producer_config = dict(producer_config or {})
        self._admin_config = dict(admin_config or {})
        self._producer_factory = producer_factory
        self._admin_factory = admin_factory
        self._dlq: KafkaProducer | None = None
        self._dlq_limit = KAFKA_DEFAULT_MAX_MESSAGE_BYTES  # the DLQ topic's, once known
        self._dlq_errors: list[str] = []
        # Told of each failure tolerated (the record skipped), on the thread that handled it:
        # a share-group sink acknowledges such records (connectrt.runtime.sink.share_runner).
        self.on_tolerated: Callable[[Failure], None] | None = None

    # -- retries -------------------------------------------------------------------------------
    def call(
        self,
        stage: str,
        executing_class: str,
        fn: Callable[[], Any],
        raw: Any = None,
        record: Any = None,
    ) -> tuple[bool, Any]:
        """Run ``fn`` with retries; ``(True, result)``, or ``(False, None)`` when the failure
        was tolerated (skip the record). Raises ToleranceExceeded otherwise."""
        deadline = None
        attempt = 0
        while True:
            try:
                return True, fn()
            except RetriableError as e:
                attempt += 1
                if deadline is None:
                    timeout = self.policy.retry_timeout_ms
                    deadline = float("inf") if timeout < 0 else time.monotonic() + timeout / 1000
                delay = self._backoff(attempt, deadline)
                if delay is None or self._stopping():
                    return self.failed(Failure(stage, executing_class, e, raw, record))
                self.metrics.retries += 1
                self._sleep(delay)
            except Exception as e:
                return self.failed(Failure(stage, executing_class, e, raw, record))

    def _backoff(self, attempt: int, deadline: float) -> float | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        delay_ms = _BACKOFF_START_MS * 2 ** (attempt - 1)
        cap = self.policy.retry_delay_max_ms
        if delay_ms > cap:
            delay_ms = random.uniform(0, cap)
        return min(delay_ms / 1000, remaining)

    def stop(self) -> None:
        self._stop_event.set()

    # -- tolerance -----------------------------------------------------------------------------
    def tolerates(self, failure: Failure) -> bool:
        drift = drift_policy_of(failure.error)  # schema.drift decides, whatever errors.tolerance
        if drift is not None:
            return drift == DLQ and bool(self.policy.dlq_topic)
        if not self.policy.tolerate_all:
            return False
        return failure.stage in _TOLERABLE_STAGES or isinstance(failure.error, RetriableError)

    def failed(self, failure: Failure) -> tuple[bool, Any]:
        """Handle a failure that retries did not fix: report it, then skip or raise."""
        self.metrics.errors += 1
        self.report(failure)
        if self.tolerates(failure):
            if self.on_tolerated is not None:
                self.on_tolerated(failure)
            return False, None  # the caller skips the record (and counts it)
        drift = drift_policy_of(failure.error)
        reason = "Tolerance exceeded in error handler" if drift is None else "Schema drift"
        if drift == DLQ:
            reason += " (schema.drift=dlq needs errors.deadletterqueue.topic.name)"
        raise ToleranceExceeded(
            f"{reason}: task {self.task_id} failed in stage "
            f"{failure.stage} ({failure.executing_class}){_coordinates(failure)}: "
            f"{failure.error!r}"
        ) from failure.error

    # -- reporting -----------------------------------------------------------------------------
    def report(self, failure: Failure) -> None:
        if self.policy.log_enable:
            self._log(failure)
        if self.policy.dlq_topic and drift_policy_of(failure.error) != FAIL:
            self._send_to_dlq(failure)  # schema.drift=fail: the record is read again later

    def _log(self, failure: Failure) -> None:
        message = (
            f"Error encountered in task {self.task_id}. Executing stage '{failure.stage}' with "
            f"class '{failure.executing_class}'{_coordinates(failure)}."
        )
        if self.policy.log_include_messages:
            message += f" Record: {_describe(failure)}"
        log.error(message, exc_info=failure.error)

    def open(self) -> None:
        """Set up the dead letter queue, if one is set: create its topic when missing and its
        producer, sized from the topic's record size limit
        (:mod:`connectrt.runtime.tasks.dlq_sizing`). Task runners call it at task start, before
        anything is consumed or polled, so a DLQ the cluster cannot hold (a replication factor
        above its broker count, creation refused) fails the task at once, as in Kafka Connect, not
        at the first bad record. Idempotent; raises :class:`DeadLetterQueueInitError` (the topic
        named first, the cause chained)."""
        if self._dlq is not None or not self.policy.dlq_topic:
            return
        topic = self.policy.dlq_topic
        try:
            admin = self._admin_factory(dict(self._admin_config))
            self._create_dlq_topic(admin)
            limit = topic_record_limit(admin, topic)
        except Exception as e:
            raise DeadLetterQueueInitError(
                f"Could not initialize dead letter queue with topic={topic}"
            ) from e
        config, self._dlq_limit = sized_producer_config(self._producer_config, limit)
        config.setdefault("client.id", f"connector-dlq-producer-{self.task_id}")
        config["on_delivery"] = self._on_dlq_delivery
        self._dlq = self._producer_factory(config)

    def _dlq_producer(self) -> KafkaProducer:
        """The DLQ producer: set up by :meth:`open` (at task start for the task runners, at
        the first DLQ record for users that do not open the handler first)."""
        self.open()
        assert self._dlq is not None
        return self._dlq

    def _create_dlq_topic(self, admin: KafkaAdmin) -> None:
        topic = self.policy.dlq_topic
        metadata = admin.list_topics(timeout=15)
        if topic in metadata.topics:
            return
        factor = self.policy.dlq_replication_factor
        # Refused here on every broker (Apache Kafka refuses it too; some brokers do not).
        refusal = replication_factor_refusal(
            DLQ_REPLICATION_FACTOR_CONFIG, factor, len(metadata.brokers) or factor
        )
        if refusal:
            raise ConnectError(f"Could not create the dead letter queue topic {topic}: {refusal}")
        futures = admin.create_topics([NewTopic(topic, 1, factor)], operation_timeout=15)
        try:
            futures[topic].result(15)
        except Exception as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise ConnectError(
                    f"Could not create the dead letter queue topic {topic} (1 partition, "
                    f"errors.deadletterqueue.topic.replication.factor={factor}): {e}"
                ) from e

    def _on_dlq_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._dlq_errors.append(str(err))
            self.metrics.deadletterqueue_produce_failures += 1

    def _send_to_dlq(self, failure: Failure) -> None:
        producer = self._dlq_producer()
        headers: RawHeaders = []
        if failure.raw is not None:  # sink: the original raw record
            raw = failure.raw
            key, value = raw.key(), raw.value()
            headers.extend(raw.headers() or [])
            ts_type, ts = raw.timestamp()
            timestamp = ts if ts_type else None
            topic, partition, offset = raw.topic(), raw.partition(), raw.offset()
        else:  # source (beyond Kafka): the record as a JSON document
            record = failure.record
            key = None
            value = source_record_document(record, failure.stage)
            timestamp = getattr(record, "timestamp", None)
            topic = getattr(record, "topic", None)
            partition = getattr(record, "kafka_partition", None)
            offset = getattr(record, "kafka_offset", None)
        headers.extend(drift_headers(failure.error))  # schema.drift=dlq: what is incompatible
        if self.policy.dlq_context_headers:
            headers.extend(
                context_headers(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    connector=self.task_id.connector,
                    task=self.task_id.task,
                    stage=failure.stage,
                    class_name=failure.executing_class,
                    error=failure.error,
                )
            )
        (key, value, headers), original_size = fit_record(
            key, value, headers, self._dlq_limit, (topic, partition, offset)
        )
        if original_size is not None:
            log.warning(
                "Task %s: the dead letter queue record of the failed record%s is %d bytes, "
                "more than topic %s accepts (%d bytes): written truncated, with header %s",
                self.task_id,
                _coordinates(failure),
                original_size,
                self.policy.dlq_topic,
                self._dlq_limit,
                TRUNCATED_HEADER,
            )
        kwargs: dict[str, Any] = {"headers": headers}
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        while True:
            try:
                producer.produce(self.policy.dlq_topic, value, key, **kwargs)
                self.metrics.deadletterqueue_produce_requests += 1
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait for every DLQ record; called before offsets are committed."""
        if self._dlq is None:
            return
        if self._dlq.flush(timeout) > 0:
            raise ConnectError("Timed out writing to the dead letter queue")
        if self._dlq_errors:
            errors, self._dlq_errors = self._dlq_errors, []
            raise ConnectError(f"Writing to the dead letter queue failed: {errors[0]}")

    def close(self) -> None:
        self.stop()
        if self._dlq is not None:
            try:
                self._dlq.flush(10)
            finally:
                self._dlq = None


def _coordinates(failure: Failure) -> str:
    raw = failure.raw
    if raw is not None:
        return f" (record topic={raw.topic()}, partition={raw.partition()}, offset={raw.offset()})"
    record = failure.record
    if isinstance(record, SinkRecord):
        return (
            f" (record topic={record.original_topic}, partition="
            f"{record.original_kafka_partition}, offset={record.original_kafka_offset})"
        )
    if isinstance(record, SourceRecord):
        return (
            f" (record topic={record.topic}, source partition={record.source_partition}, "
            f"source offset={record.source_offset})"
        )
    return ""


def _describe(failure: Failure) -> str:
    if failure.raw is not None:
        raw = failure.raw
        return f"key={raw.key()!r} value={raw.value()!r}"
    return repr(failure.record)
