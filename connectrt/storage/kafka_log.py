"""A compacted Kafka topic read into memory: the base of the Kafka-backed stores.

:class:`TopicLog` is the "Kafka-based log" behind the offsets store (and the config and status
stores): it creates the topic if needed, replays it from the beginning to the end through a
callback, and writes new records with a Java-compatible key partitioner (the producer side is
:class:`~connectrt.storage.topic_writer.TopicWriter`).

How "the end" is found (``read_to_end`` does not ask ListOffsets, the embedded broker errs;
only a stalled read asks, to name an undecided transaction: :mod:`~.undecided`).

* ``start()`` assigns every partition at ``OFFSET_BEGINNING`` with ``enable.partition.eof=true``
  and consumes until every partition has reported EOF.
* ``read_to_end()`` cannot rely on EOF: librdkafka emits it only when new records were consumed
  since the last one (re-assigning or seeking does not re-arm it; measured with librdkafka
  2.12). Instead it relies on the high watermark carried by fetch responses
  (``get_watermark_offsets(cached=True)``), which the consumer refreshes continuously: an idle
  fetch returns after at most ``fetch.wait.max.ms``. The call keeps consuming for at least
  ``2 * fetch.wait.max.ms + 50 ms`` (a fetch *issued after the call began* comes back), then
  until our position in every partition has reached that high watermark: a record acknowledged
  before the call is always seen, and a call with nothing new returns after ~150 ms with the
  ``fetch.wait.max.ms=50`` set here. Positions are tracked from the records and EOF events.

Threading: ``send``/``flush``/``send_and_wait`` may be called from any thread. ``start``,
``read_to_end`` and ``stop`` are serialized by a lock, and ``on_record`` runs on the thread that
called ``start``/``read_to_end``, never concurrently with itself.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.errors import ConfigError, ConnectError
from connectrt.storage.client_diagnosis import ClientWatch
from connectrt.storage.internal_topics import (
    InternalTopic,
    cleanup_policy_refusal,
    replication_factor_refusal,
    topic_cleanup_policy,
)
from connectrt.storage.topic_writer import TopicWriter
from connectrt.storage.undecided import undecided_note

__all__ = ["RecordCallback", "TopicLog"]

log = logging.getLogger(__name__)
_client_logger = logging.getLogger("connectrt.storage.kafka.client")

RecordCallback = Callable[[bytes | None, bytes | None, int, int], None]

# Settings the log's correctness depends on; they override whatever the caller passes.
_PRODUCER_REQUIRED = {
    "acks": "all",
    "enable.idempotence": True,
    # Java's default partitioner (murmur2 of the key), so keys land where Java workers put them.
    "partitioner": "murmur2_random",
}
_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 5}
_CONSUMER_REQUIRED = {"enable.partition.eof": True, "enable.auto.commit": False}
_CONSUMER_DEFAULTS: dict[str, Any] = {
    "fetch.wait.max.ms": 50,
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",
}
_CONSUME_BATCH = 1000
_EOF_GUARD_S = 0.05


class TopicLog:
    """One topic, replayed to ``on_record`` and written through an idempotent producer.

    ``replication_factor=-1`` lets the broker pick (its ``default.replication.factor``).
    ``internal`` (a worker's internal topic: configs, offsets, status) makes ``start`` refuse,
    with :class:`ConfigError`, an existing topic whose cleanup policy is not ``compact`` and a
    missing one whose replication factor exceeds the cluster's brokers
    (:mod:`~connectrt.storage.internal_topics`). ``timeout`` bounds how long ``start`` waits
    for the cluster and how long a read may go without progress (then :class:`ConnectError`).
    """

    def __init__(
        self,
        topic: str,
        producer_config: Mapping[str, Any],
        consumer_config: Mapping[str, Any],
        admin_config: Mapping[str, Any],
        on_record: RecordCallback,
        *,
        partitions: int = 1,
        replication_factor: int = -1,
        topic_configs: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        start_at_snapshot: bool = False,
        internal: InternalTopic | None = None,
    ) -> None:
        if partitions < 1:
            raise ConnectError(f"partitions must be at least 1, got {partitions}")
        self.topic = topic
        self._producer_config = {**_PRODUCER_DEFAULTS, **producer_config, **_PRODUCER_REQUIRED}
        consumer = {**_CONSUMER_DEFAULTS, **consumer_config, **_CONSUMER_REQUIRED}
        # Mandatory for the client, never used: partitions are assigned, nothing committed.
        consumer.setdefault("group.id", f"connectrt-log-{topic}-{uuid.uuid4().hex[:12]}")
        self._consumer_config = consumer
        self._admin_config = dict(admin_config)
        self._on_record = on_record
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._topic_configs = {"cleanup.policy": "compact", **(topic_configs or {})}
        self._timeout = timeout
        self._start_at_snapshot = start_at_snapshot
        self._internal = internal
        self._fetch_wait_s = float(consumer.get("fetch.wait.max.ms", 500)) / 1000.0

        self._consumer: Consumer | None = None
        self._positions: dict[int, int] = {}
        self._read_lock = threading.Lock()
        self._watch = ClientWatch(_client_logger)
        self._writer = TopicWriter(
            topic,
            timeout=timeout,
            bootstrap_servers=self.bootstrap_servers,
            last_client_error=lambda: self._watch.last_error,
        )

    @classmethod
    def for_clients(
        cls,
        topic: str,
        bootstrap_servers: str | None,
        producer_config: Mapping[str, Any] | None,
        consumer_config: Mapping[str, Any] | None,
        admin_config: Mapping[str, Any] | None,
        on_record: RecordCallback,
        **options: Any,
    ) -> TopicLog:
        """A log whose three clients share ``bootstrap.servers`` (when given) plus their own
        settings; ``options`` are the keyword options of the constructor."""
        common: dict[str, Any] = {}
        if bootstrap_servers is not None:
            common["bootstrap.servers"] = bootstrap_servers
        return cls(
            topic,
            {**common, **(producer_config or {})},
            {**common, **(consumer_config or {})},
            {**common, **(admin_config or {})},
            on_record,
            **options,
        )

    # -- properties -------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return str(self._admin_config.get("bootstrap.servers", "?"))

    @property
    def partition_count(self) -> int:
        """Partitions of the topic as found at ``start`` (may differ from the requested count)."""
        return len(self._positions)

    def positions(self) -> dict[int, int]:
        """Next offset to read per partition (what has been passed to ``on_record``)."""
        with self._read_lock:
            return dict(self._positions)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Create the topic if absent, then replay it from the beginning to partition EOF."""
        with self._read_lock:
            if self._consumer is not None:
                raise ConnectError(f"TopicLog({self.topic}) already started")
            admin = AdminClient(self._client_config(self._admin_config))
            self._ensure_topic(admin)
            consumer = Consumer(self._client_config(self._consumer_config))
            try:
                partitions = self._wait_for_partitions(consumer)
                self._writer.attach(Producer(self._client_config(self._producer_config)))
                consumer.assign(
                    [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions]
                )
                self._consumer = consumer
                self._positions = {p: 0 for p in partitions}
                targets = (
                    self._end_snapshot(consumer, partitions) if self._start_at_snapshot else None
                )
                self._read_until_eof(partitions, targets)
            except BaseException:
                self._consumer = None
                self._writer.detach()
                consumer.close()
                raise

    def write_transactionally(
        self, transactional_id: str, on_fenced: Callable[[str], None], timeout: float | None = None
    ) -> None:
        """From now on write through a transactional producer with ``transactional_id``, which
        fences any other producer with that id (:meth:`TopicWriter.take_transactional_id`)."""
        config = self._client_config(
            {**self._producer_config, "transactional.id": transactional_id}
        )
        self._writer.take_transactional_id(config, on_fenced, timeout)

    def stop(self, flush_timeout: float = 5.0) -> None:
        """Flush pending writes (bounded) and close the clients. Idempotent."""
        producer = self._writer.detach()
        if producer is not None:
            remaining = producer.flush(flush_timeout)
            if remaining:
                log.warning(
                    "%d record(s) to %s not delivered when the log stopped", remaining, self.topic
                )
        with self._read_lock:
            consumer, self._consumer = self._consumer, None
            if consumer is not None:
                consumer.close()

    # -- reading ----------------------------------------------------------------------------

    def read_to_end(self, timeout: float | None = None) -> None:
        """Consume until every record acknowledged before this call has gone to ``on_record``.

        ``timeout`` (default: the constructor's) bounds the time without progress.
        """
        stall = self._timeout if timeout is None else timeout
        with self._read_lock:
            consumer = self._require_consumer()
            started = time.monotonic()
            min_done = started + 2 * self._fetch_wait_s + _EOF_GUARD_S
            last_progress = started
            tps = [TopicPartition(self.topic, p) for p in self._positions]
            while True:
                now = time.monotonic()
                wait = min(0.05, min_done - now) if now < min_done else 0.05
                if self._consume_batch(consumer, wait, eofs=None):
                    last_progress = time.monotonic()
                now = time.monotonic()
                if now >= min_done and self._caught_up(consumer, tps):
                    return
                if now - last_progress > stall:
                    why = undecided_note(self._admin_config, self.topic, self._positions)
                    raise ConnectError(
                        f"Reading topic {self.topic} to its end made no progress for {stall} s "
                        f"(positions {self._positions}; last client error: "
                        f"{self._watch.last_error}){why}"
                    )

    def _end_snapshot(self, consumer: Consumer, partitions: list[int]) -> dict[int, int]:
        """Each partition's end offset now (ListOffsets; a read_committed consumer gets the
        last stable offset). On the embedded test broker this is the base offset of the last
        batch + 1, a lower bound: reading up to it still delivers that whole batch."""
        out = {}
        for p in partitions:
            tp = TopicPartition(self.topic, p)
            out[p] = consumer.get_watermark_offsets(tp, self._timeout, cached=False)[1]
        return out

    def _read_until_eof(self, partitions: list[int], targets: dict[int, int] | None) -> None:
        """Consume until every partition reported EOF, or (``targets`` given) until our
        position reached the partition's target: a partition that others keep writing to
        (transactions committed every few milliseconds) may not report EOF for a long time
        on every broker, so a reader that only needs what was there when it started stops
        at the snapshot. With ``targets`` an EOF below the target (a fetch answered before the
        snapshot, at a stable offset the broker has moved past since) does not end the read."""
        assert self._consumer is not None
        pending = set(partitions)
        last_progress = time.monotonic()
        while pending:
            eofs: set[int] = set()
            if self._consume_batch(self._consumer, 0.1, eofs=eofs):
                last_progress = time.monotonic()
            if targets is None:
                pending -= eofs
            else:
                pending -= {p for p in pending if self._positions[p] >= targets[p]}
            if time.monotonic() - last_progress > self._timeout:
                raise ConnectError(
                    f"Reading topic {self.topic} from {self.bootstrap_servers} made no progress "
                    f"for {self._timeout} s; partitions without EOF: {sorted(pending)} "
                    f"(last client error: {self._watch.last_error})"
                )

    def _consume_batch(self, consumer: Consumer, wait: float, eofs: set[int] | None) -> bool:
        """Consume one batch; return True if anything (record or EOF) arrived."""
        try:
            messages = consumer.consume(_CONSUME_BATCH, wait)
        except KafkaException as exc:
            raise ConnectError(f"Reading topic {self.topic} failed: {exc}") from exc
        for msg in messages:
            self._handle(msg, eofs)
        return bool(messages)

    def _handle(self, msg: Message, eofs: set[int] | None) -> None:
        err = msg.error()
        partition = msg.partition()
        offset = msg.offset()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                if partition is not None and offset is not None:
                    # EOF offset = high watermark; covers gaps such as transaction markers.
                    if offset > self._positions.get(partition, 0):
                        self._positions[partition] = offset
                    if eofs is not None:
                        eofs.add(partition)
                return
            if err.fatal():
                raise ConnectError(f"Reading topic {self.topic} failed: {err}")
            log.warning("Error while reading topic %s: %s", self.topic, err)
            return
        if partition is None or offset is None:
            return
        if offset < self._positions.get(partition, 0):
            return  # a record replayed by a refetch; already delivered
        self._positions[partition] = offset + 1
        self._on_record(msg.key(), msg.value(), partition, offset)

    def _caught_up(self, consumer: Consumer, tps: list[TopicPartition]) -> bool:
        for tp in tps:
            _low, high = consumer.get_watermark_offsets(tp, cached=True)
            if high < 0 or self._positions[tp.partition] < high:
                return False
        return True

    # -- writing (by the log's TopicWriter) -------------------------------------------------

    def send(self, key: bytes | None, value: bytes | None, partition: int | None = None) -> None:
        """Queue one record (non-blocking). Delivery errors surface in :meth:`flush`."""
        self._writer.send(key, value, partition)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged; raise ConnectError on any failure."""
        self._writer.flush(timeout)

    def send_and_wait(
        self,
        entries: Iterable[tuple[bytes | None, bytes | None]],
        timeout: float | None = None,
    ) -> list[tuple[int, int]]:
        """Write ``(key, value)`` records and wait for all acknowledgements: ``(partition,
        offset)`` per record, in input order (the contract is
        :meth:`~connectrt.storage.topic_writer.TopicWriter.send_and_wait`'s)."""
        return self._writer.send_and_wait(entries, timeout)

    # -- setup helpers ----------------------------------------------------------------------

    def _client_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {**config, "logger": self._watch.logger, "error_cb": self._on_client_error}

    def _on_client_error(self, err: KafkaError) -> None:
        self._watch.on_error(err)
        if err.fatal():
            log.error("Fatal Kafka client error for topic %s: %s", self.topic, err)

    def _unreachable(self, exc: BaseException) -> ConnectError:
        return self._watch.unreachable(
            exc, self.bootstrap_servers, self._admin_config, self._timeout
        )

    def _ensure_topic(self, admin: AdminClient) -> None:
        metadata = self._watch.wait_for_cluster(
            admin, self.bootstrap_servers, self._admin_config, self._timeout
        )
        existing = metadata.topics.get(self.topic)
        if existing is not None and existing.error is None:
            self._verify_cleanup_policy(admin)
            return
        internal = self._internal
        brokers = len(metadata.brokers)
        if internal is not None and brokers:
            refusal = replication_factor_refusal(
                self.topic, internal, self._replication_factor, brokers
            )
            if refusal:
                raise ConfigError(
                    refusal, internal.replication_setting, str(self._replication_factor)
                )
        new_topic = NewTopic(
            self.topic,
            num_partitions=self._partitions,
            replication_factor=self._replication_factor,
            config={k: str(v) for k, v in self._topic_configs.items()},
        )
        future = admin.create_topics([new_topic], operation_timeout=self._timeout)[self.topic]
        try:
            future.result(timeout=self._timeout)
        except KafkaException as exc:
            kerr = exc.args[0] if exc.args else None
            if isinstance(kerr, KafkaError) and kerr.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                self._verify_cleanup_policy(admin)  # created concurrently by another worker
                return
            raise ConnectError(f"Could not create topic {self.topic}: {exc}") from exc
        except TimeoutError as exc:
            raise self._unreachable(exc) from exc
        log.info(
            "Created topic %s (%d partitions, replication factor %d)",
            self.topic,
            self._partitions,
            self._replication_factor,
        )

    def _verify_cleanup_policy(self, admin: AdminClient) -> None:
        """Refuse an existing internal topic that is not compacted (skipped when the broker
        does not describe the policy; see :mod:`~connectrt.storage.internal_topics`)."""
        internal = self._internal
        if internal is None:
            return
        policy = topic_cleanup_policy(admin, self.topic, self._timeout)
        refusal = None if policy is None else cleanup_policy_refusal(self.topic, internal, policy)
        if refusal:
            raise ConfigError(refusal, internal.topic_setting, self.topic)

    def _wait_for_partitions(self, consumer: Consumer) -> list[int]:
        # Also warms the consumer's metadata, so OFFSET_BEGINNING is resolved at once instead
        # of after librdkafka's 500 ms "no leader yet" retry.
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                metadata = consumer.list_topics(
                    self.topic, timeout=max(0.1, min(5.0, self._timeout))
                )
                topic = metadata.topics.get(self.topic)
                if topic is not None and topic.error is None and topic.partitions:
                    return sorted(topic.partitions)
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise self._unreachable(exc) from exc
            if time.monotonic() > deadline:
                raise ConnectError(
                    f"Topic {self.topic} did not appear in metadata within {self._timeout} s"
                )
            time.sleep(0.05)

    def _require_consumer(self) -> Consumer:
        if self._consumer is None:
            raise ConnectError(f"TopicLog({self.topic}) is not started")
        return self._consumer
