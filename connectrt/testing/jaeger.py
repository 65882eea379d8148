"""Jaeger v2 (an OpenTelemetry Collector distribution with a trace store and a query API), built
from the Go module proxy with the machine's Go toolchain into a user cache, and run on loopback.

The tracing tests export spans to it over OTLP and read them back through Jaeger's own query
API (``/api/traces/{id}``). :func:`jaeger_binary` builds ``cmd/jaeger`` of the pinned module
version once, into ``$XDG_CACHE_HOME/connectrt/jaeger/<version>/jaeger`` (``~/.cache`` when
unset): a wrapper module requires Jaeger's and repeats its one ``replace`` directive (``go
install pkg@version`` refuses modules with replace directives). The first build downloads a few
hundred modules and compiles about 2,000 packages: over an hour on a busy 2-core machine (Go's
own build cache keeps what was compiled, so an interrupted build resumes); later runs use the
cached binary. A lock file
serialises builds of the same version across processes (xdist workers).

:class:`JaegerServer` runs the binary with an in-memory store on free loopback ports (the
lifecycle of :class:`~connectrt.testing.otel_collector.CollectorProcess`; failures are
:class:`JaegerError`); start and stop it from one thread (a test fixture).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.build_cache import go_build, user_cache
from connectrt.testing.otel_collector import CollectorProcess

__all__ = [
    "JAEGER_MODULE_VERSION",
    "JaegerError",
    "JaegerServer",
    "jaeger_binary",
    "jaeger_cache_root",
]

JAEGER_MODULE_VERSION = "v1.76.0"
"""The Go module version of github.com/jaegertracing/jaeger (its v2 binary, release 2.13)."""

_GO_MOD = """module connectrt.test/jaegerbuild

go 1.24.6

require github.com/jaegertracing/jaeger {version}

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
"""

_CONFIG = """service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:{query_port}
    grpc:
      endpoint: 127.0.0.1:{query_grpc_port}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc_port}
      http:
        endpoint: 127.0.0.1:{http_port}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
"""


def jaeger_cache_root() -> Path:
    """``$XDG_CACHE_HOME/connectrt/jaeger`` (``~/.cache/connectrt/jaeger`` when unset)."""
    return user_cache("jaeger")


def jaeger_binary(timeout: float = 7200.0, cache_root: Path | None = None) -> Path:
    """The cached Jaeger binary, built first when missing (see the module docstring).

    Raises RuntimeError naming the cause when Go is missing or the build fails; blocks while
    another process builds the same version.
    """
    return go_build(
        (cache_root or jaeger_cache_root()) / JAEGER_MODULE_VERSION,
        "jaeger",
        sources={"go.mod": _GO_MOD.format(version=JAEGER_MODULE_VERSION)},
        get=[f"github.com/jaegertracing/jaeger/cmd/jaeger@{JAEGER_MODULE_VERSION}"],
        package="github.com/jaegertracing/jaeger/cmd/jaeger",
        label=f"Jaeger {JAEGER_MODULE_VERSION}",
        note="once; up to an hour or more on a busy machine",
        timeout=timeout,
    )


class JaegerError(ConnectError):
    """Jaeger could not be started or reached."""


class JaegerServer(CollectorProcess):
    """One Jaeger process on loopback with an in-memory store (see the module docstring).

    ``otlp_http`` / ``otlp_grpc`` are the OTLP receiver's endpoints, ``query_url`` the base URL
    of the query API. Not thread-safe: start and stop from one thread.
    """

    error = JaegerError
    label = "Jaeger"
    log_name = "jaeger.log"
    config_name = "jaeger.yaml"
    startup_timeout_s = 120.0

    def __init__(self, binary: Path, workdir: Path, **timeouts: float | None) -> None:
        super().__init__(binary, workdir, **timeouts)
        self.query_port = free_port()
        self.query_grpc_port = free_port()

    @property
    def query_url(self) -> str:
        return f"http://127.0.0.1:{self.query_port}"

    def _config(self) -> str:
        return _CONFIG.format(
            query_port=self.query_port,
            query_grpc_port=self.query_grpc_port,
            grpc_port=self._grpc_port,
            http_port=self._port,
        )

    def _not_ready(self) -> str | None:
        """None once the OTLP receiver and the query API answer."""
        not_ready = super()._not_ready()
        if not_ready is not None:
            return not_ready
        try:
            self.get("/api/services")
        except (OSError, urllib.error.URLError) as exc:
            return repr(exc)
        return None

    def cpu_seconds(self) -> float:
        """The CPU time (user and system) the running Jaeger process used so far (Linux
        ``/proc``; 0.0 where it cannot be read): benchmarks count the backend's share."""
        if self._proc is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def renice(self, nice: int) -> None:
        """Set the running Jaeger process's nice value, on each of its threads (Linux keeps one
        per thread, and threads started later take their starter's): benchmarks run the backend
        behind the pipeline they measure. OSError when it cannot be set."""
        if self._proc is None:
            raise RuntimeError("Jaeger is not running")
        for task in Path(f"/proc/{self._proc.pid}/task").iterdir():
            os.setpriority(os.PRIO_PROCESS, int(task.name), nice)

    def get(self, path: str) -> Any:
        """GET a query API path; the decoded JSON answer."""
        with urllib.request.urlopen(self.query_url + path, timeout=10) as resp:
            return json.loads(resp.read())

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The trace ``trace_id`` (32 hex digits) as the query API returns it, or None."""
        try:
            data = self.get(f"/api/traces/{trace_id}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        traces = data.get("data") or []
        return traces[0] if traces else None
