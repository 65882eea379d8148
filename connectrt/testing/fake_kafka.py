# Why one module over 450 lines: the in-memory cluster and the producer and consumer over its
# logs share its private state (logs, group offsets, open members); apart, they would reach in.
"""An in-memory Kafka for unit tests of the runtime's commit rules: no broker, no threads.

:class:`FakeKafka` holds partitioned topic logs and consumer group offsets. Its
:meth:`~FakeKafka.producer` and :meth:`~FakeKafka.consumer` build clients that implement the
runtime's seams (:class:`~connectrt.runtime.clients.kafka.KafkaProducer`,
:class:`~connectrt.runtime.clients.kafka.KafkaConsumer`) and can be passed wherever a runner
takes a ``producer_factory`` or ``consumer_factory``.

What it models, and what it does not:

* A produced record is appended to its partition's log at once; its delivery report waits for
  the next ``poll``/``flush``, as librdkafka's does, and goes to the ``on_delivery`` (or
  ``callback``) given to ``produce``, else the one in the producer's config.
  :meth:`FakeProducer.fail_deliveries` makes the next N reports errors (the records are then
  not in the log), to test what the runtime does with a failed delivery.
  :meth:`FakeProducer.hold_acknowledgements` keeps the records produced outside a transaction in
  flight (not in the log, no report, counted by ``flush`` as not delivered in time) until
  :meth:`FakeProducer.acknowledge`, or until the first ``flush`` once the hold is lifted (their
  reports arrive while it waits), to test what waits for acknowledgement. A failure set up by
  ``fail_deliveries`` for a record held in flight is reported when it is acknowledged.
* Transactions: records produced inside one are held back and appended on
  ``commit_transaction``, dropped on ``abort_transaction``; a consumer reads committed data only
  (``isolation.level=read_committed`` is the only level modelled).
* A consumer joins its ``group.id``: ``subscribe`` assigns it every partition of the topics at
  the next ``consume`` (one member per group; :meth:`FakeKafka.rebalance` revokes and assigns
  again, running the callbacks inside the next ``consume`` as librdkafka does). Positions start
  at the group's committed offset, else at ``auto.offset.reset`` (earliest by default).
* Not modelled: timestamps beyond a counter, retries, partitioners (a record without a partition
  goes to partition 0 unless the key is given, then ``hash`` of the key), quotas, and time:
  ``timeout`` arguments are accepted and ignored, so every call returns at once.

Not thread-safe: a test drives its runner on one thread (call the runner's loop step by step,
or run it and join).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.clients.kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    KafkaError,
    KafkaException,
    TopicPartition,
)

__all__ = ["FakeConsumer", "FakeKafka", "FakeMessage", "FakeOffsetStore", "FakeProducer"]

Headers = list[tuple[str, bytes | None]]
_TIMESTAMP_CREATE_TIME = 1


@dataclass
class FakeMessage:
    """A record as the fake clients hand it over: librdkafka's ``Message`` accessors."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None
    _headers: Headers | None = None
    _timestamp: int = 0
    _error: KafkaError | None = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return (_TIMESTAMP_CREATE_TIME, self._timestamp)

    def error(self) -> KafkaError | None:
        return self._error

    def __len__(self) -> int:
        return len(self._value or b"")


class FakeOffsetStore:
    """A source offset store over a topic of a :class:`FakeKafka`, as an exactly-once task's
    (:class:`~connectrt.storage.kafka_offsets.KafkaOffsetStore` over its connector's offsets
    topic): ``start()`` replays the topic's committed records (the latest value of each key
    wins, a ``None`` value deletes); ``set`` appends records; ``log.partition_count`` is the
    topic's partition count. Build it with :meth:`FakeKafka.offset_store`."""

    def __init__(self, kafka: FakeKafka, topic: str) -> None:
        self.kafka = kafka
        self.topic = topic
        self.log = self  # KafkaOffsetStore.log.partition_count, read by exactly-once tasks
        self._data: dict[bytes, bytes] = {}
        self.started = 0  # how many times start() replayed the topic

    @property
    def partition_count(self) -> int:
        return self.kafka.partitions[self.topic]

    def start(self) -> None:
        self._data = {}
        for message in self.kafka.records(self.topic):
            key, value = message.key(), message.value()
            if key is not None:
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value
        self.started += 1

    def stop(self) -> None:
        pass

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        return {bytes(k): self._data.get(bytes(k)) for k in keys}

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        for key, value in entries.items():
            self.kafka.append(self.topic, value, key)
            if value is None:
                self._data.pop(key, None)
            else:
                self._data[key] = value

    def all(self) -> dict[bytes, bytes]:
        return dict(self._data)


@dataclass
class FakeKafka:
    """Topic logs and group offsets shared by the fake clients built from it."""

    partitions: dict[str, int] = field(default_factory=dict)
    logs: dict[tuple[str, int], list[FakeMessage]] = field(default_factory=dict)
    group_offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    commit_log: list[tuple[str, dict[tuple[str, int], int]]] = field(default_factory=list)
    """Every consumer commit, in order: ``(group, {(topic, partition): offset})``."""
    _clock: int = 0
    _consumers: list[FakeConsumer] = field(default_factory=list)

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Add ``topic`` with ``partitions`` empty partitions (a topic produced to is auto-made)."""
        self.partitions.setdefault(topic, partitions)
        for p in range(self.partitions[topic]):
            self.logs.setdefault((topic, p), [])

    def records(self, topic: str, partition: int | None = None) -> list[FakeMessage]:
        """What is in ``topic`` (one partition, or all in partition order), committed only."""
        parts = [partition] if partition is not None else range(self.partitions.get(topic, 0))
        return [m for p in parts for m in self.logs.get((topic, p), [])]

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The offsets ``group`` has committed: the next offset to read, per partition."""
        return dict(self.group_offsets.get(group, {}))

    def append(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Headers | None = None,
    ) -> FakeMessage:
        """Write one record straight into a log (what another producer would have written)."""
        if topic not in self.partitions:
            self.create_topic(topic)
        if partition is None:
            partition = hash(key) % self.partitions[topic] if key is not None else 0
        log = self.logs[(topic, partition)]
        self._clock += 1
        message = FakeMessage(topic, partition, len(log), key, value, headers, self._clock)
        log.append(message)
        return message

    def producer(self, config: dict[str, Any] | None = None) -> FakeProducer:
        """A producer writing into these logs (use as ``producer_factory``)."""
        return FakeProducer(self, dict(config or {}))

    def offset_store(self, topic: str, partitions: int = 1) -> FakeOffsetStore:
        """A source offset store over ``topic`` (made with ``partitions`` partitions)."""
        self.create_topic(topic, partitions)
        return FakeOffsetStore(self, topic)

    def consumer(self, config: dict[str, Any] | None = None) -> FakeConsumer:
        """A consumer of these logs in ``config['group.id']`` (use as ``consumer_factory``)."""
        consumer = FakeConsumer(self, dict(config or {}))
        self._consumers.append(consumer)
        return consumer

    def members(self, group: str) -> list[FakeConsumer]:
        """The open consumers of ``group`` (its members, for the admin fake's group rules)."""
        return [c for c in self._consumers if c.group == group and not c.closed]

    def rebalance(self, assignment: list[tuple[str, int]] | None = None) -> None:
        """Have every open consumer's group rebalance at its next ``consume``.

        Each revokes what it holds, then is assigned ``assignment`` (default: every partition of
        its subscription), running the ``on_revoke`` and ``on_assign`` callbacks inside that
        ``consume`` call.
        """
        for consumer in self._consumers:
            consumer._pending_rebalance = (True, assignment)


class FakeProducer:
    """A producer into a :class:`FakeKafka`; see the module docstring for what it models."""

    def __init__(self, kafka: FakeKafka, config: dict[str, Any]) -> None:
        self.kafka = kafka
        self.config = config
        self._default_callback: Callable[..., None] | None = config.get("on_delivery")
        self._reports: list[tuple[Callable[..., None] | None, KafkaError | None, Any]] = []
        self._failures: list[KafkaError] = []
        self._txn: list[tuple[str, bytes | None, bytes | None, int | None, Headers | None]] = []
        self._txn_reports: list[tuple[Callable[..., None] | None, FakeMessage]] = []
        self.in_transaction = False
        self.transactions_initialised = False
        self.committed_transactions = 0
        self.aborted_transactions = 0
        self.holding = False
        self.metadata_requests: list[tuple[str | None, bool]] = []
        self._in_flight: list[
            tuple[
                Callable[..., None] | None,
                KafkaError | None,
                tuple[str, bytes | None, bytes | None, int | None, Any],
            ]
        ] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Metadata requests are noted (``metadata_requests``: the topic asked for, and whether
        ``init_transactions`` had been called by then); the answer is the names of the topics
        the cluster has (all, or ``topic`` if it has it)."""
        self.metadata_requests.append((topic, self.transactions_initialised))
        return [t for t in self.kafka.partitions if topic is None or t == topic]

    def fail_deliveries(self, count: int, code: int = KafkaError.MSG_SIZE_TOO_LARGE) -> None:
        """Make the next ``count`` deliveries fail with ``code`` (their records are dropped)."""
        self._failures.extend(KafkaError(code) for _ in range(count))

    def hold_acknowledgements(self, hold: bool = True) -> None:
        """Keep (or stop keeping) records produced outside a transaction in flight: not in the
        log, no delivery report, counted by ``flush`` as not delivered within its timeout. Once
        the hold is lifted, the next ``flush`` acknowledges what is still in flight."""
        self.holding = hold

    def acknowledge(self, count: int | None = None) -> None:
        """The broker acknowledges every record in flight (``count``: the oldest ``count``):
        appended to their logs, their delivery reports served at the next ``poll``/``flush``."""
        n = len(self._in_flight) if count is None else count
        in_flight, self._in_flight = self._in_flight[:n], self._in_flight[n:]
        for cb, error, (topic, value, key, part, hdrs) in in_flight:
            if error is not None:  # the failure fail_deliveries() set up: not in the log
                shell = FakeMessage(topic, part or 0, -1, key, value, hdrs, 0, error)
                self._reports.append((cb, error, shell))
            else:
                message = self.kafka.append(topic, value, key, part, hdrs)
                self._reports.append((cb, None, message))

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        on_delivery: Callable[..., None] | None = None,
        callback: Callable[..., None] | None = None,
        timestamp: int = 0,
        headers: Headers | dict[str, bytes] | None = None,
    ) -> None:
        """Queue one record; its delivery report comes with the next ``poll`` or ``flush``.
        Positional arguments in confluent-kafka's order (timestamp before headers)."""
        cb = on_delivery or callback or self._default_callback
        part = None if partition < 0 else partition
        hdrs: Headers | None = list(headers.items()) if isinstance(headers, dict) else headers
        if self.holding and not self.in_transaction:
            failure = self._failures.pop(0) if self._failures else None
            self._in_flight.append((cb, failure, (topic, value, key, part, hdrs)))
            return
        if self._failures:
            error = self._failures.pop(0)
            shell = FakeMessage(topic, part or 0, -1, key, value, hdrs, 0, error)
            self._reports.append((cb, error, shell))
            return
        if self.in_transaction:
            self._txn.append((topic, value, key, part, hdrs))
            shell = FakeMessage(topic, part or 0, -1, key, value, hdrs)
            self._txn_reports.append((cb, shell))
            self._reports.append((cb, None, shell))
            return
        message = self.kafka.append(topic, value, key, part, hdrs)
        self._reports.append((cb, None, message))

    def poll(self, timeout: float = 0) -> int:
        """Serve the queued delivery reports; returns how many were served."""
        reports, self._reports = self._reports, []
        for cb, error, message in reports:
            if cb is not None:
                cb(error, message)
        return len(reports)

    def flush(self, timeout: float = 0) -> int:
        """Serve every queued report, acknowledging the records in flight first unless
        acknowledgements are held; returns how many records are still in flight."""
        if not self.holding:
            self.acknowledge()
        self.poll()
        return len(self._in_flight)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop the queued reports (their records are already in the log or the transaction)
        and the records in flight."""
        self._reports.clear()
        self._in_flight.clear()

    def __len__(self) -> int:
        return len(self._reports) + len(self._in_flight)

    def init_transactions(self, timeout: float = 0) -> None:
        if "transactional.id" not in self.config:
            raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED))
        self.transactions_initialised = True

    def begin_transaction(self) -> None:
        if not self.transactions_initialised or self.in_transaction:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.in_transaction = True

    def commit_transaction(self, timeout: float = 0) -> None:
        """Serve pending reports, then append the transaction's records to their logs."""
        if not self.in_transaction:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.poll()
        for topic, value, key, part, hdrs in self._txn:
            self.kafka.append(topic, value, key, part, hdrs)
        self._txn.clear()
        self._txn_reports.clear()
        self.in_transaction = False
        self.committed_transactions += 1

    def abort_transaction(self, timeout: float = 0) -> None:
        """Drop the transaction's records; they are never visible to a consumer."""
        if not self.in_transaction:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self._reports.clear()
        self._txn.clear()
        self._txn_reports.clear()
        self.in_transaction = False
        self.aborted_transactions += 1


class FakeConsumer:
    """A group member reading a :class:`FakeKafka`; see the module docstring for the model."""

    def __init__(self, kafka: FakeKafka, config: dict[str, Any]) -> None:
        self.kafka = kafka
        self.config = config
        self.group = str(config.get("group.id", ""))
        self.topics: list[str] = []
        self.positions: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.closed = False
        self.commits: list[dict[tuple[str, int], int]] = []
        self._callbacks: dict[str, Callable[..., None] | None] = {}
        self._pending_rebalance: tuple[bool, list[tuple[str, int]] | None] | None = None
        self.on_consume: Callable[[FakeConsumer], bool] | None = None
        """Called at the start of every ``consume`` (on the consuming thread, between two
        batches: where a test makes a rebalance or new records happen); when it returns False,
        that ``consume`` returns no records, as one that timed out."""

    # group membership -------------------------------------------------------------------

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[..., None] | None = None,
        on_revoke: Callable[..., None] | None = None,
        on_lost: Callable[..., None] | None = None,
    ) -> None:
        """Join the group; the assignment comes inside the next ``consume``."""
        self.topics = list(topics)
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self._pending_rebalance = (False, None)

    def _rebalance(self) -> None:
        pending, self._pending_rebalance = self._pending_rebalance, None
        assert pending is not None
        revoke, wanted = pending
        if revoke and self.positions:
            held = [TopicPartition(t, p) for t, p in sorted(self.positions)]
            cb = self._callbacks.get("revoke")
            if cb is not None:
                cb(self, held)
            self.positions.clear()
            self.paused.clear()
        if wanted is None:
            for topic in self.topics:
                self.kafka.create_topic(topic)
            wanted = [(t, p) for t in self.topics for p in range(self.kafka.partitions[t])]
        parts = [TopicPartition(t, p) for t, p in wanted]
        self.assign(parts)
        cb = self._callbacks.get("assign")
        if cb is not None:
            cb(self, parts)

    def _start(self, topic: str, partition: int) -> int:
        committed = self.kafka.group_offsets.get(self.group, {}).get((topic, partition))
        if committed is not None:
            return committed
        reset = str(self.config.get("auto.offset.reset", "earliest"))
        return len(self.kafka.logs.get((topic, partition), [])) if reset == "latest" else 0

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.positions = {}
        self.incremental_assign(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            key = (tp.topic, tp.partition)
            if tp.offset == OFFSET_BEGINNING:
                self.positions[key] = 0
            elif tp.offset == OFFSET_END:
                self.positions[key] = len(self.kafka.logs.get(key, []))
            else:
                self.positions[key] = tp.offset if tp.offset >= 0 else self._start(*key)

    def unassign(self) -> None:
        self.positions.clear()
        self.paused.clear()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition), None)
            self.paused.discard((tp.topic, tp.partition))

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in sorted(self.positions)]

    # fetching ---------------------------------------------------------------------------

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        """Up to ``num_messages`` records from the unpaused partitions, in partition order."""
        if self.closed:
            raise RuntimeError("Consumer closed")
        if self.on_consume is not None and not self.on_consume(self):
            return []
        if self._pending_rebalance is not None:
            self._rebalance()
        out: list[FakeMessage] = []
        for key in sorted(self.positions):
            if key in self.paused:
                continue
            log = self.kafka.logs.get(key, [])
            start = self.positions[key]
            take = log[start : start + num_messages - len(out)]
            out.extend(take)
            self.positions[key] = start + len(take)
            if len(out) >= num_messages:
                break
        return out

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in partitions)

    def seek(self, partition: TopicPartition) -> None:
        key = (partition.topic, partition.partition)
        if key not in self.positions:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.positions[key] = partition.offset

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1))
            for tp in partitions
        ]

    # offsets ----------------------------------------------------------------------------

    def commit(
        self,
        message: Any = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition] | None:
        """Store ``offsets`` (or the current positions) as the group's committed offsets."""
        if offsets is None:
            offsets = [TopicPartition(t, p, o) for (t, p), o in self.positions.items()]
        stored = {(tp.topic, tp.partition): tp.offset for tp in offsets}
        self.kafka.group_offsets.setdefault(self.group, {}).update(stored)
        self.commits.append(stored)
        self.kafka.commit_log.append((self.group, dict(stored)))
        return None if asynchronous else list(offsets)

    def committed(
        self, partitions: list[TopicPartition], timeout: float = 0
    ) -> list[TopicPartition]:
        group = self.kafka.group_offsets.get(self.group, {})
        return [
            TopicPartition(tp.topic, tp.partition, group.get((tp.topic, tp.partition), -1001))
            for tp in partitions
        ]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = 0, cached: bool = False
    ) -> tuple[int, int]:
        return (0, len(self.kafka.logs.get((partition.topic, partition.partition), [])))

    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float = 0
    ) -> list[TopicPartition]:
        out = []
        for tp in partitions:
            log = self.kafka.logs.get((tp.topic, tp.partition), [])
            hit = next((m.offset() for m in log if m.timestamp()[1] >= tp.offset), -1)
            out.append(TopicPartition(tp.topic, tp.partition, hit))
        return out

    def close(self) -> None:
        """Leave the group (revoking nothing further); the consumer is unusable after."""
        self.closed = True
        if self in self.kafka._consumers:
            self.kafka._consumers.remove(self)
