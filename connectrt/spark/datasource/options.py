"""The bridge's read options, named and defaulted as Spark's Kafka source (spark-sql-kafka)
names them, parsed once on the driver and shipped to executors with the reader.

Spark hands data source options over as a case-insensitive dict whose keys are lower-cased,
so keys are read lower-case here and the alias lists of ``transforms``/``predicates`` are
lower-cased too (their ``transforms.<alias>.*`` keys arrive lower-cased).

* Subscription: exactly one of ``subscribe`` (comma-separated topics), ``subscribePattern``
  (a regular expression) or ``assign`` (``{"topic": [0, 1]}``). The bridge's former names
  ``topic``/``topics`` (for ``subscribe``) and ``pattern`` (for ``subscribePattern``) still
  work and log a deprecation warning.
* Offsets: ``startingOffsets`` (default ``earliest`` for a batch read, ``latest`` for a
  stream), ``endingOffsets`` (batch only, default ``latest``), each ``earliest``, ``latest``
  or ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest, -1 latest; every partition named);
  ``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp`` (``{"topic": {"0": ms}}``) and
  ``startingTimestamp``/``endingTimestamp`` (one time for all partitions), which win in that
  order as in Spark; ``startingOffsetsByTimestampStrategy`` (``error`` or ``latest``) for a
  starting time after the last record.
* ``failOnDataLoss`` (true), ``minPartitions``, ``maxOffsetsPerTrigger``,
  ``minOffsetsPerTrigger``, ``maxTriggerDelay`` (``15m``), ``includeHeaders`` (false),
  ``groupIdPrefix``, ``kafkaConsumer.pollTimeoutMs``.
* Kafka client settings: ``kafka.bootstrap.servers`` (required) and any other ``kafka.<key>``,
  passed to confluent-kafka without the prefix (``kafka.group.id`` included). Settings the
  source must own are refused as Spark refuses them (``kafka.auto.offset.reset``,
  ``kafka.enable.auto.commit``, the Java (de)serializer and interceptor classes). Security
  settings are written as for Spark's Kafka source, with the Java client's keys
  (``kafka.security.protocol``, ``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location``
  ...): :func:`kafka_client_settings` translates them as a worker's
  (:mod:`connectrt.runtime.clients.security`); librdkafka's own keys work as well.
* Everything else (converters, transforms, ``errors.*``, a sink connector's own keys) is kept
  as a connector-style config.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.config import ConfigError
from connectrt.runtime.clients.security import is_security_key, security_keys, translate
from connectrt.runtime.redaction import process_redactor

__all__ = [
    "DEPRECATED_NAMES",
    "BridgeOptions",
    "OffsetSpec",
    "kafka_client_settings",
    "parse_duration_ms",
]

log = logging.getLogger(__name__)

_KAFKA = "kafka."
EARLIEST, LATEST = -2, -1

# The bridge's former option names and Spark's names for them.
DEPRECATED_NAMES = {"topic": "subscribe", "topics": "subscribe", "pattern": "subscribePattern"}

# kafka.* settings Spark's Kafka source refuses because the source owns them, and why.
_OWNED_KAFKA_KEYS = {
    "auto.offset.reset": "set startingOffsets instead",
    "enable.auto.commit": "the source never commits: progress is in the checkpoint",
    "key.deserializer": "set key.converter instead",
    "value.deserializer": "set value.converter instead",
    "interceptor.classes": "interceptors are not supported",
}

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or stop.

    ``kind``: ``earliest``, ``latest``, ``offsets`` (``offsets`` holds per-partition offsets,
    -2 earliest, -1 latest), ``timestamp`` (one epoch-ms ``timestamp`` for every partition) or
    ``timestamps`` (``offsets`` holds per-partition epoch-ms times).
    """

    kind: str
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamp: int = 0

    @property
    def by_time(self) -> bool:
        return self.kind in ("timestamp", "timestamps")


def kafka_client_settings(kafka: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options (``kafka.`` removed) as confluent-kafka settings: Kafka's
    Java-style security keys translated as a worker's are (JAAS strings, PEM and PKCS12
    stores...; :func:`~connectrt.runtime.clients.security.translate`), every other key as is.
    Raises ConfigError for what cannot be translated (a JKS store...), naming the ``kafka.``
    key, never its value. The secrets the translation yields (passwords out of a JAAS string)
    are registered with the process redactor; Java-only keys are dropped with a warning."""
    translation = translate(security_keys(kafka), _KAFKA)
    if translation.ignored:
        log.warning(
            "Ignoring Kafka client security settings librdkafka has no counterpart for: %s",
            ", ".join(translation.ignored),
        )
    process_redactor().register_all(translation.secrets)
    plain = {k: v for k, v in kafka.items() if not is_security_key(k)}
    return {**plain, **{k: str(v) for k, v in translation.settings.items()}}


def parse_duration_ms(value: str, key: str) -> int:
    """Spark's time strings: ``15m``, ``10s``, ``500ms``, ``1h``; a bare number is ms."""
    match = _DURATION.match(value)
    if not match:
        raise ConfigError(f"Option {key} must be a duration such as 15m, 30s or 500ms")
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]


def _per_partition(text: str, key: str) -> dict[str, dict[int, int]]:
    try:
        parsed = json.loads(text)
        return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(
            f'Option {key} must be JSON like {{"topic": {{"0": 23, "1": -2}}}}, got {text!r}'
        ) from None


def _offset_spec(opts: Mapping[str, str], which: str) -> OffsetSpec | None:
    """``which`` is ``starting`` or ``ending``; None when no option of it is given."""
    global_time = opts.get(f"{which}timestamp", "").strip()
    if global_time:
        try:
            return OffsetSpec("timestamp", timestamp=int(global_time))
        except ValueError:
            raise ConfigError(
                f"Option {which}Timestamp must be epoch milliseconds, got {global_time!r}"
            ) from None
    by_time = opts.get(f"{which}offsetsbytimestamp", "").strip()
    if by_time:
        return OffsetSpec("timestamps", _per_partition(by_time, f"{which}OffsetsByTimestamp"))
    text = opts.get(f"{which}offsets", "").strip()
    if not text:
        return None
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    if not text.startswith("{"):
        raise ConfigError(
            f"Option {which}Offsets must be earliest, latest or JSON like "
            f'{{"topic": {{"0": 23, "1": -2}}}}, got {text!r}'
        )
    return OffsetSpec("offsets", _per_partition(text, f"{which}Offsets"))


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    text = opts.get(key.lower(), "").strip().lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise ConfigError(f"Option {key} must be true or false, got {text!r}")
    return text == "true"


def _positive(value: str, key: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise ConfigError(f"Option {key} must be a positive integer, got {value!r}")
    return number


def _optional_positive(opts: Mapping[str, str], key: str) -> int | None:
    text = opts.get(key.lower(), "").strip()
    return _positive(text, key) if text else None


def _subscription(
    opts: Mapping[str, str],
) -> tuple[tuple[str, ...], str | None, dict[str, tuple[int, ...]] | None]:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k, "").strip()]
    for old, new in DEPRECATED_NAMES.items():
        if opts.get(old, "").strip():
            log.warning(
                "Option %r is deprecated; use Spark's name %r (it means the same)", old, new
            )
            given.append(old)
    if len(given) != 1:
        raise ConfigError(
            "Set exactly one of the options subscribe (comma-separated topics), "
            "subscribePattern (a regular expression) or assign (JSON like "
            f'{{"topic": [0, 1]}}); got {given or "none"}'
        )
    key = given[0]
    if key in ("subscribepattern", "pattern"):
        pattern = opts[key]
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"Invalid subscribePattern {pattern!r}: {e}") from None
        return (), pattern, None
    if key == "assign":
        try:
            parsed = json.loads(opts["assign"])
            assign = {str(t): tuple(sorted({int(p) for p in ps})) for t, ps in parsed.items()}
        except (ValueError, AttributeError, TypeError):
            raise ConfigError(
                f'Option assign must be JSON like {{"topic": [0, 1]}}, got {opts["assign"]!r}'
            ) from None
        if not assign or not all(assign.values()):
            raise ConfigError("Option assign names no partition")
        return tuple(sorted(assign)), None, assign
    topics = tuple(t.strip() for t in opts[key].split(",") if t.strip())
    return topics, None, None


@dataclass(frozen=True)
class BridgeOptions:
    """Parsed options (picklable; read on executors). See the module docstring."""

    kafka: dict[str, str] = field(repr=False)  # confluent-kafka's keys (secrets included)
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: OffsetSpec | None = None  # None: earliest for a batch, latest for a stream
    ending: OffsetSpec | None = None  # None: latest (batch only)
    starting_by_time_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    include_headers: bool = False
    group_id_prefix: str | None = None
    streaming: bool = False  # set by the stream reader: the consumers' group id prefix
    connector: dict[str, str] = field(default_factory=dict)
    name: str = "spark-bridge"
    batch_rows: int = 20000
    poll_timeout: float = 60.0

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]

    def starting_for(self, streaming: bool) -> OffsetSpec:
        """``startingOffsets`` with Spark's defaults, checked as Spark checks it."""
        spec = self.starting or OffsetSpec("latest" if streaming else "earliest")
        latest = spec.kind == "latest" or (
            spec.kind == "offsets" and any(LATEST in p.values() for p in spec.offsets.values())
        )
        if latest and not streaming:
            raise ConfigError(
                "startingOffsets latest (or -1) is not valid for a batch read, as in Spark's "
                "Kafka source: it would read nothing"
            )
        return spec

    def ending_for(self, streaming: bool) -> OffsetSpec:
        """``endingOffsets`` (batch reads only, default latest), checked as Spark checks it."""
        if streaming:
            if self.ending is not None:
                raise ConfigError(
                    "endingOffsets, endingOffsetsByTimestamp and endingTimestamp are for "
                    "batch reads only, as in Spark's Kafka source"
                )
            return OffsetSpec("latest")
        spec = self.ending or OffsetSpec("latest")
        if spec.kind == "earliest" or (
            spec.kind == "offsets" and any(EARLIEST in p.values() for p in spec.offsets.values())
        ):
            raise ConfigError(
                "endingOffsets earliest (or -2) is not valid for a batch read, as in Spark's "
                "Kafka source"
            )
        return spec

    def group_id(self, unique: str) -> str:
        """``kafka.group.id`` if given, else ``<groupIdPrefix>-<unique>`` (Spark's default
        prefixes: ``spark-kafka-source`` streaming, ``spark-kafka-relation`` batch)."""
        if self.kafka.get("group.id"):
            return self.kafka["group.id"]
        prefix = self.group_id_prefix or (
            "spark-kafka-source" if self.streaming else "spark-kafka-relation"
        )
        return f"{prefix}-{unique}"

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, reading: bool = True) -> BridgeOptions:
        opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
        kafka = {k[len(_KAFKA) :]: v for k, v in opts.items() if k.startswith(_KAFKA)}
        if not kafka.get("bootstrap.servers") and reading:
            raise ConfigError("Option kafka.bootstrap.servers is required")
        for key, why in _OWNED_KAFKA_KEYS.items():
            if key in kafka and reading:
                raise ConfigError(f"Kafka option kafka.{key} is not supported: {why}")
        connector = {k: v for k, v in opts.items() if not k.startswith(_KAFKA)}
        for key in ("transforms", "predicates"):
            if connector.get(key):
                connector[key] = connector[key].lower()
        topics: tuple[str, ...] = ()
        pattern = None
        assign = None
        if reading:
            topics, pattern, assign = _subscription(opts)
        strategy = (opts.get("startingoffsetsbytimestampstrategy") or "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise ConfigError(
                f"Option startingOffsetsByTimestampStrategy must be error or latest, got "
                f"{strategy!r}"
            )
        poll_ms = opts.get("kafkaconsumer.polltimeoutms") or opts.get("poll.timeout.ms")
        return cls(
            kafka=kafka_client_settings(kafka),
            topics=topics,
            pattern=pattern,
            assign=assign,
            starting=_offset_spec(opts, "starting"),
            ending=_offset_spec(opts, "ending"),
            starting_by_time_strategy=strategy,
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            min_partitions=_optional_positive(opts, "minPartitions"),
            max_offsets_per_trigger=_optional_positive(opts, "maxOffsetsPerTrigger"),
            min_offsets_per_trigger=_optional_positive(opts, "minOffsetsPerTrigger"),
            max_trigger_delay_ms=parse_duration_ms(
                opts.get("maxtriggerdelay") or "15m", "maxTriggerDelay"
            ),
            include_headers=_bool(opts, "includeHeaders", False),
            group_id_prefix=opts.get("groupidprefix") or None,
            connector=connector,
            name=opts.get("name") or "spark-bridge",
            batch_rows=_positive(opts.get("batch.rows", "20000"), "batch.rows"),
            poll_timeout=_positive(poll_ms or "60000", "kafkaConsumer.pollTimeoutMs") / 1000.0,
        )
