"""OpenTelemetry tracing settings of the worker: the ``tracing.*`` keys, the ``OTEL_*`` variables.

Tracing is off unless ``tracing.enabled=true`` or the environment says
``OTEL_TRACES_EXPORTER=otlp`` (or ``console``). Each ``tracing.*`` key left unset takes the
standard variable's value, then the default: ``tracing.exporter`` (``OTEL_TRACES_EXPORTER``),
``tracing.otlp.endpoint`` (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, then
``OTEL_EXPORTER_OTLP_ENDPOINT``), ``tracing.otlp.protocol`` (``OTEL_EXPORTER_OTLP_PROTOCOL``),
``tracing.sampler.ratio`` (``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``) and
``tracing.service.name`` (``OTEL_SERVICE_NAME``).

:func:`tracing_settings` resolves them into a frozen :class:`TracingSettings`, or None when
tracing is off. Nothing here imports OpenTelemetry: the runtime imports it only when this says
tracing is on. Read-only after import; safe to share across threads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range, ValidString
from connectrt.errors import ConfigError

__all__ = ["TRACING_CONFIG_DEF", "TracingSettings", "tracing_settings"]

_GROUP = "Tracing"

HTTP_PROTOCOL = "http/protobuf"
GRPC_PROTOCOL = "grpc"
_DEFAULT_ENDPOINTS = {
    HTTP_PROTOCOL: "http://localhost:4318",
    GRPC_PROTOCOL: "http://localhost:4317",
}
_DEFAULT_RATIO = 0.01

TRACING_CONFIG_DEF = (
    ConfigDef()
    .define(
        "tracing.enabled",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "connectrt: OpenTelemetry tracing of records through source and sink tasks (needs the "
        "otel extra: pip install 'connectrt[otel]'). Also on when OTEL_TRACES_EXPORTER is otlp "
        "or console. Off: OpenTelemetry is not even imported.",
        group=_GROUP,
    )
    .define(
        "tracing.exporter",
        ConfigType.STRING,
        None,
        ValidString.of("otlp", "console"),
        Importance.LOW,
        "connectrt: where spans go: 'otlp' (default) or 'console' (standard output). Unset: "
        "OTEL_TRACES_EXPORTER, else otlp.",
        group=_GROUP,
    )
    .define(
        "tracing.otlp.endpoint",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "connectrt: the OTLP receiver's base URL (http://host:4318 over HTTP, http://host:4317 "
        "over gRPC). Unset: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then "
        "OTEL_EXPORTER_OTLP_ENDPOINT, else localhost.",
        group=_GROUP,
    )
    .define(
        "tracing.otlp.protocol",
        ConfigType.STRING,
        None,
        ValidString.of(HTTP_PROTOCOL, GRPC_PROTOCOL),
        Importance.LOW,
        "connectrt: OTLP over 'http/protobuf' (default) or 'grpc'. Unset: "
        "OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.",
        group=_GROUP,
    )
    .define(
        "tracing.sampler.ratio",
        ConfigType.DOUBLE,
        None,
        Range.between(0.0, 1.0),
        Importance.LOW,
        "connectrt: the share of records traced, 0.0 to 1.0, picked at random per batch; a "
        "record whose traceparent says 'not sampled' is not traced. Unset: "
        "OTEL_TRACES_SAMPLER(_ARG) (always_on: 1.0, always_off: 0.0, traceidratio and "
        "parentbased_traceidratio: the argument), else 0.01.",
        group=_GROUP,
    )
    .define(
        "tracing.service.name",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "connectrt: the service.name resource attribute of the spans. Unset: "
        "OTEL_SERVICE_NAME, else connectrt.",
        group=_GROUP,
    )
)


@dataclass(frozen=True)
class TracingSettings:
    """Tracing, resolved (see the module docstring). ``exporter`` is ``otlp`` or ``console``;
    ``endpoint`` the OTLP base URL (no ``/v1/traces``); ``protocol`` ``http/protobuf`` or
    ``grpc``; ``ratio`` the share of records traced; ``parent_based``: a record whose
    ``traceparent`` says "not sampled" is not traced."""

    exporter: str
    endpoint: str
    protocol: str
    ratio: float
    service_name: str
    parent_based: bool = True


def _ratio(values: Mapping[str, Any], env: Mapping[str, str]) -> tuple[float, bool]:
    """(ratio, parent_based) from ``tracing.sampler.ratio`` or ``OTEL_TRACES_SAMPLER(_ARG)``."""
    sampler = env.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    parent_based = not sampler or sampler.startswith("parentbased_")
    if values.get("tracing.sampler.ratio") is not None:
        return float(values["tracing.sampler.ratio"]), parent_based
    if not sampler:
        return _DEFAULT_RATIO, parent_based
    if sampler.endswith("always_on"):
        return 1.0, parent_based
    if sampler.endswith("always_off"):
        return 0.0, parent_based
    if sampler.endswith("traceidratio"):
        arg = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
        try:
            ratio = float(arg) if arg else 1.0
        except ValueError:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={arg!r} is not a number") from None
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={arg!r} is not between 0 and 1")
        return ratio, parent_based
    raise ConfigError(
        f"OTEL_TRACES_SAMPLER={sampler!r} is not supported by connectrt "
        "(always_on, always_off, traceidratio, parentbased_*)"
    )


def tracing_settings(
    values: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> TracingSettings | None:
    """The worker's tracing settings from its parsed config ``values`` and the environment
    (``os.environ`` unless given); None when tracing is off."""
    env = os.environ if env is None else env
    env_exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    exporter = values.get("tracing.exporter") or env_exporter or "otlp"
    enabled = bool(values.get("tracing.enabled")) or env_exporter in ("otlp", "console")
    if not enabled or exporter == "none":
        return None
    if exporter not in ("otlp", "console"):
        raise ConfigError(f"OTEL_TRACES_EXPORTER={exporter!r} is not supported (otlp, console)")
    protocol = (
        values.get("tracing.otlp.protocol")
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "").strip()
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
        or HTTP_PROTOCOL
    )
    if protocol not in _DEFAULT_ENDPOINTS:
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported (http/protobuf, grpc)")
    endpoint = (
        values.get("tracing.otlp.endpoint")
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        or _DEFAULT_ENDPOINTS[protocol]
    )
    ratio, parent_based = _ratio(values, env)
    return TracingSettings(
        exporter=exporter,
        endpoint=endpoint.rstrip("/").removesuffix("/v1/traces"),
        protocol=protocol,
        ratio=ratio,
        service_name=(
            values.get("tracing.service.name")
            or env.get("OTEL_SERVICE_NAME", "").strip()
            or "connectrt"
        ),
        parent_based=parent_based,
    )
