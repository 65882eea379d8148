"""The bridge's options, parsed once on the driver and shipped to executors with the reader.

Spark hands data source options over as a case-insensitive dict whose keys are lower-cased,
so keys are read lower-case here and the alias lists of ``transforms``/``predicates`` are
lower-cased too (their ``transforms.<alias>.*`` keys arrive lower-cased).

Kafka client settings: ``kafka.bootstrap.servers`` (required) and any other ``kafka.<key>``,
passed to confluent-kafka without the prefix. Everything else (converters, transforms,
``errors.*``, a sink connector's own keys) is kept as a connector-style config.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.config import ConfigError

__all__ = ["BridgeOptions", "OffsetSpec", "parse_offset_spec"]

_KAFKA = "kafka."


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or stop: ``earliest``, ``latest``, per-partition offsets
    (``{"topic": {"0": 42}}``, -2 earliest, -1 latest) or a timestamp in epoch ms."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp"
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamp: int = 0


def parse_offset_spec(value: str | None, timestamp: str | None, what: str) -> OffsetSpec:
    if timestamp is not None and str(timestamp).strip():
        try:
            return OffsetSpec("timestamp", timestamp=int(str(timestamp).strip()))
        except ValueError:
            raise ConfigError(
                f"{what}Timestamp must be epoch milliseconds, got {timestamp!r}"
            ) from None
    text = (value or "").strip()
    if not text:
        return OffsetSpec("earliest" if what == "starting" else "latest")
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    try:
        parsed = json.loads(text)
        offsets = {
            str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()
        }
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(
            f"{what}Offsets must be earliest, latest or JSON like "
            f'{{"topic": {{"0": 23, "1": -2}}}}, got {text!r}'
        ) from None
    return OffsetSpec("offsets", offsets=offsets)


@dataclass(frozen=True)
class BridgeOptions:
    """Parsed options (picklable; read on executors)."""

    kafka: dict[str, str]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    connector: dict[str, str] = field(default_factory=dict)
    name: str = "spark-bridge"
    batch_rows: int = 20000
    poll_timeout: float = 60.0

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, reading: bool = True) -> BridgeOptions:
        opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
        kafka = {k[len(_KAFKA) :]: v for k, v in opts.items() if k.startswith(_KAFKA)}
        if not kafka.get("bootstrap.servers") and reading:
            raise ConfigError("Option kafka.bootstrap.servers is required")
        connector = {k: v for k, v in opts.items() if not k.startswith(_KAFKA)}
        for key in ("transforms", "predicates"):
            if connector.get(key):
                connector[key] = connector[key].lower()
        topics: tuple[str, ...] = ()
        pattern = None
        if reading:
            given = [k for k in ("topic", "topics", "subscribe", "pattern") if opts.get(k)]
            if len(given) != 1:
                raise ConfigError(
                    "Set exactly one of the options topic, topics (comma-separated) or pattern "
                    f"(a regular expression); got {given or 'none'}"
                )
            if given[0] == "pattern":
                pattern = opts["pattern"]
                try:
                    re.compile(pattern)
                except re.error as e:
                    raise ConfigError(f"Invalid pattern {pattern!r}: {e}") from None
            else:
                topics = tuple(t.strip() for t in opts[given[0]].split(",") if t.strip())
        max_per_trigger = None
        if opts.get("maxoffsetspertrigger"):
            max_per_trigger = _positive(opts["maxoffsetspertrigger"], "maxOffsetsPerTrigger")
        return cls(
            kafka=kafka,
            topics=topics,
            pattern=pattern,
            starting=parse_offset_spec(
                opts.get("startingoffsets"), opts.get("startingtimestamp"), "starting"
            ),
            ending=parse_offset_spec(
                opts.get("endingoffsets"), opts.get("endingtimestamp"), "ending"
            ),
            max_offsets_per_trigger=max_per_trigger,
            connector=connector,
            name=opts.get("name") or "spark-bridge",
            batch_rows=_positive(opts.get("batch.rows", "20000"), "batch.rows"),
            poll_timeout=float(opts.get("poll.timeout.ms", "60000")) / 1000.0,
        )


def _positive(value: str, key: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise ConfigError(f"Option {key} must be a positive integer, got {value!r}")
    return number
