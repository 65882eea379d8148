"""The consumer group protocol of a sink task's consumer: ``classic`` or ``consumer`` (KIP-848).

``group.protocol=consumer`` (GA since Apache Kafka 4.0; set per connector with
``consumer.override.group.protocol=consumer`` or for every sink of a worker with
``consumer.group.protocol=consumer``) moves the assignment to the broker's group coordinator:
the member only heartbeats, partitions are added and removed one at a time, and the settings
of the classic protocol are the broker's business. librdkafka refuses to create a consumer
that sets any of them (:data:`CLASSIC_ONLY_KEYS`). So:

* settings that came from connectrt's defaults or the worker's ``consumer.*`` are dropped from
  such a consumer's config (they were meant for classic groups; the worker logs it once per
  consumer at INFO), see :func:`without_classic_only`;
* a connector that asks for the consumer protocol and sets one of them itself
  (``consumer.override.session.timeout.ms``...) is refused with an error on that key, at
  validate/create time (:func:`override_errors`) and at task start.

:func:`assigns_incrementally` tells the sink runner which rebalance calls librdkafka wants in
its rebalance callbacks: ``incremental_assign``/``incremental_unassign`` for the consumer
protocol and for the classic protocol with the ``cooperative-sticky`` assignor, ``assign``/
``unassign`` (the whole assignment) for the eager assignors. confluent-kafka has no
``rebalance_protocol()`` to ask, so it is read from the consumer's config, which decides it.

Pure functions over config mappings; no state, safe from any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

__all__ = [
    "CLASSIC_ONLY_KEYS",
    "GROUP_PROTOCOL",
    "assigns_incrementally",
    "override_error",
    "override_errors",
    "uses_consumer_protocol",
    "without_classic_only",
]

GROUP_PROTOCOL = "group.protocol"
_PROTOCOLS = ("classic", "consumer")

CLASSIC_ONLY_KEYS: dict[str, str] = {
    "session.timeout.ms": "the group coordinator's group.consumer.session.timeout.ms applies",
    "heartbeat.interval.ms": "the group coordinator's group.consumer.heartbeat.interval.ms applies",
    "partition.assignment.strategy": "use group.remote.assignor (uniform or range) instead",
    "group.protocol.type": "the consumer protocol has no protocol type",
}
"""Consumer settings of the classic protocol that librdkafka refuses with
``group.protocol=consumer``, each with what takes its place."""

_OVERRIDE = "consumer.override."


def uses_consumer_protocol(config: Mapping[str, Any]) -> bool:
    """Whether a librdkafka consumer config asks for the KIP-848 consumer group protocol."""
    return str(config.get(GROUP_PROTOCOL, "classic")).strip().lower() == "consumer"


def assigns_incrementally(config: Mapping[str, Any]) -> bool:
    """Whether a consumer with this config gets incremental assignments in its rebalance
    callbacks (only the partitions added or removed, to pass to ``incremental_assign`` /
    ``incremental_unassign``) rather than eager ones (the whole new assignment, every partition
    revoked first). True for the consumer protocol and for the classic protocol with the
    ``cooperative-sticky`` assignor (librdkafka refuses to mix it with eager assignors)."""
    if uses_consumer_protocol(config):
        return True
    strategies = str(config.get("partition.assignment.strategy", "range,roundrobin"))
    names = {s.strip().lower() for s in strategies.split(",") if s.strip()}
    return names == {"cooperative-sticky"}


def without_classic_only(
    config: dict[str, Any], explicit: Mapping[str, Any], what: str
) -> dict[str, Any]:
    """``config`` (changed in place and returned) ready for librdkafka: with the consumer
    protocol, the classic-only settings that came from defaults or the worker are removed.

    ``explicit`` holds the connector's own ``consumer.override.*`` settings (unprefixed): one of
    those that is classic-only is an error, raised as ``ValueError`` naming its key (the
    caller turns it into its ConfigError). ``what`` names the consumer in the log line."""
    if not uses_consumer_protocol(config):
        return config
    for key in CLASSIC_ONLY_KEYS:
        if key in explicit:
            raise ValueError(_OVERRIDE + key)
    dropped = [key for key in CLASSIC_ONLY_KEYS if config.pop(key, None) is not None]
    if dropped:
        log.info(
            "%s uses group.protocol=consumer: not passing the classic group setting(s) %s "
            "(the broker's group coordinator sets them)",
            what,
            ", ".join(dropped),
        )
    return config


def override_error(key: str) -> str:
    """The error message for a connector's classic-only ``consumer.override.`` ``key``."""
    bare = key.removeprefix(_OVERRIDE)
    return (
        f"{key} cannot be set with group.protocol=consumer: {CLASSIC_ONLY_KEYS[bare]} "
        "(librdkafka refuses the classic protocol's settings with the consumer protocol)"
    )


def override_errors(connector_config: Mapping[str, str | None]) -> dict[str, str]:
    """Config key -> error for a connector's consumer overrides that cannot work together:
    an unknown ``consumer.override.group.protocol``, or classic-only settings beside
    ``consumer.override.group.protocol=consumer``. Checks only what the connector config says
    (a worker-wide ``consumer.group.protocol`` is checked at task start)."""
    raw = connector_config.get(_OVERRIDE + GROUP_PROTOCOL)
    if raw is None:
        return {}
    value = raw.strip().lower()
    if value not in _PROTOCOLS:
        return {
            _OVERRIDE + GROUP_PROTOCOL: f"Invalid value {raw} for configuration "
            f"{GROUP_PROTOCOL}: String must be one of: {', '.join(_PROTOCOLS)}"
        }
    if value != "consumer":
        return {}
    return {
        _OVERRIDE + key: override_error(_OVERRIDE + key)
        for key in CLASSIC_ONLY_KEYS
        if connector_config.get(_OVERRIDE + key) is not None
    }
