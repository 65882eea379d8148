"""Runs a SourceTask: poll -> convert -> produce -> commit offsets once acknowledged.

Hot path: ``poll()`` returns a batch; each record is converted and handed to
``Producer.produce`` with no per-record Python callback (the producer is configured with
``delivery.report.only.error``, so only failed deliveries call back). The latest source offset of
each source partition is remembered in a dict keyed by its encoded offset-topic key (cached by
the identity of the partition map, so a connector reusing one map costs one dict store per
record).

Offsets are committed every ``offset.flush.interval.ms`` and on stop, once every record
produced before them is acknowledged: at-least-once, never lost (see
:class:`~connectrt.runtime.source_offsets.SourceOffsetCommitter`, which holds and commits them).

This module is the per-batch loop (poll, transform, convert and produce each record) with its
per-record slow paths (conversion errors, a full producer queue, skipped records,
``commit_record`` callbacks). It stays one module, a little over the house size, so the hot
path and its fallbacks read together; the offset commit and the task's context live in
:mod:`.source_offsets` and :mod:`.task_contexts`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from connectrt.api.records import SourceRecord
from connectrt.api.task import SourceTask
from connectrt.errors import RetriableError
from connectrt.runtime.error_handling import ErrorHandler, ErrorPolicy, Failure
from connectrt.runtime.offset_reader import OffsetStorageReaderImpl
from connectrt.runtime.rate_limit import record_bytes
from connectrt.runtime.runner_settings import SourceRunnerSettings
from connectrt.runtime.source_offsets import SourceOffsetCommitter
from connectrt.runtime.status import TargetState
from connectrt.runtime.task_contexts import SourceTaskContextImpl
from connectrt.runtime.task_runner import (
    TaskFailure,
    TaskId,
    TaskRunner,
    TaskStage,
    class_path,
)
from connectrt.storage.offset_codec import encode_key
from connectrt.transforms.chain import TransformationChain, failed_transformation

log = logging.getLogger(__name__)

__all__ = ["RecordMetadata", "SourceTaskRunner"]


class RecordMetadata:
    """What Kafka acknowledged for a record (given to ``SourceTask.commit_record``)."""

    __slots__ = ("offset", "partition", "timestamp", "topic")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp


class SourceTaskRunner(TaskRunner):
    """Runs one SourceTask on its own thread (see the module docstring)."""

    def __init__(self, task_id: TaskId, task: SourceTask, settings: SourceRunnerSettings) -> None:
        super().__init__(
            task_id, settings.task_config, settings.status, settings.target_state, settings.on_topic
        )
        self._transforms: TransformationChain[SourceRecord] | None = (
            settings.transforms if settings.transforms else None
        )
        self.errors = settings.errors or ErrorHandler(task_id, ErrorPolicy(), self.metrics)
        self.errors.metrics = self.metrics
        self.task = task
        self.converters = settings.converters
        self._producer_config = settings.producer_config
        self._producer_factory = settings.producer_factory
        self._store = settings.offset_store
        self._flush_interval = settings.offset_flush_interval_ms / 1000.0
        self._flush_timeout = settings.offset_flush_timeout_ms / 1000.0
        self._producer: Producer | None = None
        self._offsets = SourceOffsetCommitter(
            task_id, task, self._store, self.errors, self.metrics, self._flush_timeout
        )
        self._delivery_error: tuple[KafkaError, str] | None = None
        # Only tasks that override commit_record pay for per-record delivery callbacks.
        self._wants_commit_record = type(task).commit_record is not SourceTask.commit_record
        self._topics: set[str] = set()
        self._topic_creator = settings.topic_creator

    @property
    def topics(self) -> set[str]:
        """Topics this task has produced to (for topic tracking)."""
        return set(self._topics)

    def on_stop_requested(self) -> None:
        self.errors.stop()
        try:
            self.task.stop()
        except Exception:
            log.exception("Error calling stop() on source task %s", self.id)

    # -- delivery callbacks (called from producer.poll/flush on this thread) ----------------
    def _on_delivery_error(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None and self.errors.policy.tolerate_all:
            self.metrics.errors += 1
            self.metrics.records_skipped += 1
            log.warning(
                "Task %s: delivery to %s-%s failed, skipped (errors.tolerance=all): %s",
                self.id,
                msg.topic(),
                msg.partition(),
                err.str(),
            )
            return
        if err is not None and self._delivery_error is None:
            self._delivery_error = (err, f"topic={msg.topic()} partition={msg.partition()}")

    def execute(self) -> None:
        reader = OffsetStorageReaderImpl(self._store, self.id.connector)
        self.task.initialize(SourceTaskContextImpl(self.task_config, reader, self.plugin_metrics))
        self.call_clock.enter("start")
        self.task.start(self.task_config)
        self.call_clock.leave()
        cfg = dict(self._producer_config)
        if not self._wants_commit_record:
            cfg["delivery.report.only.error"] = True
        cfg["on_delivery"] = self._on_delivery_error
        self._producer = self._producer_factory(cfg)
        self.report_running_or_paused()
        try:
            self._loop()
        except BaseException:
            self._close_transforms()
            # Still store the offsets of what was acknowledged before the failure.
            try:
                self._final_commit()
            except Exception:
                log.exception("Task %s: final offset commit after failure failed", self.id)
            raise
        self._close_transforms()
        self._final_commit()

    def _close_transforms(self) -> None:
        if self._transforms is not None:
            try:
                self._transforms.close()
            except Exception:
                log.exception("Task %s: error closing transformations", self.id)

    def _loop(self) -> None:
        producer = self._producer
        assert producer is not None
        task = self.task
        metrics = self.metrics
        clock = self.call_clock
        next_commit = time.monotonic() + self._flush_interval
        while not self.stopping:
            if self.target_state is TargetState.PAUSED and not self.wait_while_paused():
                break
            clock.enter("poll")
            try:
                records = task.poll()
            except RetriableError as e:
                log.warning("Task %s: retriable error from poll(), polling again: %s", self.id, e)
                metrics.retries += 1
                records = None
            except Exception as e:
                if self.stopping:
                    break
                raise TaskFailure(self.id, TaskStage.TASK_POLL, repr(e)) from e
            finally:
                clock.leave()
            if records:
                limiter = self.rate_limiter  # task.rate.limit.*, before produce
                if limiter is not None and not limiter.admit(
                    len(records), record_bytes(records) if limiter.limits_bytes else 0
                ):
                    break  # stopping: not produced, so not committed; polled again later
                t0 = time.perf_counter()
                metrics.records_polled += len(records)
                if self._transforms is not None:
                    records = self._transform(records)
                self._send(records, producer)
                metrics.observe_batch(time.perf_counter() - t0)
            producer.poll(0)
            self._check_delivery()
            if time.monotonic() >= next_commit:
                self.commit_offsets()
                next_commit = time.monotonic() + self._flush_interval

    def while_paused(self) -> None:
        if self._producer is not None:
            self._producer.poll(0)

    def _send(self, records: list[SourceRecord], producer: Producer) -> None:
        """Convert and produce one polled batch (the hot path)."""
        key_conv = self.converters.key.from_connect_data
        value_conv = self.converters.value.from_connect_data
        key_pass = self.converters.key.BYTES_PASSTHROUGH
        value_pass = self.converters.value.BYTES_PASSTHROUGH
        produce = producer.produce
        offsets = self._offsets
        pending = offsets.pending
        connector = self.id.connector
        topics = self._topics
        per_record_cb = self._wants_commit_record
        last_partition: object = None
        last_key = b""
        sent = 0
        try:
            for record in records:
                topic = record.topic
                kb: bytes | None
                vb: bytes | None
                try:
                    key = record.key
                    if key is None and record.key_schema is None:
                        kb = None
                    elif key_pass and type(key) is bytes:
                        kb = key
                    else:
                        kb = key_conv(topic, record.key_schema, key)
                    value = record.value
                    if value_pass and type(value) is bytes:
                        vb = value
                    else:
                        vb = value_conv(topic, record.value_schema, value)
                except Exception:
                    # Slow path for this one record: retries, tolerance, DLQ per stage.
                    converted = self._convert_slow(record)
                    if converted is None:
                        self._skipped(record)
                        continue
                    kb, vb = converted
                if topic not in topics:
                    self._first_send_to(topic, record)
                try:
                    if record.headers or record.kafka_partition is not None or per_record_cb:
                        kwargs = self._produce_options(record)
                        produce(topic, vb, kb, **kwargs)
                    elif record.timestamp is not None:
                        produce(topic, vb, kb, timestamp=record.timestamp)
                    else:
                        produce(topic, vb, kb)
                except BufferError:
                    if not self._produce_when_room(producer, topic, vb, kb, record):
                        break  # stopping: unsent records are not committed, re-polled later
                except TaskFailure:
                    raise
                except Exception as e:
                    self._produce_failed(record, e)
                    continue
                sent += 1
                sp = record.source_partition
                if sp is not None:
                    if sp is not last_partition:
                        last_key = encode_key(connector, sp)
                        last_partition = sp
                    pending[last_key] = record.source_offset
        finally:
            offsets.pending_records += sent

    def _first_send_to(self, topic: str, record: SourceRecord) -> None:
        """Before the first record to ``topic``: create it if topic creation is used, then
        track it."""
        if self._topic_creator is not None:
            try:
                self._topic_creator.ensure(topic)
            except Exception as e:
                raise TaskFailure(self.id, TaskStage.KAFKA_PRODUCE, str(e), record) from e
        self._topics.add(topic)
        self.on_topic(topic)

    def _convert_slow(self, record: SourceRecord) -> tuple[bytes | None, bytes | None] | None:
        """Convert one record stage by stage under the error policy; None if skipped."""
        conv, errors, topic = self.converters, self.errors, record.topic
        kb: bytes | None = None
        if record.key is not None or record.key_schema is not None:
            ok, kb = errors.call(
                TaskStage.KEY_CONVERTER,
                class_path(conv.key),
                lambda: conv.key.from_connect_data(topic, record.key_schema, record.key),
                record=record,
            )
            if not ok:
                return None
        ok, vb = errors.call(
            TaskStage.VALUE_CONVERTER,
            class_path(conv.value),
            lambda: conv.value.from_connect_data(topic, record.value_schema, record.value),
            record=record,
        )
        if not ok:
            return None
        if record.headers:
            ok, _ = errors.call(
                TaskStage.HEADER_CONVERTER,
                class_path(conv.header),
                lambda: self._produce_options(record),
                record=record,
            )
            if not ok:
                return None
        return kb, vb

    def _produce_failed(self, record: SourceRecord, error: Exception) -> None:
        """``produce()`` raised (e.g. a record too large): skip it under errors.tolerance=all,
        otherwise fail the task (stage KAFKA_PRODUCE)."""
        failure = Failure(TaskStage.KAFKA_PRODUCE, "confluent_kafka.Producer", error, record=record)
        if not self.errors.policy.tolerate_all:
            raise TaskFailure(self.id, TaskStage.KAFKA_PRODUCE, repr(error), record) from error
        self.metrics.errors += 1
        self.errors.report(failure)
        self._skipped(record)

    def _skipped(self, record: SourceRecord) -> None:
        """A record that will not be produced: its offset still becomes committable (stored
        once everything before it is acknowledged) and ``commit_record(r, None)``."""
        self.metrics.records_skipped += 1
        if record.source_partition is not None:
            key = encode_key(self.id.connector, record.source_partition)
            self._offsets.pending[key] = record.source_offset
        if self._wants_commit_record:
            self.task.commit_record(record, None)

    def _transform(self, records: list[SourceRecord]) -> list[SourceRecord]:
        """Apply the SMT chain; dropped or tolerated records are :meth:`_skipped`."""
        chain = self._transforms
        assert chain is not None
        transformed = chain.apply_batch(records)
        if transformed is not None:
            return transformed
        # Record by record: a stage drops or fans out records, or one failed.
        out: list[SourceRecord] = []
        for record in records:
            try:
                result = chain.apply(record)
            except Exception as exc:
                ok, result = self.errors.call(
                    TaskStage.TRANSFORMATION,
                    failed_transformation(exc) or type(chain).__name__,
                    functools.partial(chain.apply, record),
                    record=record,
                )
                if not ok:
                    self._skipped(record)
                    continue
            if result:
                out.extend(result)
            else:
                self._skipped(record)
        return out

    def _produce_options(self, record: SourceRecord) -> dict[str, Any]:
        """Keyword arguments for ``produce`` beyond topic, value and key (the slower path)."""
        kwargs: dict[str, Any] = {}
        if record.headers:
            header_conv = self.converters.header.from_connect_header
            try:
                kwargs["headers"] = [
                    (h.key, header_conv(record.topic, h.key, h.schema, h.value))
                    for h in record.headers
                ]
            except Exception as e:
                raise TaskFailure(self.id, TaskStage.HEADER_CONVERTER, repr(e), record) from e
        if record.kafka_partition is not None:
            kwargs["partition"] = record.kafka_partition
        if record.timestamp is not None:
            kwargs["timestamp"] = record.timestamp
        if self._wants_commit_record:
            kwargs["on_delivery"] = self._commit_record_callback(record)
        return kwargs

    def _produce_when_room(
        self, producer: Producer, topic: str, vb: Any, kb: Any, record: SourceRecord
    ) -> bool:
        """The local queue is full: back-pressure. Serve delivery reports until the record
        fits; False if the task is stopping first."""
        kwargs = self._produce_options(record)
        while True:
            producer.poll(0.05)
            self._check_delivery()
            if self.stopping:
                return False
            try:
                producer.produce(topic, vb, kb, **kwargs)
                return True
            except BufferError:
                continue

    def _commit_record_callback(self, record: SourceRecord) -> Callable[[Any, Message], None]:
        def done(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                self._on_delivery_error(err, msg)
                return
            ts = msg.timestamp()[1] if msg.timestamp() else None
            self.task.commit_record(
                record,
                RecordMetadata(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, ts),
            )

        return done

    def _check_delivery(self) -> None:
        if self._delivery_error is not None:
            err, where = self._delivery_error
            raise TaskFailure(
                self.id, TaskStage.KAFKA_PRODUCE, f"delivery failed ({where}): {err.str()}"
            )

    def commit_offsets(self) -> bool:
        """Store the pending offsets once all produced records are acknowledged.

        Returns True when a commit happened (or there was nothing to commit).
        """
        producer = self._producer
        if producer is None:
            return False
        self.call_clock.enter("commit")  # waits for acks, then commit()/commit_record()
        try:
            return self._offsets.commit(producer, self._check_delivery)
        finally:
            self.call_clock.leave()

    def _final_commit(self) -> None:
        try:
            if self._producer is not None and self._delivery_error is None:
                self.commit_offsets()
        finally:
            self._close_producer()

    def _close_producer(self) -> None:
        self.errors.close()
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(min(self._flush_timeout, 5.0))

    def close_after_failure(self) -> None:
        try:
            self.task.stop()
        finally:
            self._close_producer()
