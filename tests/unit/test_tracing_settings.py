"""OpenTelemetry tracing settings (``tracing.*`` and the ``OTEL_*`` variables), and zero cost when
off: the runtime does not import OpenTelemetry unless tracing is on. Needs no OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.config.tracing import TracingSettings, tracing_settings
from connectrt.runtime.config.worker import WorkerConfig


def _values(props: Mapping[str, str]) -> Mapping[str, Any]:
    return WorkerConfig.from_props(dict(props)).values


# -- settings -----------------------------------------------------------------------------------


def test_tracing_is_off_unless_asked() -> None:
    assert tracing_settings(_values({}), {}) is None
    assert tracing_settings(_values({}), {"OTEL_TRACES_EXPORTER": "none"}) is None
    assert tracing_settings(_values({"tracing.enabled": "false"}), {}) is None


def test_otel_variables_turn_tracing_on_and_configure_it() -> None:
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317/",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.25",
        "OTEL_SERVICE_NAME": "pipeline-a",
    }
    assert tracing_settings(_values({}), env) == TracingSettings(
        exporter="otlp",
        endpoint="http://collector:4317",
        protocol="grpc",
        ratio=0.25,
        service_name="pipeline-a",
        parent_based=True,
    )
    always = tracing_settings(
        _values({}), {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_on"}
    )
    assert always is not None and always.ratio == 1.0 and not always.parent_based


def test_worker_settings_win_over_the_environment() -> None:
    props = {
        "tracing.enabled": "true",
        "tracing.otlp.endpoint": "http://127.0.0.1:14318/v1/traces",
        "tracing.sampler.ratio": "0.5",
        "tracing.service.name": "mine",
    }
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://elsewhere:4318", "OTEL_SERVICE_NAME": "theirs"}
    settings = tracing_settings(_values(props), env)
    assert settings == TracingSettings(
        "otlp", "http://127.0.0.1:14318", "http/protobuf", 0.5, "mine"
    )
    default = tracing_settings(_values({"tracing.enabled": "true"}), {})
    assert default is not None
    assert (default.endpoint, default.ratio, default.service_name) == (
        "http://localhost:4318",
        0.01,
        "connectrt",
    )


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_TRACES_SAMPLER": "jaeger_remote"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
        {"OTEL_TRACES_EXPORTER": "zipkin"},
    ],
)
def test_unsupported_otel_values_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        tracing_settings(_values({"tracing.enabled": "true"}), env)


def test_ratio_out_of_range_is_refused() -> None:
    with pytest.raises(ConfigError):
        _values({"tracing.sampler.ratio": "1.5"})


def test_the_runtime_does_not_import_opentelemetry_when_tracing_is_off() -> None:
    """The worker, the runner factory and both runners import no OpenTelemetry module; with the
    REST app too, no SDK, exporter or tracer module of connectrt (FastAPI's own telemetry module
    imports the OpenTelemetry API when it is installed: not ours to avoid)."""
    code = (
        "import sys\n"
        "import connectrt.runtime.worker.worker, connectrt.runtime.executors.runner_factory\n"
        "import connectrt.runtime.sink.runner, connectrt.runtime.source.runner\n"
        "from connectrt.runtime.config.worker import WorkerConfig\n"
        "from connectrt.runtime.config.tracing import tracing_settings\n"
        "assert tracing_settings(WorkerConfig.from_props({}).values, {}) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
        "import connectrt.rest.app\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
        "'opentelemetry.exporter')) or m.endswith('.tracing') and m.startswith('connectrt')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    runtime, with_rest = out.stdout.split("\n")[:2]
    assert runtime == "[]"
    assert with_rest == "['connectrt.runtime.config.tracing']"
