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


def new_consumer(config: dict[str, Any]) -> KafkaConsumer:
    """A librdkafka consumer from librdkafka ``config`` (built by :mod:`.settings`)."""
    return Consumer(config)


def new_admin(config: dict[str, Any]) -> KafkaAdmin:
    """A librdkafka admin client from librdkafka ``config`` (built by :mod:`.settings`)."""
    # confluent-kafka's own annotations take lists where KafkaAdmin takes any sequence.
    return cast(KafkaAdmin, AdminClient(config))
