"""A small OpenTelemetry Collector that takes OTLP and sends Zipkin JSON, built from the Go
module proxy into a user cache, and run on loopback in front of a Zipkin server.

Zipkin (:mod:`connectrt.testing.zipkin`) does not take OTLP, and connectrt exports only OTLP; the
collector's core OTLP receiver and the contrib ``zipkin`` exporter translate between them, as
an operator's collector would. :func:`collector_binary` builds a ``main`` package of a dozen
lines (the factories handed to ``otelcol.NewCommand``) against the pinned module versions
once, into ``$XDG_CACHE_HOME/connectrt/otelcol-zipkin/<version>-<hash>/`` (``~/.cache`` when
unset; the hash is of the Go sources, so a changed ``main`` builds anew); nothing is built at
import time. The first build downloads about 200 modules (a minute) and compiles about 730
packages (about ten minutes on a busy 2-core machine, 2026-11-29 at load 6 to 15; Go's build
cache keeps what was compiled, so an interrupted build resumes); later runs use the cached
binary. A lock file serialises builds of one version across processes.

:class:`ZipkinCollector` runs the binary with OTLP over HTTP and gRPC on free loopback ports,
exporting to one Zipkin ``/api/v2/spans`` endpoint. Its lifecycle (config file, child process,
readiness, stop) is :class:`CollectorProcess`'s, which Jaeger v2, another collector
distribution (:class:`~connectrt.testing.jaeger.JaegerServer`), shares. Threading: start and
stop from one thread.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path
from typing import ClassVar, Self

import httpx

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.service import ChildService, stop_child
from connectrt.testing.build_cache import go_build, user_cache
from connectrt.testing.child_lifeline import die_with_this_thread
from connectrt.testing.jvm_service import tail

__all__ = [
    "COLLECTOR_VERSION",
    "CollectorError",
    "CollectorProcess",
    "ZipkinCollector",
    "collector_binary",
    "collector_cache_root",
]

COLLECTOR_VERSION = "v0.148.0"
"""The release of the collector modules (otelcol, otlpreceiver and the contrib zipkinexporter;
v0.148.0 is the newest zipkinexporter the module proxy served here whole)."""

_GO_MOD = """module connectrt.test/otelcolzipkin

go 1.24.6
"""

_MAIN_GO = """package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/zipkinexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func factories() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](zipkinexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{
		Receivers: receivers, Exporters: exporters, Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command: "otelcol-zipkin", Description: "OTLP in, Zipkin out", Version: "{version}",
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
"""

_MODULES = (
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/zipkinexporter",
    "go.opentelemetry.io/collector/otelcol",
    "go.opentelemetry.io/collector/receiver/otlpreceiver",
)

_CONFIG = """receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc_port}
      http:
        endpoint: 127.0.0.1:{http_port}
exporters:
  zipkin:
    endpoint: {zipkin}
    format: json
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [zipkin]
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
"""


class CollectorError(ConnectError):
    """The collector could not be built, started or reached."""


def collector_cache_root() -> Path:
    """``$XDG_CACHE_HOME/connectrt/otelcol-zipkin`` (``~/.cache/...`` when unset)."""
    return user_cache("otelcol-zipkin")


def collector_binary(timeout: float = 3600.0, cache_root: Path | None = None) -> Path:
    """The cached collector binary, built first when missing (see the module docstring).

    Raises CollectorError naming the cause when Go is missing or the build fails; blocks while
    another process builds the same version.
    """
    sources = "\n".join([_GO_MOD, _MAIN_GO, *_MODULES]).encode()
    folder = (cache_root or collector_cache_root()) / (
        f"{COLLECTOR_VERSION}-{hashlib.sha256(sources).hexdigest()[:8]}"
    )
    return go_build(
        folder,
        "otelcol-zipkin",
        sources={"go.mod": _GO_MOD, "main.go": _MAIN_GO.replace("{version}", COLLECTOR_VERSION)},
        get=[f"{module}@{COLLECTOR_VERSION}" for module in _MODULES],
        package=".",
        label=f"an OpenTelemetry Collector {COLLECTOR_VERSION} (OTLP in, Zipkin out)",
        note="once; minutes on a busy machine",
        timeout=timeout,
        error=CollectorError,
    )


class CollectorProcess(ChildService):
    """One OpenTelemetry Collector distribution (a Go binary: this module's collector, Jaeger
    v2) on loopback, started with a YAML config in ``workdir``, its output appended to
    ``workdir/<log_name>``: OTLP in over HTTP (:attr:`otlp_http`, on :attr:`port`) and gRPC
    (:attr:`otlp_grpc`), on free ports picked at each start.

    Subclasses give ``label`` (how messages name the service), ``log_name``, ``config_name``,
    the config text (:meth:`_config`, once the ports are picked) and, when being ready takes
    more than an answering OTLP receiver, :meth:`_not_ready`. ``startup_timeout`` and
    ``stop_timeout`` (seconds) default to the class's :attr:`startup_timeout_s` and
    :attr:`stop_timeout_s`; subclasses pass them on as ``**timeouts``. Start and stop from one
    thread.
    """

    label: ClassVar[str]
    log_name: ClassVar[str]
    config_name: ClassVar[str]
    startup_timeout_s: ClassVar[float] = 60.0
    """How long a start waits for the service to answer, unless the constructor says."""
    stop_timeout_s: ClassVar[float] = 15.0

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        *,
        startup_timeout: float | None = None,
        stop_timeout: float | None = None,
    ) -> None:
        super().__init__(
            startup_timeout=self.startup_timeout_s if startup_timeout is None else startup_timeout,
            stop_timeout=self.stop_timeout_s if stop_timeout is None else stop_timeout,
        )
        self._binary = binary
        self._workdir = workdir
        self._grpc_port: int | None = None
        self.log_path = workdir / self.log_name

    @property
    def otlp_http(self) -> str:
        """The OTLP/HTTP receiver's base URL (a worker's ``tracing.otlp.endpoint``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def otlp_grpc(self) -> str:
        """The OTLP/gRPC receiver's URL."""
        return f"http://127.0.0.1:{self._started(self._grpc_port)}"

    def _config(self) -> str:
        """The YAML config, with the receivers on ``_port`` (HTTP) and ``_grpc_port``."""
        raise NotImplementedError

    def start(self) -> Self:
        """Start the process and wait until it is ready (:meth:`_not_ready` says None)."""
        if self._proc is not None:
            raise self.error(f"{type(self).__name__} already started")
        self._port = free_port()
        self._grpc_port = free_port()
        config = self._workdir / self.config_name
        config.write_text(self._config())
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                [str(self._binary), "--config", f"file:{config}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._workdir,
                start_new_session=True,
                preexec_fn=die_with_this_thread(),  # a killed test process takes it along
            )
        return self._started_or_stopped(self._wait_until_ready)

    def _not_ready(self) -> str | None:
        """None once the OTLP/HTTP receiver accepts a request (an empty OTLP/JSON one: 200
        once it serves), else what the last try said."""
        try:
            response = httpx.post(
                f"{self.otlp_http}/v1/traces",
                content=b"{}",
                headers={"Content-Type": "application/json"},
                timeout=5,
            )
        except httpx.HTTPError as exc:
            return repr(exc)
        if response.status_code == 200:
            return None
        return f"{response.status_code} {response.text[:200]}"

    def _wait_until_ready(self) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self._startup_timeout
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise self.error(
                    f"{self.label} exited with status {proc.returncode}: {tail(self.log_path, 40)}"
                )
            not_ready = self._not_ready()
            if not_ready is None:
                return
            last = not_ready
            time.sleep(0.2)
        raise self.error(
            f"{self.label} did not answer within {self._startup_timeout:.0f} s "
            f"(last: {last}): {tail(self.log_path, 40)}"
        )

    def stop(self) -> None:
        """SIGTERM the process (it flushes what it holds), SIGKILL after ``stop_timeout``.
        Idempotent."""
        proc = self._proc
        if proc is not None:
            stop_child(proc, self._stop_timeout, kill_wait=15)


class ZipkinCollector(CollectorProcess):
    """One collector process on loopback: OTLP in (:attr:`otlp_http`, :attr:`otlp_grpc`),
    Zipkin JSON v2 out to ``zipkin_spans`` (a Zipkin's ``/api/v2/spans``).

    ``workdir`` holds its config and its log (``otelcol.log``). Start and stop from one thread.
    """

    error = CollectorError
    label = "the collector"
    log_name = "otelcol.log"
    config_name = "otelcol.yaml"

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        zipkin_spans: str,
        **timeouts: float | None,
    ) -> None:
        super().__init__(binary, workdir, **timeouts)
        self._zipkin = zipkin_spans

    def _config(self) -> str:
        return _CONFIG.format(grpc_port=self._grpc_port, http_port=self._port, zipkin=self._zipkin)
