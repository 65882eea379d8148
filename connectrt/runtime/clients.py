"""Kafka client settings for task producers, consumers and admin clients.

Layering, lowest to highest precedence: connectrt's defaults -> worker ``producer.*`` /
``consumer.*`` / ``admin.*`` -> connector ``producer.override.*`` etc. (as far as
``connector.client.config.override.policy`` allows) -> settings the runtime must own
(``group.id``, ``enable.auto.commit``...).

Defaults favour safety, then throughput:

* producer: ``acks=all``, ``enable.idempotence=true`` (no duplicates from internal retries,
  order kept with 5 requests in flight), ``linger.ms=5``, no compression (Kafka Connect's
  producer default: every consumer can read the data; ``producer.compression.type=lz4`` in
  the worker file trades that for throughput), ``partitioner=murmur2_random`` (keys land on
  the partitions Java clients choose), and a 32 MiB / 100k-record local queue so a slow
  broker applies back-pressure to ``poll()``;
* consumer: ``enable.auto.commit=false`` (offsets are committed only after ``flush``),
  ``auto.offset.reset=earliest``, and a 16 MiB per-partition prefetch cap so a slow sink
  bounds memory instead of growing it.

Java-only keys (serializers, ``max.poll.records``...) that librdkafka does not know are dropped
with a warning, so existing Kafka Connect worker files run unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connectrt.api.config import with_prefix
from connectrt.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = [
    "CONSUMER_DEFAULTS",
    "PRODUCER_DEFAULTS",
    "OverridePolicy",
    "admin_config",
    "consumer_config",
    "producer_config",
]

PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "batch.num.messages": 10000,
    "partitioner": "murmur2_random",
    "queue.buffering.max.kbytes": 32768,
    "queue.buffering.max.messages": 100000,
}

CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "queued.max.messages.kbytes": 16384,
    "fetch.max.bytes": 16777216,
    # librdkafka waits this long before fetching again once the prefetch queue is full
    # (default 1000 ms): a consumer that does any per-record work then idles for a second.
    "fetch.queue.backoff.ms": 10,
}

# Java client keys with no librdkafka equivalent (or one handled by the runtime itself).
_JAVA_ONLY = {
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "max.block.ms",
    "delivery.timeout.ms",
    "buffer.memory",
    "max.poll.records",
    "interceptor.classes",
    "default.api.timeout.ms",
    "retry.backoff.max.ms",
}

MAX_POLL_RECORDS_DEFAULT = 500

_PRINCIPAL_ALLOWED = {"sasl.jaas.config", "sasl.mechanism", "security.protocol"}


class OverridePolicy:
    """``connector.client.config.override.policy``: All, None or Principal."""

    def __init__(self, name: str) -> None:
        if name not in ("All", "None", "Principal"):
            raise ConfigError(
                f"Unknown connector.client.config.override.policy {name}",
                "connector.client.config.override.policy",
            )
        self.name = name

    def violations(self, connector_config: Mapping[str, str]) -> dict[str, str]:
        """Config key -> error message for every override this policy rejects."""
        out: dict[str, str] = {}
        for prefix in ("producer.override.", "consumer.override.", "admin.override."):
            for key in with_prefix(connector_config, prefix):
                allowed = self.name == "All" or (
                    self.name == "Principal" and key in _PRINCIPAL_ALLOWED
                )
                if not allowed:
                    out[prefix + key] = (
                        f"The '{self.name}' policy does not allow '{key}' to be overridden in "
                        "the connector configuration."
                    )
        return out


def _clean(cfg: dict[str, Any], kind: str) -> dict[str, Any]:
    for key in list(cfg):
        if key in _JAVA_ONLY:
            cfg.pop(key)
            if key != "max.poll.records":
                log.warning("Ignoring %s setting '%s': not a librdkafka property", kind, key)
    return cfg


# Worker keys that share a client prefix but configure something else (the REST admin listener).
_NOT_CLIENT_KEYS = {"admin": ("listeners",)}


def _layer(
    kind: str,
    defaults: Mapping[str, Any],
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
) -> dict[str, Any]:
    cfg: dict[str, Any] = dict(defaults)
    cfg["bootstrap.servers"] = bootstrap
    skip = _NOT_CLIENT_KEYS.get(kind, ())
    cfg.update(
        (k, v) for k, v in with_prefix(worker_props, f"{kind}.").items() if not k.startswith(skip)
    )
    if connector_config is not None:
        bad = policy.violations(connector_config)
        if bad:
            raise ConfigError("\n".join(bad.values()), next(iter(bad)))
        cfg.update(with_prefix(connector_config, f"{kind}.override."))
    return cfg


def max_poll_records(worker_props: Mapping[str, str], connector_config: Mapping[str, str]) -> int:
    raw = connector_config.get(
        "consumer.override.max.poll.records", worker_props.get("consumer.max.poll.records")
    )
    try:
        return max(1, int(raw)) if raw is not None else MAX_POLL_RECORDS_DEFAULT
    except ValueError:
        raise ConfigError(
            f"Invalid value {raw} for configuration max.poll.records: Not a number",
            "consumer.override.max.poll.records",
        ) from None


def producer_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
) -> dict[str, Any]:
    cfg = _layer("producer", PRODUCER_DEFAULTS, bootstrap, worker_props, connector_config, policy)
    cfg.setdefault("client.id", client_id)
    return _clean(cfg, "producer")


def consumer_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
    group_id: str,
) -> dict[str, Any]:
    cfg = _layer("consumer", CONSUMER_DEFAULTS, bootstrap, worker_props, connector_config, policy)
    cfg.setdefault("client.id", client_id)
    cfg["group.id"] = group_id
    cfg["enable.auto.commit"] = False  # the runtime commits after flush(); never the client
    return _clean(cfg, "consumer")


def admin_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
) -> dict[str, Any]:
    cfg = _layer("admin", {}, bootstrap, worker_props, connector_config, policy)
    cfg.setdefault("client.id", client_id)
    return _clean(cfg, "admin")
