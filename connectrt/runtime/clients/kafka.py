"""The Kafka client seam: the subset of producer, consumer and admin that the runtime uses.

Runtime modules above the ``clients`` floor import Kafka's client types from here, never from
``confluent_kafka``: the :class:`KafkaProducer`, :class:`KafkaConsumer` and :class:`KafkaAdmin`
protocols say which calls the runtime makes, so a fake that implements them
(:mod:`connectrt.testing.fake_kafka`) runs the offset-commit rules in unit tests without a
broker. The value types (:class:`TopicPartition`, :class:`KafkaError`,
:class:`KafkaException`, :class:`NewTopic`, ...) are librdkafka's own, handed on: they are plain
data a fake can build too. :func:`new_producer`, :func:`new_consumer` and :func:`new_admin`
build the real clients; they are the only constructors the runtime calls. ``Consumer``, the
real consumer class, is handed on for the one adapter that extends it (the sink's
lag-reporting consumer, :mod:`connectrt.runtime.sink.consumer_lag`).

The protocols describe librdkafka's threading rules as they are: a producer's ``produce``,
``poll`` and ``flush`` may be called from several threads; a consumer is used by one thread
at a time (the task's), except where a caller documents a lock of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "ConfigResource",
    "Consumer",
    "ConsumerGroupTopicPartitions",
    "KafkaAdmin",
    "KafkaConsumer",
    "KafkaError",
    "KafkaException",
    "KafkaMessage",
    "KafkaProducer",
    "Message",
    "NewTopic",
    "ResourceType",
    "TopicPartition",
    "new_admin",
    "new_consumer",
    "new_producer",
    "request_producer_id",
]

Headers = list[tuple[str, bytes | None]]
DeliveryCallback = Callable[[KafkaError | None, Any], None]
PartitionsCallback = Callable[[Any, list[TopicPartition]], None]


class KafkaMessage(Protocol):
    """One consumed or delivered record, as librdkafka hands it over (read-only accessors)."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def headers(self) -> Headers | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def error(self) -> KafkaError | None: ...


class KafkaProducer(Protocol):
    """The producer calls the runtime makes: sending, delivery reports, transactions."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def flush(self, timeout: float = ...) -> int: ...
    def purge(self, in_queue: bool = ..., in_flight: bool = ..., blocking: bool = ...) -> None: ...
    def __len__(self) -> int: ...
    def init_transactions(self, timeout: float = ...) -> None: ...
    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...
    def begin_transaction(self) -> None: ...
    def commit_transaction(self, timeout: float = ...) -> None: ...
    def abort_transaction(self, timeout: float = ...) -> None: ...


class KafkaConsumer(Protocol):
    """The consumer calls the runtime makes: group membership, fetching, positions, commits."""

    def subscribe(self, topics: list[str], *args: Any, **kwargs: Any) -> None: ...
    def consume(self, num_messages: int = ..., timeout: float = ...) -> list[Any]: ...
    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def unassign(self) -> None: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...
    def incremental_unassign(self, partitions: list[TopicPartition]) -> None: ...
    def pause(self, partitions: list[TopicPartition]) -> None: ...
    def resume(self, partitions: list[TopicPartition]) -> None: ...
    def seek(self, partition: TopicPartition) -> None: ...
    def assignment(self) -> list[TopicPartition]: ...
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...
    def commit(self, *args: Any, **kwargs: Any) -> Any: ...
    def committed(self, partitions: list[TopicPartition], timeout: float = ...) -> Any: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, *args: Any, **kwargs: Any
    ) -> Any: ...
    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float = ...) -> Any: ...
    def close(self) -> None: ...


class KafkaAdmin(Protocol):
    """The admin calls the runtime makes: topics, configs, cluster and consumer group offsets."""

    def list_topics(self, *args: Any, **kwargs: Any) -> Any: ...
    def create_topics(self, new_topics: Sequence[NewTopic], **kwargs: Any) -> dict[str, Any]: ...
    def describe_configs(self, resources: Sequence[ConfigResource], **kwargs: Any) -> Any: ...
    def describe_cluster(self, **kwargs: Any) -> Any: ...
    def list_consumer_group_offsets(self, requests: Sequence[Any], **kwargs: Any) -> Any: ...
    def alter_consumer_group_offsets(self, requests: Sequence[Any], **kwargs: Any) -> Any: ...
    def delete_consumer_groups(self, group_ids: Sequence[str], **kwargs: Any) -> Any: ...


def new_producer(config: dict[str, Any]) -> KafkaProducer:
    """A librdkafka producer from librdkafka ``config`` (built by :mod:`.settings`)."""
    return Producer(config)


PRODUCER_ID_WAIT_S = 2.0
"""How long each of :func:`request_producer_id`'s two metadata requests waits at most."""


def request_producer_id(producer: KafkaProducer, topic: str | None) -> None:
    """Make a new producer ask for its producer id now, not up to 500 ms later. Called once per
    producer, before its first record (to ``topic``), on the thread that produces.

    An idempotent librdkafka producer sends nothing before the broker has given it a producer
    id. It asks for one whenever its id state machine runs: at creation, when no broker
    connection is up yet, so the machine sets a fixed 500 ms retry timer; on that timer; and
    after each metadata response. So its first record often waited half a second (measured
    2026-11-30 on Apache Kafka 4.4 on loopback: a bare producer's first record acknowledged after
    0.51 s, 0.035 s with the two requests below; a source connector's first record 0.53-0.66 s
    after its creation in 10 starts of 24, 0.05-0.14 s in the others, and 0.06-0.16 s in 16 of 16
    with the requests). Two metadata requests for ``topic`` follow the creation: the first
    connects to the cluster, the second's response finds a broker up, and the id is asked for at
    once. The topic is the one the first record goes to: the producer asks for its metadata
    for that record anyway, so no topic is created here that producing would not create. A
    request that fails or times out (``PRODUCER_ID_WAIT_S``) ends the attempt: the produce path
    meets the same broker and handles it. A transactional producer asks for its id in
    ``init_transactions()``, with the same wait (0.51 s in 6 of 12 starts; 0.06-0.08 s in 12 of 12
    with the requests first), so it makes them before that call, with ``topic`` None: metadata
    of the whole cluster (no topic named, none created; a larger answer, once per start)."""
    for _ in range(2):
        try:
            producer.list_topics(topic, timeout=PRODUCER_ID_WAIT_S)
        except KafkaException:
            return


def new_consumer(config: dict[str, Any]) -> KafkaConsumer:
    """A librdkafka consumer from librdkafka ``config`` (built by :mod:`.settings`)."""
    return Consumer(config)


def new_admin(config: dict[str, Any]) -> KafkaAdmin:
    """A librdkafka admin client from librdkafka ``config`` (built by :mod:`.settings`)."""
    # confluent-kafka's own annotations take lists where KafkaAdmin takes any sequence.
    return cast(KafkaAdmin, AdminClient(config))
