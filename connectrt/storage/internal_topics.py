"""The worker's internal topics (configs, offsets, status) and what a worker refuses in them.

Kafka Connect keeps its state in compacted topics and refuses, at worker start-up, an existing
internal topic whose ``cleanup.policy`` is anything but ``compact``: with ``delete`` (or
``compact,delete``) the records age out with their segments, and with them the connector
configurations, source offsets or statuses. :func:`cleanup_policy_refusal` gives Kafka
Connect's reason, word for word, naming the worker setting that supplied the topic.

A topic the worker has to create with a replication factor above the cluster's number of
brokers cannot be created on Apache Kafka (``INVALID_REPLICATION_FACTOR``), and some
Kafka-protocol brokers accept it silently: :func:`replication_factor_refusal` refuses it
first, naming the ``*.storage.replication.factor`` setting.

:func:`topic_cleanup_policy` reads a topic's policy (one describe-configs request); it answers
None when the broker does not say (an older broker, no permission to describe, or a broker that
describes only explicitly set configs, as the embedded test broker does): the check is then
skipped, as Kafka Connect skips it, and logged. Everything here is thread-safe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

__all__ = [
    "CONFIGS",
    "OFFSETS",
    "STATUS",
    "InternalTopic",
    "cleanup_policy_refusal",
    "replication_factor_refusal",
    "topic_cleanup_policy",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InternalTopic:
    """One kind of internal topic: the worker settings naming it and its replication factor,
    and what it holds (Kafka Connect's words, used in its messages)."""

    topic_setting: str
    replication_setting: str
    purpose: str


CONFIGS = InternalTopic(
    "config.storage.topic", "config.storage.replication.factor", "connector configurations"
)
OFFSETS = InternalTopic(
    "offset.storage.topic", "offset.storage.replication.factor", "source connector offsets"
)
STATUS = InternalTopic(
    "status.storage.topic", "status.storage.replication.factor", "connector and task statuses"
)


def cleanup_policy_refusal(topic: str, internal: InternalTopic, policy: str) -> str | None:
    """Kafka Connect's reason for refusing ``topic`` with cleanup policy ``policy`` (as the
    broker describes it, e.g. ``delete`` or ``compact,delete``), or None when it is exactly
    ``compact``."""
    policies = {p.strip().lower() for p in policy.split(",") if p.strip()}
    if policies == {"compact"}:
        return None
    found = ",".join(p.strip() for p in policy.split(",") if p.strip())
    setting, purpose = internal.topic_setting, internal.purpose
    return (
        f"Topic '{topic}' supplied via the '{setting}' property is required to have "
        f"'cleanup.policy=compact' to guarantee consistency and durability of {purpose}, but "
        f"found the topic currently has 'cleanup.policy={found}'. Continuing would likely "
        f"result in eventually losing {purpose} and problems restarting this Connect cluster "
        f"in the future. Change the '{setting}' property in the Connect worker configurations "
        "to use a topic with 'cleanup.policy=compact'."
    )


def replication_factor_refusal(
    topic: str, internal: InternalTopic, factor: int, brokers: int
) -> str | None:
    """Why ``topic`` cannot be created with replication factor ``factor`` on a cluster of
    ``brokers`` brokers, or None when it can (``-1``: the broker's default)."""
    if factor == -1 or factor <= brokers:
        return None
    noun = "broker" if brokers == 1 else "brokers"
    setting = internal.replication_setting
    return (
        f"Invalid value {factor} for configuration {setting}: topic '{topic}' (supplied via "
        f"the '{internal.topic_setting}' property) does not exist and cannot be created with "
        f"replication factor {factor}: the Kafka cluster has {brokers} {noun}. Set {setting} "
        f"to at most {brokers}, or to -1 for the broker's default.replication.factor."
    )


def topic_cleanup_policy(admin: AdminClient, topic: str, timeout: float) -> str | None:
    """The ``cleanup.policy`` of ``topic`` as the broker describes it, or None when it does
    not say (see the module docstring)."""
    try:
        futures = admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, topic)], request_timeout=timeout
        )
        entries = next(iter(futures.values())).result(timeout)
    except Exception as e:
        log.info(
            "Unable to use the admin client to verify the cleanup policy of topic '%s' is "
            "'compact' (%s)",
            topic,
            e,
        )
        return None
    entry = entries.get("cleanup.policy")
    if entry is None or entry.value is None:
        log.info(
            "The broker does not describe the cleanup policy of topic '%s': not verified "
            "that it is 'compact'",
            topic,
        )
        return None
    return str(entry.value)
