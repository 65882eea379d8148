"""Reading and changing sink connectors' consumer-group offsets, and finding topic positions.

Used by the herder for the offsets REST API (KIP-875) and the reset conveniences. End offsets
are taken from the high watermark carried in fetch responses, never from ListOffsets LATEST,
which the embedded broker answers wrongly (see the broker notes); that is also right on Apache
Kafka. Each call creates short-lived clients: these are operator actions, not a hot path.
The health probe is the exception: it runs on every ``GET /health`` (a liveness probe's
period) and keeps one admin client for the object's lifetime, so a probe that times out
against a broker that does not answer never destroys a client with its request still in
flight (librdkafka then aborted the whole process, now and then, on a loaded machine).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import (
    ConsumerGroupTopicPartitions,
    KafkaAdmin,
    KafkaConsumer,
    KafkaError,
    KafkaException,
    new_admin,
    new_consumer,
)
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.config.cluster_limits import BROKER_COUNT_TIMEOUT_S, broker_count

__all__ = ["OffsetAdmin"]

_TIMEOUT_S = 15.0


class OffsetAdmin:
    """Consumer-group and topic-offset operations against one cluster (thread-safe: every
    call uses its own clients, except :meth:`probe`, which shares one thread-safe admin client
    created at its first call and kept until the object is dropped).

    ``admin_factory`` and ``consumer_factory`` build the clients from librdkafka configs (the
    real clients by default; unit tests pass the in-memory ones of
    :mod:`connectrt.testing.fake_kafka` and :mod:`connectrt.testing.fake_kafka_admin`).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        admin_config: Mapping[str, Any] | None = None,
        *,
        admin_factory: Callable[[dict[str, Any]], KafkaAdmin] = new_admin,
        consumer_factory: Callable[[dict[str, Any]], KafkaConsumer] = new_consumer,
    ):
        self._bootstrap = bootstrap_servers
        self._config = {"bootstrap.servers": bootstrap_servers, **(admin_config or {})}
        self._admin_factory = admin_factory
        self._consumer_factory = consumer_factory
        self._probe_client: KafkaAdmin | None = None
        self._probe_lock = threading.Lock()

    def _admin(self) -> KafkaAdmin:
        return self._admin_factory(dict(self._config))

    def _probe_admin(self) -> KafkaAdmin:
        with self._probe_lock:
            if self._probe_client is None:
                self._probe_client = self._admin()
            return self._probe_client

    def _consumer(self, **extra: Any) -> KafkaConsumer:
        return self._consumer_factory(
            {
                **self._config,
                "group.id": f"connectrt-offset-admin-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                **extra,
            }
        )

    def cluster_id(self) -> str | None:
        admin = self._admin()
        return admin.describe_cluster(request_timeout=_TIMEOUT_S).result(_TIMEOUT_S).cluster_id

    def broker_count(self, timeout_s: float = BROKER_COUNT_TIMEOUT_S) -> int | None:
        """The cluster's number of brokers, None when it does not answer within ``timeout_s``."""
        return broker_count(self._config, timeout_s)

    def probe(self, timeout_s: float) -> str | None:
        """For health checks: None when the cluster answers within ``timeout_s``, else why.

        A metadata request (``list_topics``), not an admin request: librdkafka 2.15.1 aborted
        the process (``Fatal Python error: Aborted`` from one of its own threads) when a broker
        paused under ``describe_cluster`` probes answered again, whether those requests had
        timed out inside librdkafka or were still waiting (seen twice here, in
        ``test_health_unhealthy``; librdkafka issue #4605 reports the same assertion in its
        admin requests' bookkeeping, which a metadata request does not use)."""
        try:
            self._probe_admin().list_topics(timeout=timeout_s)
        except Exception as e:
            why = str(e) or type(e).__name__
            return (
                f"Kafka at {self._bootstrap} did not answer within {timeout_s:g} s ({why}): the "
                "worker cannot reach its offsets, config and status topics or its tasks' topics."
            )
        return None

    # -- consumer groups -------------------------------------------------------------------
    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Committed offsets of ``group`` (empty when the group does not exist)."""
        admin = self._admin()  # must outlive the futures
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=_TIMEOUT_S
        )
        try:
            result = futures[group].result(_TIMEOUT_S)
        except KafkaException as e:
            if (
                e.args
                and isinstance(e.args[0], KafkaError)
                and e.args[0].code()
                in (
                    KafkaError.GROUP_ID_NOT_FOUND,
                    KafkaError._NOENT,
                )
            ):
                return {}
            raise ConnectError(f"Could not read the offsets of consumer group {group}: {e}") from e
        return {
            TopicPartition(tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0
        }

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        request = ConsumerGroupTopicPartitions(
            group, [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
        )
        admin = self._admin()
        futures = admin.alter_consumer_group_offsets([request], request_timeout=_TIMEOUT_S)
        try:
            futures[group].result(_TIMEOUT_S)
        except KafkaException as e:
            raise ConnectError(f"Could not alter the offsets of consumer group {group}: {e}") from e

    def delete_group(self, group: str) -> None:
        """Delete the group and its committed offsets (a missing group is fine)."""
        admin = self._admin()
        futures = admin.delete_consumer_groups([group], request_timeout=_TIMEOUT_S)
        try:
            futures[group].result(_TIMEOUT_S)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if isinstance(err, KafkaError) and err.code() in (
                KafkaError.GROUP_ID_NOT_FOUND,
                KafkaError._NOENT,
            ):
                return
            raise ConnectError(f"Could not delete consumer group {group}: {e}") from e

    # -- topics --------------------------------------------------------------------------------
    def partitions(
        self, topics: Iterable[str] = (), regex: str | None = None
    ) -> list[TopicPartition]:
        """The partitions of ``topics`` and of every topic fully matching ``regex``."""
        admin = self._admin()
        md = admin.list_topics(timeout=_TIMEOUT_S)
        wanted = set(topics)
        pattern = re.compile(regex) if regex else None
        out: list[TopicPartition] = []
        for name, topic in md.topics.items():
            if name in wanted or (pattern is not None and pattern.fullmatch(name)):
                out.extend(TopicPartition(name, p) for p in topic.partitions)
        return sorted(out)

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        consumer = self._consumer()
        try:
            return {
                tp: consumer.get_watermark_offsets(
                    KafkaTopicPartition(tp.topic, tp.partition), timeout=_TIMEOUT_S
                )[0]
                for tp in tps
            }
        finally:
            consumer.close()

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """End offsets, as the position where each partition reports EOF.

        Starts reading at ListOffsets' answer minus one (at most one batch before the end on
        the embedded broker, one record on Apache Kafka) and takes the offset of the EOF event.
        """
        tps = list(tps)
        if not tps:
            return {}
        consumer = self._consumer(**{"enable.partition.eof": True})
        try:
            starts = []
            for tp in tps:
                low, high = consumer.get_watermark_offsets(
                    KafkaTopicPartition(tp.topic, tp.partition), timeout=_TIMEOUT_S
                )
                starts.append(KafkaTopicPartition(tp.topic, tp.partition, max(low, high - 1)))
            consumer.assign(starts)
            ends: dict[TopicPartition, int] = {}
            last: dict[TopicPartition, int] = {}
            deadline = time.monotonic() + _TIMEOUT_S
            while len(ends) < len(tps):
                if time.monotonic() > deadline:
                    raise ConnectError(
                        "Timed out finding the end offsets of "
                        + ", ".join(str(tp) for tp in tps if tp not in ends)
                    )
                for msg in consumer.consume(1000, 0.2):
                    tp = TopicPartition(msg.topic(), msg.partition())
                    err = msg.error()
                    if err is None:
                        last[tp] = msg.offset()
                    elif err.code() == KafkaError._PARTITION_EOF:
                        ends[tp] = max(msg.offset(), last.get(tp, -1) + 1)
            return ends
        finally:
            consumer.close()

    def for_time(self, tps: Iterable[TopicPartition], when: datetime) -> dict[TopicPartition, int]:
        """The first offset at or after ``when`` per partition (the end offset if none)."""
        tps = list(tps)
        ms = int(when.timestamp() * 1000)
        consumer = self._consumer()
        try:
            found = consumer.offsets_for_times(
                [KafkaTopicPartition(t, p, ms) for t, p in tps], timeout=_TIMEOUT_S
            )
        finally:
            consumer.close()
        out = {TopicPartition(f.topic, f.partition): f.offset for f in found}
        missing = [tp for tp, o in out.items() if o < 0]
        if missing:
            out.update(self.latest(missing))
        return out
