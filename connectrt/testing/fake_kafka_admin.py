"""An in-memory admin client over a :class:`~connectrt.testing.fake_kafka.FakeKafka`.

:class:`FakeAdmin` implements the runtime's
:class:`~connectrt.runtime.clients.kafka.KafkaAdmin` seam over the topics and group offsets of
one :class:`~connectrt.testing.fake_kafka.FakeKafka`, so the code that creates topics, sizes
records by the topic's limit and reads or changes consumer group offsets runs in unit tests
without a broker. It stands for the cluster itself: the broker count, the cluster id and the
topic and broker configs live on it, so a test builds one and hands it out as every admin
client (``admin_factory=lambda config: admin``).

What it models, with Kafka's answers:

* ``list_topics``: every topic of the fake (with its partitions) and ``brokers`` brokers;
* ``create_topics``: ``TOPIC_ALREADY_EXISTS`` for a topic that exists,
  ``INVALID_REPLICATION_FACTOR`` for a factor above the broker count; ``-1`` partitions or
  factor take the broker default (1 partition, factor 1); the topic's ``config`` is kept;
* ``describe_configs``: a topic's configs (from creation or :attr:`FakeAdmin.topic_configs`),
  a broker's from :attr:`FakeAdmin.broker_configs`; ``UNKNOWN_TOPIC_OR_PART`` for a missing
  topic; :attr:`FakeAdmin.refuse_describe_configs` refuses every call (an ACL, a broker that
  does not implement it);
* consumer groups: a group exists while it has committed offsets or an open member
  (a :class:`~connectrt.testing.fake_kafka.FakeConsumer` of its ``group.id``). Listing the
  offsets of an unknown group answers none; altering them while the group has members answers
  ``UNKNOWN_MEMBER_ID`` (Kafka refuses to move an active group's offsets); deleting an unknown
  group answers ``GROUP_ID_NOT_FOUND``, one with members ``NON_EMPTY_GROUP``.

Every answer is a completed :class:`concurrent.futures.Future`, as librdkafka's are once
answered; ``timeout`` arguments are accepted and ignored. :attr:`FakeAdmin.calls` records the
method names called, in order. Not thread-safe, like the fake it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.clients.kafka import (
    ConfigResource,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    NewTopic,
    ResourceType,
    TopicPartition,
)
from connectrt.testing.fake_kafka import FakeKafka

__all__ = ["FakeAdmin", "FakeConfigEntry"]


@dataclass(frozen=True)
class FakeConfigEntry:
    """One described config value (librdkafka's ``ConfigEntry``: ``name`` and ``value``)."""

    name: str
    value: str | None


@dataclass(frozen=True)
class _PartitionMetadata:
    id: int


@dataclass(frozen=True)
class _TopicMetadata:
    topic: str
    partitions: dict[int, _PartitionMetadata]
    error: KafkaError | None = None


@dataclass(frozen=True)
class _BrokerMetadata:
    id: int
    host: str = "127.0.0.1"
    port: int = 9092


@dataclass(frozen=True)
class _ClusterMetadata:
    cluster_id: str
    controller_id: int
    brokers: dict[int, _BrokerMetadata]
    topics: dict[str, _TopicMetadata]


@dataclass(frozen=True)
class _ClusterDescription:
    cluster_id: str
    nodes: list[_BrokerMetadata]


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def _failed(code: int) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(code)))
    return future


@dataclass
class FakeAdmin:
    """The cluster's admin side over ``kafka``; see the module docstring for what it models."""

    kafka: FakeKafka
    brokers: int = 1
    cluster_id: str = "fake-cluster"
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str, str] = field(default_factory=dict)
    refuse_describe_configs: bool = False
    calls: list[str] = field(default_factory=list)

    # -- cluster and topics ----------------------------------------------------------------
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _ClusterMetadata:
        self.calls.append("list_topics")
        topics = {
            name: _TopicMetadata(name, {p: _PartitionMetadata(p) for p in range(count)})
            for name, count in self.kafka.partitions.items()
        }
        brokers = {b: _BrokerMetadata(b) for b in range(self.brokers)}
        return _ClusterMetadata(self.cluster_id, 0, brokers, topics)

    def describe_cluster(self, **kwargs: Any) -> Future[Any]:
        self.calls.append("describe_cluster")
        nodes = [_BrokerMetadata(b) for b in range(self.brokers)]
        return _done(_ClusterDescription(self.cluster_id, nodes))

    def create_topics(self, new_topics: Sequence[NewTopic], **kwargs: Any) -> dict[str, Any]:
        self.calls.append("create_topics")
        out: dict[str, Future[Any]] = {}
        for new in new_topics:
            factor = new.replication_factor if new.replication_factor > 0 else 1
            if new.topic in self.kafka.partitions:
                out[new.topic] = _failed(KafkaError.TOPIC_ALREADY_EXISTS)
            elif factor > self.brokers:
                out[new.topic] = _failed(KafkaError.INVALID_REPLICATION_FACTOR)
            else:
                self.kafka.create_topic(new.topic, max(new.num_partitions, 1))
                self.topic_configs[new.topic] = dict(new.config or {})
                out[new.topic] = _done(None)
        return out

    def describe_configs(self, resources: Sequence[ConfigResource], **kwargs: Any) -> Any:
        self.calls.append("describe_configs")
        out: dict[ConfigResource, Future[Any]] = {}
        for resource in resources:
            if self.refuse_describe_configs:
                out[resource] = _failed(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
            elif resource.restype == ResourceType.BROKER:
                out[resource] = _done(self._entries(self.broker_configs))
            elif resource.name not in self.kafka.partitions:
                out[resource] = _failed(KafkaError.UNKNOWN_TOPIC_OR_PART)
            else:
                out[resource] = _done(self._entries(self.topic_configs.get(resource.name, {})))
        return out

    @staticmethod
    def _entries(configs: dict[str, str]) -> dict[str, FakeConfigEntry]:
        return {name: FakeConfigEntry(name, value) for name, value in configs.items()}

    # -- consumer groups -------------------------------------------------------------------
    def _has_members(self, group: str) -> bool:
        return bool(self.kafka.members(group))

    def list_consumer_group_offsets(self, requests: Sequence[Any], **kwargs: Any) -> Any:
        self.calls.append("list_consumer_group_offsets")
        out: dict[str, Future[Any]] = {}
        for request in requests:
            group = request.group_id
            offsets = self.kafka.group_offsets.get(group, {})
            parts = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
            out[group] = _done(ConsumerGroupTopicPartitions(group, parts))
        return out

    def alter_consumer_group_offsets(self, requests: Sequence[Any], **kwargs: Any) -> Any:
        self.calls.append("alter_consumer_group_offsets")
        out: dict[str, Future[Any]] = {}
        for request in requests:
            group = request.group_id
            if self._has_members(group):
                out[group] = _failed(KafkaError.UNKNOWN_MEMBER_ID)
                continue
            stored = self.kafka.group_offsets.setdefault(group, {})
            for tp in request.topic_partitions or []:
                stored[(tp.topic, tp.partition)] = tp.offset
            out[group] = _done(request)
        return out

    def delete_consumer_groups(self, group_ids: Sequence[str], **kwargs: Any) -> Any:
        self.calls.append("delete_consumer_groups")
        out: dict[str, Future[Any]] = {}
        for group in group_ids:
            if self._has_members(group):
                out[group] = _failed(KafkaError.NON_EMPTY_GROUP)
            elif group not in self.kafka.group_offsets:
                out[group] = _failed(KafkaError.GROUP_ID_NOT_FOUND)
            else:
                del self.kafka.group_offsets[group]
                out[group] = _done(None)
        return out
