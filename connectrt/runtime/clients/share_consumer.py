"""The share consumer seam (KIP-932 share groups): librdkafka's ``ShareConsumer`` and the admin
calls that configure a share group.

A share consumer reads the partitions of its subscription together with the other members of
its share group: every record is *acquired* by one member for the group's lock duration and
must be acknowledged by it (:class:`Ack`: ACCEPT, RELEASE for redelivery, REJECT to archive);
the broker counts deliveries and archives a record past ``share.delivery.count.limit``.
confluent-kafka has a share consumer from 2.15 (librdkafka marks it *preview*); Apache Kafka
serves share groups from 4.1 (on by default in a 4.2+ cluster format).

* :class:`KafkaShareConsumer` is the subset of the share consumer the runtime calls;
  :func:`new_share_consumer` builds the real one in explicit acknowledgement mode from a sink
  task's consumer config, leaving out the settings librdkafka refuses for share consumers
  (they belong to consumer groups: offsets, auto commit, prefetch queue sizing).
* :func:`share_consumer_available` says whether the installed client has share consumers.
* :func:`configure_share_group` sets a share group's configs through the admin API
  (``share.auto.offset.reset``, lock duration, delivery limit) and answers the group's
  effective ``share.*`` configs; a broker without share groups makes it raise
  :class:`ShareGroupsUnavailable`, with what to do.

Threading: a share consumer is used by one thread (the task's); librdkafka raises when it is
called concurrently. The admin helpers are safe from any thread.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any, Protocol

import confluent_kafka
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

log = logging.getLogger(__name__)

__all__ = [
    "Ack",
    "KafkaShareConsumer",
    "ShareGroupsUnavailable",
    "configure_share_group",
    "new_share_consumer",
    "share_consumer_available",
    "share_consumer_config",
]

# Consumer-group settings librdkafka refuses in a share consumer's config ("... is not
# applicable for share consumer"); :func:`new_share_consumer` also drops any other it names.
_NOT_FOR_SHARE = (
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "queued.max.messages.kbytes",
    "queued.min.messages",
    "fetch.queue.backoff.ms",
    "partition.assignment.strategy",
    "group.protocol",
    "group.protocol.type",
    "group.remote.assignor",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "group.instance.id",
    "enable.partition.eof",
    "isolation.level",
    "auto.commit.interval.ms",
    "offset.store.method",
    "check.crcs",
)

_MIN_CLIENT = "confluent-kafka 2.15"


class ShareGroupsUnavailable(Exception):
    """The client or the broker cannot run share groups (the message says which, and why)."""


class Ack(enum.IntEnum):
    """How a share consumer acknowledges one acquired record (librdkafka's AcknowledgeType)."""

    ACCEPT = 1  # processed: the broker never delivers it again
    RELEASE = 2  # not processed: delivered again (the delivery count grows)
    REJECT = 3  # unprocessable: archived, never delivered again


class KafkaShareConsumer(Protocol):
    """The share consumer calls the runtime makes (explicit acknowledgement mode)."""

    def subscribe(self, topics: list[str]) -> None: ...
    def poll(self, timeout: float = ...) -> Any: ...
    def acknowledge(self, message: Any, ack_type: Any = ...) -> None: ...
    def commit_sync(self, timeout: float = ...) -> Any: ...
    def close(self) -> None: ...


def share_consumer_available() -> bool:
    """Whether the installed confluent-kafka has a share consumer (2.15 and later)."""
    return hasattr(confluent_kafka, "ShareConsumer")


def share_consumer_config(consumer_config: Mapping[str, Any], max_poll: int) -> dict[str, Any]:
    """A share consumer's librdkafka config from a sink task's consumer config: explicit
    acknowledgement, at most ``max_poll`` records per poll (best effort, as librdkafka says),
    without the consumer-group settings a share consumer refuses."""
    cfg = {k: v for k, v in consumer_config.items() if k not in _NOT_FOR_SHARE}
    cfg["share.acknowledgement.mode"] = "explicit"
    cfg["max.poll.records"] = max_poll
    return cfg


def new_share_consumer(config: dict[str, Any]) -> KafkaShareConsumer:
    """A librdkafka share consumer from :func:`share_consumer_config`'s ``config``.

    A setting librdkafka names as not applicable to share consumers is left out (logged at
    INFO) and the consumer built again; :class:`ShareGroupsUnavailable` when the client has no
    share consumer."""
    if not share_consumer_available():
        raise ShareGroupsUnavailable(
            f"consumer.group.type=share needs {_MIN_CLIENT} or later (its ShareConsumer); the "
            f"installed confluent-kafka is {confluent_kafka.version()[0]}"
        )
    cfg = dict(config)
    while True:
        try:
            consumer: KafkaShareConsumer = confluent_kafka.ShareConsumer(cfg)
            return consumer
        except ValueError as e:
            text = str(e)
            if "not applicable for share consumer" not in text or text.count("`") < 2:
                raise
            key = text.split("`")[1]
            if key not in cfg:
                raise
            log.info("Share consumer: leaving out %s (%s)", key, text)
            del cfg[key]


def configure_share_group(
    admin_config: Mapping[str, Any], group_id: str, settings: Mapping[str, str], timeout: float
) -> dict[str, str]:
    """Set ``settings`` (group config name -> value, e.g. ``share.auto.offset.reset``) on the
    share group ``group_id`` (an incremental alter: other group configs stay), then answer the
    group's effective ``share.*`` configs.

    Raises :class:`ShareGroupsUnavailable` when the broker refuses group configs (a broker
    without share groups: Apache Kafka before 4.1, or a cluster whose ``share.version`` feature
    is 0), ``ValueError`` when the broker refuses a value (its message names the config)."""
    admin = AdminClient(dict(admin_config))
    resource = ConfigResource(
        ResourceType.GROUP,
        group_id,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in settings.items()
        ],
    )
    try:
        if settings:
            admin.incremental_alter_configs([resource], request_timeout=timeout)[resource].result(
                timeout
            )
        described = ConfigResource(ResourceType.GROUP, group_id)
        entries = admin.describe_configs([described], request_timeout=timeout)[described].result(
            timeout
        )
    except confluent_kafka.KafkaException as e:
        err = e.args[0] if e.args else None
        name = err.name() if isinstance(err, confluent_kafka.KafkaError) else ""
        if name in ("INVALID_CONFIG", "POLICY_VIOLATION") and "share." in str(e):
            raise ValueError(f"the broker refused the share group's configs: {e}") from e
        raise ShareGroupsUnavailable(
            f"the broker did not accept the configs of share group {group_id!r} ({e}): share "
            "groups need Apache Kafka 4.1 or later with share groups enabled (the share.version "
            "feature, on by default in a cluster formatted by 4.2+; kafka-features.sh upgrade "
            "--feature share.version=1 for an older format)"
        ) from e
    share = {name: str(entry.value) for name, entry in entries.items() if name.startswith("share.")}
    if "share.auto.offset.reset" not in share:
        raise ShareGroupsUnavailable(
            f"the broker lists no share group configs for {group_id!r}: it has no share groups "
            "(Apache Kafka 4.1 or later needed)"
        )
    return share
