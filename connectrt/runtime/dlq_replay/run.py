"""One replay run: re-deliver a connector's dead letter queue records, once.

The run reads each DLQ partition from its replay group's committed position (the earliest
offset the first time) up to the end offset it finds when it starts, so records that fail
again and come back to the DLQ during the run are not replayed again by it. For each record:

* records of another connector (a shared DLQ, told by ``__connect.errors.connector.name``),
  before ``from``, replayed ``max_replays`` times already, or truncated to fit the DLQ
  (``__connect.errors.truncated``, :mod:`connectrt.runtime.tasks.dlq_sizing`: not the original
  record) are skipped; a record at or after ``to`` holds its partition back (it and what follows
  stay for a later run);
* a **sink** connector's record (the original consumed record) is produced again, key, value
  and headers as they were, to the topic and partition it was consumed from
  (``__connect.errors.topic``/``.partition``): the connector's consumer group is past the
  original, so its tasks consume the copy once, through the converters and transforms of
  their current config;
* a **source** connector's record (a document, :mod:`connectrt.runtime.tasks.dlq_documents`) goes
through the
  connector's current transforms (if it failed in one) and converters here, and is produced to
  its topic (:class:`~connectrt.runtime.dlq_replay.source_replay.SourceRecordReplayer`).

Every copy carries its replay count and the error history
(:func:`connectrt.runtime.tasks.dlq_headers.for_replay`). A copy that cannot be converted or
produced goes straight back to the DLQ with the count raised; a sink task that fails a copy again
writes it to the DLQ itself. After each batch the run waits for every copy and write-back to be
acknowledged, then commits the batch's DLQ positions to its consumer group
(``connectrt-dlq-replay-<connector>``), so a later run starts after them. A dry run reads and
counts the same records without producing or committing.

For a sink, once everything is re-delivered the run waits (``AWAITING_SINK``) until the
connector's consumer group has committed past the copies (a sink flushes its dead letter
records before committing), then counts the copies of this run that are back in the DLQ
(``failed_again``). Without that wait it could not tell what the sink did with them.

Lifecycle: built and started by :class:`~connectrt.runtime.dlq_replay.replays.DlqReplays`;
:meth:`ReplayRun.run` runs on the run's own thread and owns the Kafka clients; :meth:`stop`
may be called from any thread and takes effect after the batch in hand (which is committed).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaConsumer, KafkaError, KafkaMessage, new_consumer
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.dlq_replay.producer import ReplayProducer
from connectrt.runtime.dlq_replay.progress import (
    PartitionProgress,
    ReplayProgress,
    ReplayState,
    SkipReason,
)
from connectrt.runtime.dlq_replay.sink_watch import SinkWatch
from connectrt.runtime.dlq_replay.source_replay import Encoded, SourceRecordReplayer
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.tasks.dlq_documents import UnreadableDocument, source_record_document
from connectrt.runtime.tasks.dlq_headers import (
    CONTEXT_PREFIX,
    RawHeaders,
    for_replay,
    header_text,
    original_topic_partition,
    replay_count,
)
from connectrt.runtime.tasks.dlq_sizing import TRUNCATED_HEADER
from connectrt.runtime.tasks.runner import TaskStage

log = logging.getLogger(__name__)

__all__ = ["ReplayClients", "ReplayRun", "ReplayTarget"]

_BATCH = 500


@dataclass(frozen=True)
class ReplayTarget:
    """The connector a run replays to, as its config was when the run started."""

    connector: str
    connector_type: str  # "sink" or "source"
    dlq_topic: str
    context_headers: bool  # errors.deadletterqueue.context.headers.enable
    sink_topics: frozenset[str] = frozenset()
    sink_pattern: re.Pattern[str] | None = None

    def consumes(self, topic: str) -> bool:
        return topic in self.sink_topics or (
            self.sink_pattern is not None and self.sink_pattern.fullmatch(topic) is not None
        )

    @property
    def only_topic(self) -> str | None:
        """The sink's one topic, when it reads exactly one (and no pattern)."""
        if self.sink_pattern is None and len(self.sink_topics) == 1:
            return next(iter(self.sink_topics))
        return None


@dataclass(frozen=True)
class ReplayClients:
    """Client settings (the connector's, with its overrides) and the worker's offset admin."""

    consumer_config: dict[str, Any]
    producer_config: dict[str, Any]
    offset_admin: OffsetAdmin
    await_timeout_s: float = 600.0
    stall_timeout_s: float = 60.0


class ReplayRun:
    """See the module docstring. ``connector_exists()`` is checked between batches and while
    awaiting the sink: a deleted connector cancels its run."""

    def __init__(
        self,
        progress: ReplayProgress,
        target: ReplayTarget,
        clients: ReplayClients,
        source_replayer: SourceRecordReplayer | None,
        connector_exists: Callable[[], bool],
    ) -> None:
        self.progress = progress
        self._target = target
        self._request = progress.request
        self._clients = clients
        self._source = source_replayer
        self._exists = connector_exists
        self._stop = threading.Event()
        self._consumer: KafkaConsumer | None = None
        self._producer: ReplayProducer | None = None
        self._watch: SinkWatch | None = None
        self._ends: dict[int, int] = {}
        self._sink_targets: dict[TopicPartition, int] = {}  # copies: next offset per partition

    # -- lifecycle -----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def _cancelled(self) -> bool:
        if not self._stop.is_set() and not self._exists():
            self.progress.note(f"Connector {self._target.connector} was deleted")
            self._stop.set()
        return self._stop.is_set()

    def run(self) -> None:
        """The whole run, on the calling thread; ends in COMPLETED, CANCELLED or FAILED."""
        try:
            self._replay()
            if not self._cancelled() and self._sink_targets:
                self.progress.set_state(ReplayState.AWAITING_SINK)
                self._await_sink()
            if self._stop.is_set():
                self.progress.set_state(ReplayState.CANCELLED)
            else:
                self.progress.set_state(ReplayState.COMPLETED)
        except Exception as e:
            log.exception(
                "Replay %s of connector %s failed", self.progress.id, self.progress.connector
            )
            self.progress.set_state(ReplayState.FAILED, str(e) or type(e).__name__)
        finally:
            self._close()

    def _close(self) -> None:
        """Release the clients (the finished run is kept for its status: no connection may
        outlive it)."""
        source, producer, watch, consumer = (
            self._source,
            self._producer,
            self._watch,
            self._consumer,
        )
        self._source = self._producer = self._watch = self._consumer = None
        if source is not None:
            source.close()
        if producer is not None:
            producer.close()
        if watch is not None:
            watch.close()
        if consumer is not None:
            consumer.close()

    # -- reading the DLQ -----------------------------------------------------------------------
    def _replay(self) -> None:
        topic, admin = self._target.dlq_topic, self._clients.offset_admin
        tps = admin.partitions([topic])
        if not tps:
            self.progress.note(
                f"The dead letter queue topic {topic} does not exist: nothing failed"
            )
            return
        self._ends = {tp.partition: o for tp, o in admin.latest(tps).items()}
        lows = {tp.partition: o for tp, o in admin.earliest(tps).items()}
        committed = admin.group_offsets(self.progress.group)
        remaining: dict[int, int] = {}
        for tp in tps:
            p, end = tp.partition, self._ends[tp.partition]
            start = min(max(committed.get(tp, lows[p]), lows[p]), end)
            self.progress.set_partition(PartitionProgress(p, start, end, start))
            if start < end:
                remaining[p] = start
        if not remaining:
            return
        self._consumer = new_consumer(
            {**self._clients.consumer_config, "enable.partition.eof": True}
        )
        self._consumer.assign([KafkaTopicPartition(topic, p, o) for p, o in remaining.items()])
        if not self._request.dry_run:
            self._producer = ReplayProducer(
                self._clients.producer_config,
                topic,
                self._target.connector,
                self._target.context_headers,
                self.progress,
            )
        last_read = time.monotonic()
        while remaining and not self._cancelled():
            messages = self._consumer.consume(_BATCH, 0.5)
            if not messages:
                if time.monotonic() - last_read > self._clients.stall_timeout_s:
                    raise ConnectError(
                        f"Reading the dead letter queue {topic} made no progress for "
                        f"{self._clients.stall_timeout_s:g} s (partitions "
                        f"{sorted(remaining)} still to read)"
                    )
                continue
            last_read = time.monotonic()
            positions: dict[int, int] = {}
            for msg in messages:
                self._read(msg, remaining, positions)
            self._complete_batch(positions)

    def _done(self, partition: int, remaining: dict[int, int]) -> None:
        if remaining.pop(partition, None) is not None and self._consumer is not None:
            tp = KafkaTopicPartition(self._target.dlq_topic, partition)
            self._consumer.pause([tp])

    def _read(
        self, msg: KafkaMessage, remaining: dict[int, int], positions: dict[int, int]
    ) -> None:
        partition = msg.partition() or 0
        if partition not in remaining:
            return
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                self._done(partition, remaining)
                return
            raise ConnectError(
                f"Reading the dead letter queue {self._target.dlq_topic} failed: {err.str()}"
            )
        offset = msg.offset() or 0
        if offset >= self._ends[partition]:
            self._done(partition, remaining)
            return
        ts_type, ts = msg.timestamp()
        timestamp = ts if ts_type else None
        to_ms = self._request.to_ms
        if to_ms is not None and timestamp is not None and timestamp >= to_ms:
            self._done(partition, remaining)  # held back for a later run
            return
        self.progress.add(read=1)
        self._handle(msg, partition, offset, timestamp)
        positions[partition] = offset + 1
        if offset + 1 >= self._ends[partition]:
            self._done(partition, remaining)

    def _handle(
        self, msg: KafkaMessage, partition: int, offset: int, timestamp: int | None
    ) -> None:
        headers: RawHeaders = list(msg.headers() or [])
        request = self._request
        owner = header_text(headers, CONTEXT_PREFIX + "connector.name")
        if owner is not None and owner != self._target.connector:
            self.progress.skip(SkipReason.OTHER_CONNECTOR)
            return
        if request.from_ms is not None and timestamp is not None and timestamp < request.from_ms:
            self.progress.skip(SkipReason.BEFORE_FROM)
            return
        if request.max_replays is not None and replay_count(headers) >= request.max_replays:
            self.progress.skip(SkipReason.MAX_REPLAYS)
            return
        if header_text(headers, TRUNCATED_HEADER) is not None:
            self.progress.skip(SkipReason.TRUNCATED)  # a cut copy: replaying it would corrupt
            return
        origin = f"{self._target.dlq_topic}/{partition}/{offset}"
        replay_headers, _ = for_replay(headers, self.progress.id, origin)
        if self._target.connector_type == "sink":
            self._replay_sink_record(msg, headers, replay_headers, timestamp)
        else:
            self._replay_source_record(msg, replay_headers)

    # -- sink records --------------------------------------------------------------------------
    def _replay_sink_record(
        self, msg: KafkaMessage, headers: RawHeaders, replay_headers: RawHeaders, ts: int | None
    ) -> None:
        topic, partition = original_topic_partition(headers)
        if topic is None:
            topic, partition = self._target.only_topic, None
            if topic is None:
                self.progress.skip(SkipReason.NO_TOPIC)
                return
        if not self._target.consumes(topic):
            self.progress.skip(SkipReason.TOPIC_NOT_CONSUMED)
            return
        producer = self._producer
        if producer is None:  # a dry run
            self.progress.add(replayed=1)
            return
        key, value = msg.key(), msg.value()

        def delivered(err: KafkaError | None, copy: Any) -> None:
            if err is None:
                tp = TopicPartition(copy.topic() or topic, copy.partition() or 0)
                after = (copy.offset() or 0) + 1
                self._sink_targets[tp] = max(self._sink_targets.get(tp, 0), after)
                self.progress.add(replayed=1)
            else:
                producer.refused(key, value, replay_headers, ts, topic, partition, err.str())

        producer.produce(topic, partition, key, value, replay_headers, ts, delivered)

    # -- source records ------------------------------------------------------------------------
    def _replay_source_record(self, msg: KafkaMessage, replay_headers: RawHeaders) -> None:
        assert self._source is not None
        try:
            encoded, failures = self._source.replay(msg.value())
        except UnreadableDocument:
            self.progress.skip(SkipReason.UNREADABLE)
            return
        if not encoded and not failures:
            self.progress.skip(SkipReason.DROPPED_BY_TRANSFORMS)
            return
        producer = self._producer
        if producer is None:  # a dry run: what would happen
            self.progress.add(replayed=len(encoded), failed_again=len(failures))
            return
        for failure in failures:
            record = failure.record
            context = producer.context(
                record.topic,
                record.kafka_partition,
                failure.stage,
                failure.class_name,
                failure.error,
                failure.trace,
            )
            document = source_record_document(record, failure.stage)
            producer.write_back(None, document, replay_headers + context, record.timestamp)
        for enc in encoded:

            def delivered(err: KafkaError | None, copy: Any, e: Encoded = enc) -> None:
                if err is None:
                    self.progress.add(replayed=1)
                    return
                document = source_record_document(e.record, TaskStage.KAFKA_PRODUCE)
                producer.refused(
                    None, document, replay_headers, e.timestamp, e.topic, e.partition, err.str()
                )

            producer.produce(
                enc.topic,
                enc.partition,
                enc.key,
                enc.value,
                enc.headers + replay_headers,
                enc.timestamp,
                delivered,
            )

    # -- batches and the sink ------------------------------------------------------------------
    def _complete_batch(self, positions: dict[int, int]) -> None:
        """Settle the batch's copies and write-backs, then commit its DLQ positions (a dry
        run commits nothing)."""
        if self._producer is not None:
            self._producer.settle()
            if positions and self._consumer is not None:
                self._consumer.commit(
                    offsets=[
                        KafkaTopicPartition(self._target.dlq_topic, p, o)
                        for p, o in positions.items()
                    ],
                    asynchronous=False,
                )
        for p, o in positions.items():
            self.progress.advance(p, o)

    def _await_sink(self) -> None:
        assert self._producer is not None
        clients = self._clients
        self._watch = SinkWatch(
            clients.consumer_config,
            clients.offset_admin,
            self._target.dlq_topic,
            self._ends,
            self._producer.written_back,
            self.progress,
        )
        caught_up = self._watch.wait(
            f"connect-{self._target.connector}",
            self._sink_targets,
            clients.await_timeout_s,
            clients.stall_timeout_s,
            self._cancelled,
        )
        if self._stop.is_set():
            return
        self.progress.set_sink_caught_up(caught_up)
        if not caught_up:
            self.progress.note(
                f"The sink had not consumed every replayed record after "
                f"{clients.await_timeout_s:g} s (is it RUNNING?); failed_again counts the "
                "records back in the dead letter queue so far"
            )
