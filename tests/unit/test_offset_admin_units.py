"""The consumer group and topic offset operations of :class:`OffsetAdmin`, over the in-memory
Kafka: no broker. ``test_control_topic.py`` and the REST offsets tests keep checking them
against a real one (end offsets, read to partition EOF, only there).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from connectrt.api.records import TopicPartition
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaAdmin, KafkaConsumer
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.testing.fake_kafka import FakeKafka
from connectrt.testing.fake_kafka_admin import FakeAdmin


class Cluster:
    """A fake cluster and an :class:`OffsetAdmin` over it, counting the clients it builds."""

    def __init__(self) -> None:
        self.kafka = FakeKafka()
        self.admin = FakeAdmin(self.kafka, cluster_id="c-1")
        self.admins_built = 0
        self.consumer_configs: list[dict[str, Any]] = []
        self.offsets = OffsetAdmin(
            "fake:9092",
            {"security.protocol": "PLAINTEXT"},
            admin_factory=self._admin,
            consumer_factory=self._consumer,
        )

    def _admin(self, config: dict[str, Any]) -> KafkaAdmin:
        assert config["bootstrap.servers"] == "fake:9092"
        self.admins_built += 1
        return self.admin

    def _consumer(self, config: dict[str, Any]) -> KafkaConsumer:
        self.consumer_configs.append(config)
        return self.kafka.consumer(config)


def test_group_offsets_are_the_committed_ones_and_an_unknown_group_has_none() -> None:
    cluster = Cluster()
    cluster.kafka.group_offsets["g"] = {("t", 0): 5, ("t", 1): 0, ("u", 0): -1001}
    assert cluster.offsets.group_offsets("g") == {
        TopicPartition("t", 0): 5,
        TopicPartition("t", 1): 0,
    }  # an invalid (negative) offset is no committed position
    assert cluster.offsets.group_offsets("nobody") == {}


def test_altered_offsets_are_what_the_group_reads_next() -> None:
    cluster = Cluster()
    cluster.kafka.group_offsets["g"] = {("t", 0): 5}
    cluster.offsets.alter_group_offsets("g", {TopicPartition("t", 0): 2, TopicPartition("t", 1): 9})
    assert cluster.kafka.committed("g") == {("t", 0): 2, ("t", 1): 9}
    cluster.kafka.append("t", b"a")
    cluster.kafka.append("t", b"b")
    cluster.kafka.append("t", b"c")
    consumer = cluster.kafka.consumer({"group.id": "g"})
    consumer.subscribe(["t"])
    assert [m.value() for m in consumer.consume(10)] == [b"c"]


def test_altering_nothing_asks_the_cluster_nothing() -> None:
    cluster = Cluster()
    cluster.offsets.alter_group_offsets("g", {})
    assert cluster.admin.calls == [] and cluster.admins_built == 0


def test_altering_the_offsets_of_a_group_with_members_fails_naming_the_group() -> None:
    cluster = Cluster()
    cluster.kafka.consumer({"group.id": "busy"}).subscribe(["t"])
    with pytest.raises(ConnectError, match="Could not alter the offsets of consumer group busy"):
        cluster.offsets.alter_group_offsets("busy", {TopicPartition("t", 0): 1})
    assert cluster.kafka.committed("busy") == {}


def test_deleting_a_group_removes_its_offsets_and_a_missing_group_is_fine() -> None:
    cluster = Cluster()
    cluster.kafka.group_offsets["g"] = {("t", 0): 5}
    cluster.offsets.delete_group("g")
    assert cluster.offsets.group_offsets("g") == {}
    cluster.offsets.delete_group("g")  # GROUP_ID_NOT_FOUND: already gone, not an error


def test_deleting_a_group_with_members_fails_naming_the_group() -> None:
    cluster = Cluster()
    cluster.kafka.group_offsets["busy"] = {("t", 0): 1}
    cluster.kafka.consumer({"group.id": "busy"})
    with pytest.raises(ConnectError, match="Could not delete consumer group busy"):
        cluster.offsets.delete_group("busy")
    assert cluster.kafka.committed("busy") == {("t", 0): 1}


def test_partitions_of_named_topics_and_of_topics_the_regex_matches_whole() -> None:
    cluster = Cluster()
    cluster.kafka.create_topic("orders", 2)
    cluster.kafka.create_topic("orders-dlq", 1)
    cluster.kafka.create_topic("logs-a", 1)
    cluster.kafka.create_topic("other", 1)
    assert cluster.offsets.partitions(["orders"], regex="logs-.*") == [
        TopicPartition("logs-a", 0),
        TopicPartition("orders", 0),
        TopicPartition("orders", 1),
    ]
    assert cluster.offsets.partitions(regex="orders") == [
        TopicPartition("orders", 0),
        TopicPartition("orders", 1),
    ]  # "orders" does not match "orders-dlq": the whole name must match
    assert cluster.offsets.partitions(["missing"]) == []


def test_earliest_and_for_time_use_short_lived_consumers_that_never_commit() -> None:
    cluster = Cluster()
    for value in (b"a", b"b", b"c"):  # the fake stamps them 1, 2 and 3 ms after the epoch
        cluster.kafka.append("t", value)
    tp = TopicPartition("t", 0)
    assert cluster.offsets.earliest([tp]) == {tp: 0}
    when = datetime.fromtimestamp(0.002, UTC)
    assert cluster.offsets.for_time([tp], when) == {tp: 1}
    assert len(cluster.consumer_configs) == 2
    for config in cluster.consumer_configs:
        assert config["enable.auto.commit"] is False
        assert config["security.protocol"] == "PLAINTEXT"  # the worker's client settings
        assert config["group.id"].startswith("connectrt-offset-admin-")
    assert len({c["group.id"] for c in cluster.consumer_configs}) == 2
    assert cluster.kafka.members(cluster.consumer_configs[0]["group.id"]) == []  # closed
    assert cluster.kafka.group_offsets == {}


def test_the_health_probe_keeps_one_admin_client_and_cluster_id_reads_the_cluster() -> None:
    cluster = Cluster()
    assert cluster.offsets.probe(1.0) is None
    assert cluster.offsets.probe(1.0) is None
    assert cluster.admins_built == 1
    assert cluster.offsets.cluster_id() == "c-1"


def test_a_probe_that_cannot_reach_the_cluster_says_why() -> None:
    def unreachable(config: dict[str, Any]) -> KafkaAdmin:
        raise RuntimeError("no route to host")

    offsets = OffsetAdmin("fake:9092", admin_factory=unreachable)
    reason = offsets.probe(2.0)
    assert reason is not None
    assert reason.startswith("Kafka at fake:9092 did not answer within 2 s (no route to host)")
