"""Connector settings the Kafka cluster itself would refuse, found at validate time.

A replication factor above the cluster's number of brokers cannot be satisfied: Apache Kafka
refuses to create such a topic (``INVALID_REPLICATION_FACTOR``), so a connector accepted with
one fails later, at task start or at the first record that needs the topic. These checks
refuse the config up front, per key, with a message that names the setting:

* ``errors.deadletterqueue.topic.replication.factor`` when a dead letter queue is set
  (``errors.deadletterqueue.topic.name``); its default is 3, as in Kafka Connect, so a DLQ
  without the key is refused on a cluster of one or two brokers;
* ``topic.creation.<group>.replication.factor`` of the default group and of every listed group
  that sets it (a group without the key takes the default group's, checked there).

``-1`` (the broker's ``default.replication.factor``) is always accepted. The number of brokers
comes from the cluster's metadata (:func:`broker_count`); when the cluster cannot be reached
within a short timeout these checks are skipped (nothing is refused on that ground) and
the task-start checks remain (the DLQ and the topics are created then).

:func:`replication_factor_errors` is pure; :func:`broker_count` makes one metadata request;
:class:`BrokerCount` remembers its last answer for a while. All are thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from connectrt.runtime.clients.kafka import new_admin
from connectrt.runtime.config.topic_creation import (
    DEFAULT_GROUP,
    GROUPS_CONFIG,
    PREFIX,
    REPLICATION_FACTOR,
)

__all__ = [
    "BROKER_COUNT_TIMEOUT_S",
    "DLQ_REPLICATION_FACTOR_CONFIG",
    "DLQ_TOPIC_CONFIG",
    "BrokerCount",
    "broker_count",
    "replication_factor_errors",
    "replication_factor_refusal",
]

log = logging.getLogger(__name__)

DLQ_TOPIC_CONFIG = "errors.deadletterqueue.topic.name"
DLQ_REPLICATION_FACTOR_CONFIG = "errors.deadletterqueue.topic.replication.factor"
DLQ_DEFAULT_REPLICATION_FACTOR = 3
"""Kafka Connect's default for ``errors.deadletterqueue.topic.replication.factor``."""
BROKER_COUNT_TIMEOUT_S = 5.0
"""How long a validation waits for the cluster's metadata before skipping these checks."""


def replication_factor_refusal(
    key: str, factor: int, brokers: int, defaulted: bool = False
) -> str | None:
    """Why ``factor`` (the value of ``key``) cannot be satisfied by ``brokers`` brokers, or
    None when it can (``-1`` and any factor up to ``brokers``)."""
    if factor <= brokers or factor == -1:
        return None
    told = f"{factor} (the default)" if defaulted else str(factor)
    noun = "broker" if brokers == 1 else "brokers"
    return (
        f"Invalid value {told} for configuration {key}: Replication factor must not be larger "
        f"than the number of brokers in the Kafka cluster, and this cluster has {brokers} "
        f"{noun}, so it would refuse to create the topic. Set {key} to at most {brokers}, or "
        "to -1 for the broker's default.replication.factor"
    )


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None  # not a number: the type check reports it


def replication_factor_errors(
    config: Mapping[str, str | None], brokers: int, *, source: bool
) -> dict[str, list[str]]:
    """Per-key errors of the replication factors in ``config`` that a cluster of ``brokers``
    brokers cannot satisfy. ``source``: the connector is a source connector (topic creation
    groups apply to source connectors only; the DLQ to both, beyond Kafka for sources)."""
    errors: dict[str, list[str]] = {}
    if (config.get(DLQ_TOPIC_CONFIG) or "").strip():
        raw = config.get(DLQ_REPLICATION_FACTOR_CONFIG)
        defaulted = raw is None or not str(raw).strip()
        factor = DLQ_DEFAULT_REPLICATION_FACTOR if defaulted else _int(raw)
        if factor is not None:
            message = replication_factor_refusal(
                DLQ_REPLICATION_FACTOR_CONFIG, factor, brokers, defaulted
            )
            if message:
                errors[DLQ_REPLICATION_FACTOR_CONFIG] = [message]
    if source:
        groups = [DEFAULT_GROUP]
        groups += [g.strip() for g in (config.get(GROUPS_CONFIG) or "").split(",") if g.strip()]
        for group in dict.fromkeys(groups):
            key = f"{PREFIX}{group}.{REPLICATION_FACTOR}"
            factor = _int(config.get(key)) if config.get(key) is not None else None
            if factor is not None:
                message = replication_factor_refusal(key, factor, brokers)
                if message:
                    errors[key] = [message]
    return errors


def broker_count(
    admin_config: Mapping[str, Any], timeout: float = BROKER_COUNT_TIMEOUT_S
) -> int | None:
    """The number of brokers in the cluster's metadata, or None when the cluster does not
    answer within ``timeout`` seconds (logged: the checks that need it are skipped)."""
    try:
        metadata = new_admin(dict(admin_config)).list_topics(timeout=timeout)
    except Exception as e:
        log.info(
            "Could not read the Kafka cluster's brokers within %.0f s (%s): replication "
            "factors are not checked against the cluster's size in this validation",
            timeout,
            e,
        )
        return None
    return len(metadata.brokers) or None


class BrokerCount:
    """The cluster's number of brokers for validations: ``fetch`` (e.g. :func:`broker_count`)
    asked at most once per ``ttl_s`` seconds while it answers; an unanswered fetch (None) is
    not remembered, so the next validation asks again. Thread-safe (concurrent validations
    may both fetch; either answer is fine)."""

    def __init__(self, fetch: Callable[[], int | None], ttl_s: float = 30.0) -> None:
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._known: tuple[float, int] | None = None

    def __call__(self) -> int | None:
        with self._lock:
            known = self._known
        if known is not None and time.monotonic() - known[0] < self._ttl_s:
            return known[1]
        count = self._fetch()
        if count is not None:
            with self._lock:
                self._known = (time.monotonic(), count)
        return count
