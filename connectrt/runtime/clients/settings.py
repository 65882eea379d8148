"""Kafka client settings for task producers, consumers and admin clients.

Layering, lowest to highest precedence: connectrt's defaults -> worker ``producer.*`` /
``consumer.*`` / ``admin.*`` -> connector ``producer.override.*`` etc. (as far as
``connector.client.config.override.policy`` allows, and never what
:mod:`~connectrt.runtime.clients.override_safety` refuses: commands, libraries, callbacks, and
URLs or files outside the worker's allowlists) -> settings the runtime must own (``group.id``,
``enable.auto.commit``...).

Security keys (``security.protocol``, ``sasl.*``, ``ssl.*``) are the exception: which group a
client takes (top-level or prefixed; a task prefix without any inherits the top-level ones) and
how Kafka Connect's Java-style keys become librdkafka's is :mod:`connectrt.runtime.clients.security`
(``worker_own=True`` for the worker's own clients of its internal topics).

Defaults favour safety, then throughput:

* producer: ``acks=all``, ``enable.idempotence=true`` (no duplicates from internal retries,
  order kept with 5 requests in flight), ``linger.ms=5``, no compression (Kafka Connect's
  producer default: every consumer can read the data; ``producer.compression.type=lz4`` in
  the worker file trades that for throughput), ``partitioner=murmur2_random`` (keys land on
  the partitions Java clients choose), and a 32 MiB / 100k-record local queue so a slow
  broker applies back-pressure to ``poll()``;
* both: ``reconnect.backoff.ms=50``, the Java clients' default (:data:`RECONNECT_BACKOFF_MS`:
  a task's first record comes 25 ms sooner);
* consumer: ``enable.auto.commit=false`` (offsets are committed only after ``flush``),
  ``auto.offset.reset=earliest``, a 16 MiB per-partition prefetch cap so a slow sink
  bounds memory instead of growing it, and fetches of up to 8 MiB per partition
  (``max.partition.fetch.bytes``; librdkafka's default is 1 MiB) within ``fetch.max.bytes``.
  With ``group.protocol=consumer`` (KIP-848) the classic group settings
  (``session.timeout.ms``...) of the worker are left out
  (:mod:`~connectrt.runtime.clients.group_protocol`).

Java-only keys (serializers, ``max.poll.records``...) that librdkafka does not know are dropped
with a warning, so existing Kafka Connect worker files run unchanged.

librdkafka's own log lines go to the Python logger ``connectrt.kafka.client``
(:data:`CLIENT_LOGGER`, set on every client config), not straight to stderr: they get the
worker's log format and obey its levels (a notice such as ``BGQUEUE ... Purging 1 unserved
events`` at a client's close is INFO, hidden at WARNING).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from connectrt.api.config import with_prefix
from connectrt.errors import ConfigError
from connectrt.runtime.clients.group_protocol import override_error, without_classic_only
from connectrt.runtime.clients.override_safety import OverrideSafety
from connectrt.runtime.clients.security import (
    client_security,
    is_security_key,
    security_keys,
    translate,
)

log = logging.getLogger(__name__)

CLIENT_LOGGER = logging.getLogger("connectrt.kafka.client")
"""Where librdkafka's log lines go (confluent-kafka's ``logger`` setting; served by the
client's poll/flush)."""

__all__ = [
    "ALLOWLIST_CONFIG",
    "CLIENT_LOGGER",
    "CONSUMER_DEFAULTS",
    "POLICY_CONFIG",
    "PRODUCER_DEFAULTS",
    "RECONNECT_BACKOFF_MS",
    "OverridePolicy",
    "admin_config",
    "check_allowlist",
    "check_policy_name",
    "consumer_config",
    "max_block_ms",
    "policy_name",
    "producer_config",
]

RECONNECT_BACKOFF_MS = 50
"""The task clients' ``reconnect.backoff.ms``: the Java clients' default (librdkafka's is 100).
Besides the first wait before reconnecting to a broker, librdkafka derives from it how long a new
client waits before it connects to the first broker named in the bootstrap metadata, once the
bootstrap connection is dropped (half of it): every task's producer and consumer paid that before
its first record, 50 ms with librdkafka's default, 25 ms with this one."""

PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "batch.num.messages": 10000,
    "partitioner": "murmur2_random",
    "queue.buffering.max.kbytes": 32768,
    "queue.buffering.max.messages": 100000,
    "reconnect.backoff.ms": RECONNECT_BACKOFF_MS,
}

CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "queued.max.messages.kbytes": 16384,
    "fetch.max.bytes": 16777216,
    # Fewer, larger fetches: librdkafka's default (and the Java consumer's) is 1 MiB per
    # partition per fetch, which a sink reading one busy partition spends in round trips to the
    # broker. The whole response stays bounded by fetch.max.bytes (above, or a quarter of a
    # task's share of worker.memory.budget.mb: 4 MiB by default). Measured with
    # bench/bench_vs_kafka_connect.py --variant (docs/benchmarks.md, 2026-11-29).
    "max.partition.fetch.bytes": 8388608,
    # librdkafka waits this long before fetching again once the prefetch queue is full
    # (default 1000 ms): a consumer that does any per-record work then idles for a second.
    "fetch.queue.backoff.ms": 10,
    "reconnect.backoff.ms": RECONNECT_BACKOFF_MS,
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

POLICY_CONFIG = "connector.client.config.override.policy"
ALLOWLIST_CONFIG = "connector.client.config.override.allowlist"
POLICY_NAMES = ("All", "None", "Principal", "Allowlist")
_POLICY_PACKAGE = "org.apache.kafka.connect.connector.policy."
_POLICY_SUFFIX = "ConnectorClientConfigOverridePolicy"


def policy_name(value: str) -> str | None:
    """The short policy name for ``value`` (``All``, ``None``, ``Principal``, ``Allowlist``), as
    Kafka accepts it: the alias, the simple class name or the fully qualified class name
    (``org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy``).
    None when it names no policy."""
    text = value.strip().removeprefix(_POLICY_PACKAGE)
    short = text.removesuffix(_POLICY_SUFFIX) if text != _POLICY_SUFFIX else text
    return short if short in POLICY_NAMES else None


def check_policy_name(name: str, value: object) -> None:
    """Validator of ``connector.client.config.override.policy`` values."""
    if value is not None and policy_name(str(value)) is None:
        raise ConfigError(
            f"Unknown {POLICY_CONFIG} {value}: use one of {', '.join(POLICY_NAMES)} (or the "
            "policy's class name)",
            name,
            value,
        )


def check_allowlist(name: str, value: object) -> None:
    """Validator of ``connector.client.config.override.allowlist``: no duplicate entries."""
    items = [str(v).strip() for v in value] if isinstance(value, list | tuple) else []
    if len(set(items)) != len(items):
        raise ConfigError("Duplicate values are not allowed", name, value)


class OverridePolicy:
    """``connector.client.config.override.policy``: All, None, Principal or Allowlist.

    ``Allowlist`` (KIP-1188) lets connectors override exactly the client settings named in
    ``allowlist`` (the worker's ``connector.client.config.override.allowlist``: unprefixed
    client keys such as ``linger.ms``; empty allows nothing). ``Principal`` allows the three
    SASL/security keys and is deprecated in Kafka 4.2 (Allowlist with those three keys does the
    same).

    Whatever the policy, ``safety`` (:class:`~connectrt.runtime.clients.override_safety.
    OverrideSafety`) refuses overrides that would make the worker run a command, load a library,
    install a callback, or fetch a URL / read a file outside the worker's allowlists; the
    default refuses all of those. Immutable; safe to share between threads.
    """

    def __init__(
        self, name: str, allowlist: Iterable[str] = (), safety: OverrideSafety | None = None
    ) -> None:
        short = policy_name(name)
        if short is None:
            raise ConfigError(f"Unknown {POLICY_CONFIG} {name}", POLICY_CONFIG, name)
        self.name = short
        self.allowlist = frozenset(a.strip() for a in allowlist if a.strip())
        self.safety = safety if safety is not None else OverrideSafety()

    @classmethod
    def from_worker_config(cls, config: Any) -> OverridePolicy:
        """The policy a worker config asks for (a WorkerConfig or its parsed values), with the
        worker's URL and directory allowlists and kinit commands."""
        name = str(config[POLICY_CONFIG])
        allowlist = config[ALLOWLIST_CONFIG] or ()
        policy = cls(name, allowlist, OverrideSafety.from_worker_config(config))
        if policy.name == "Principal":
            log.warning(
                "%s=Principal is deprecated (Kafka 4.2, KIP-1188): use Allowlist with %s=%s",
                POLICY_CONFIG,
                ALLOWLIST_CONFIG,
                ",".join(sorted(_PRINCIPAL_ALLOWED)),
            )
        return policy

    def allows(self, key: str) -> bool:
        """Whether connectors may override the (unprefixed) client setting ``key``."""
        if self.name == "All":
            return True
        if self.name == "Principal":
            return key in _PRINCIPAL_ALLOWED
        if self.name == "Allowlist":
            return key in self.allowlist
        return False

    def violations(self, connector_config: Mapping[str, str]) -> dict[str, str]:
        """Config key -> error message for every override this policy (or its safety limits)
        rejects. Messages name keys, never values."""
        out: dict[str, str] = {}
        for prefix in ("producer.override.", "consumer.override.", "admin.override."):
            overrides = with_prefix(connector_config, prefix)
            unsafe = self.safety.refusals(overrides)
            for key in overrides:
                if key in unsafe:
                    out[prefix + key] = unsafe[key]
                elif not self.allows(key):
                    out[prefix + key] = (
                        f"The '{self.name}' policy does not allow '{key}' to be overridden in "
                        "the connector configuration."
                    )
        return out


def _clean(cfg: dict[str, Any], kind: str) -> dict[str, Any]:
    for key in list(cfg):
        if key in _JAVA_ONLY:
            cfg.pop(key)
            if key not in ("max.poll.records", "max.block.ms"):
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
    worker_own: bool,
) -> dict[str, Any]:
    cfg: dict[str, Any] = dict(defaults)
    cfg["bootstrap.servers"] = bootstrap
    skip = _NOT_CLIENT_KEYS.get(kind, ())
    cfg.update(
        (k, v)
        for k, v in with_prefix(worker_props, f"{kind}.").items()
        if not k.startswith(skip) and not is_security_key(k)
    )
    cfg.update(client_security(worker_props, kind, worker_own=worker_own).settings)
    if connector_config is not None:
        bad = policy.violations(connector_config)
        if bad:
            raise ConfigError("\n".join(bad.values()), next(iter(bad)))
        prefix = f"{kind}.override."
        overrides = with_prefix(connector_config, prefix)
        cfg.update((k, v) for k, v in overrides.items() if not is_security_key(k))
        translation = translate(security_keys(overrides), prefix)
        if translation.ignored:
            log.warning(
                "Ignoring Kafka client security settings librdkafka has no counterpart for: %s",
                ", ".join(translation.ignored),
            )
        cfg.update(translation.settings)
    cfg["logger"] = CLIENT_LOGGER
    return cfg


MAX_BLOCK_MS_DEFAULT = 60000
"""Java's producer ``max.block.ms`` default."""


def max_block_ms(worker_props: Mapping[str, str], connector_config: Mapping[str, str]) -> int:
    """The producer's ``max.block.ms`` (``producer.override.max.block.ms`` of the connector, else
    ``producer.max.block.ms`` of the worker, else Java's 60000). librdkafka has no such setting;
    an exactly-once source task uses it as the longest a transaction commit waits out a broker
    outage (:mod:`connectrt.runtime.source.transactions`)."""
    return _client_int(
        worker_props, connector_config, "producer", "max.block.ms", MAX_BLOCK_MS_DEFAULT, least=0
    )


def max_poll_records(worker_props: Mapping[str, str], connector_config: Mapping[str, str]) -> int:
    """The consumer's ``max.poll.records`` (``consumer.override.max.poll.records`` of the
    connector, else ``consumer.max.poll.records`` of the worker, else the default), at least 1."""
    return _client_int(
        worker_props,
        connector_config,
        "consumer",
        "max.poll.records",
        MAX_POLL_RECORDS_DEFAULT,
        least=1,
    )


def _client_int(
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str],
    client: str,
    key: str,
    default: int,
    *,
    least: int,
) -> int:
    """A whole-number client setting the runtime reads itself: the connector's
    ``<client>.override.<key>``, else the worker's ``<client>.<key>``, else ``default``; raised
    to ``least``. A value that is not a number is a :class:`ConfigError` naming the override."""
    raw = connector_config.get(f"{client}.override.{key}", worker_props.get(f"{client}.{key}"))
    try:
        return max(least, int(raw)) if raw is not None else default
    except ValueError:
        raise ConfigError(
            f"Invalid value {raw} for configuration {key}: Not a number",
            f"{client}.override.{key}",
        ) from None


def producer_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
    *,
    worker_own: bool = False,
) -> dict[str, Any]:
    """A task producer's settings (see the module), or, with ``worker_own``, one of the worker's
    own producers (internal topics), whose security keys are the top-level ones."""
    cfg = _layer(
        "producer", PRODUCER_DEFAULTS, bootstrap, worker_props, connector_config, policy, worker_own
    )
    cfg.setdefault("client.id", client_id)
    return _clean(cfg, "producer")


def consumer_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
    group_id: str,
    *,
    worker_own: bool = False,
) -> dict[str, Any]:
    """A task consumer's settings, or one of the worker's own (``worker_own``): as
    :func:`producer_config`."""
    cfg = _layer(
        "consumer", CONSUMER_DEFAULTS, bootstrap, worker_props, connector_config, policy, worker_own
    )
    cfg.setdefault("client.id", client_id)
    cfg["group.id"] = group_id
    cfg["enable.auto.commit"] = False  # the runtime commits after flush(); never the client
    explicit = with_prefix(connector_config, "consumer.override.") if connector_config else {}
    try:
        # group.protocol=consumer (KIP-848): librdkafka refuses the classic group settings.
        without_classic_only(cfg, explicit, f"Consumer {client_id}")
    except ValueError as e:
        raise ConfigError(override_error(str(e)), str(e)) from None
    return _clean(cfg, "consumer")


def admin_config(
    bootstrap: str,
    worker_props: Mapping[str, str],
    connector_config: Mapping[str, str] | None,
    policy: OverridePolicy,
    client_id: str,
    *,
    worker_own: bool = False,
) -> dict[str, Any]:
    """A task admin client's settings, or one of the worker's own (``worker_own``): as
    :func:`producer_config`."""
    cfg = _layer("admin", {}, bootstrap, worker_props, connector_config, policy, worker_own)
    cfg.setdefault("client.id", client_id)
    return _clean(cfg, "admin")


class WorkerClients(NamedTuple):
    """The settings of the three clients a worker keeps for one of its own topics."""

    producer: dict[str, Any]
    consumer: dict[str, Any]
    admin: dict[str, Any]


def worker_clients(
    bootstrap: str, worker_props: Mapping[str, str], role: str, group_id: str
) -> WorkerClients:
    """A worker's own producer, consumer (in ``group_id``) and admin client for an internal
    topic (``worker_own``, no connector overrides), with client ids
    ``connect-<role>-producer``, ``-consumer`` and ``-admin``."""
    policy = OverridePolicy("None")
    return WorkerClients(
        producer_config(
            bootstrap, worker_props, None, policy, f"connect-{role}-producer", worker_own=True
        ),
        consumer_config(
            bootstrap,
            worker_props,
            None,
            policy,
            f"connect-{role}-consumer",
            group_id,
            worker_own=True,
        ),
        admin_config(
            bootstrap, worker_props, None, policy, f"connect-{role}-admin", worker_own=True
        ),
    )
