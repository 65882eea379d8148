"""A Zipkin server (its API and its Lens UI) on loopback, from the jar Maven Central serves.

Zipkin shows traces in a browser, which the Jaeger the tests build from the Go module proxy
cannot (its UI is not part of the Go module). Zipkin does not take OTLP: connectrt's spans reach
it through an OpenTelemetry Collector that translates them
(:mod:`connectrt.testing.otel_collector`), so the path is worker --OTLP--> collector --Zipkin
JSON--> Zipkin.

:func:`zipkin_jar` fetches ``io.zipkin:zipkin-server:<version>:exec`` (one self-contained jar,
about 135 MB) with Maven once, into ``$XDG_CACHE_HOME/connectrt/zipkin/<version>/``
(``~/.cache`` when unset); nothing is fetched at import time. An exclusive ``flock`` serialises
fetches of one version across processes; the jar is copied into a temporary name and renamed
into place, so a killed fetch leaves no half jar under the final name.

:class:`ZipkinServer` runs it with the in-memory store on a free loopback port: the span API
(``POST /api/v2/spans``), the query API (``GET /api/v2/trace/{id}``) and the UI
(``/zipkin/``) share that port. Threading: start and stop from one thread (a fixture or a
script); :meth:`ZipkinServer.trace` from any.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Unpack

import httpx

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.build_cache import user_cache
from connectrt.testing.java_runtime import run_tool
from connectrt.testing.jvm_service import JvmOptions, JvmService, tail

__all__ = ["ZIPKIN_VERSION", "ZipkinError", "ZipkinServer", "zipkin_cache_root", "zipkin_jar"]

ZIPKIN_VERSION = "3.6.1"
"""The version of ``io.zipkin:zipkin-server`` (its ``exec`` jar: server, in-memory store, UI)."""


class ZipkinError(ConnectError):
    """Zipkin's jar could not be fetched, or the server did not start or answer."""


def zipkin_cache_root() -> Path:
    """``$XDG_CACHE_HOME/connectrt/zipkin`` (``~/.cache/connectrt/zipkin`` when unset)."""
    return user_cache("zipkin")


def zipkin_jar(
    *, mvn: str | None = None, cache_root: Path | None = None, timeout: float = 1800.0
) -> Path:
    """The cached ``zipkin-server-<version>-exec.jar``, fetched by Maven first when missing.

    Blocks while another process fetches the same version. Raises :class:`ZipkinError` with
    Maven's output when Maven is missing or cannot fetch it.
    """
    folder = (cache_root or zipkin_cache_root()) / ZIPKIN_VERSION
    jar = folder / f"zipkin-server-{ZIPKIN_VERSION}-exec.jar"
    if jar.is_file():
        return jar
    binary = mvn or shutil.which("mvn")
    if binary is None:
        raise ZipkinError(
            "Zipkin's jar is not cached and Maven ('mvn') is not on PATH to fetch it "
            "(Debian/Ubuntu: apt-get install maven)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if jar.is_file():  # another process fetched it while we waited
            return jar
        staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=folder))
        try:
            cmd = [
                binary,
                "-q",
                "-B",
                "dependency:copy",
                f"-Dartifact=io.zipkin:zipkin-server:{ZIPKIN_VERSION}:jar:exec",
                f"-DoutputDirectory={staging}",
            ]
            try:
                result = run_tool(cmd, timeout, cwd=staging)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ZipkinError(f"Maven could not fetch Zipkin's jar: {exc}") from exc
            fetched = staging / jar.name
            if result.returncode != 0 or not fetched.is_file():
                output = (result.stdout + result.stderr).strip()[-4000:]
                raise ZipkinError(
                    f"'{' '.join(cmd)}' exited with status {result.returncode} without the jar "
                    f"(is Maven Central reachable?). Maven's output:\n{output or '(none)'}"
                )
            os.replace(fetched, jar)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return jar


class ZipkinServer(JvmService):
    """One Zipkin server on ``127.0.0.1`` with the in-memory store (see the module docstring).

    ``jar`` is :func:`zipkin_jar`'s (fetched on :meth:`start` when not given). Of
    :class:`~connectrt.testing.jvm_service.JvmOptions`: ``properties`` adds Zipkin settings
    (passed as ``-Dkey=value``), ``startup_timeout`` bounds one start.
    """

    error = ZipkinError
    log_name = "jvm.out"  # Zipkin logs to the console; the base class sends that to jvm.out

    def __init__(
        self, *, jar: Path | None = None, heap: str = "256m", **options: Unpack[JvmOptions]
    ) -> None:
        super().__init__(heap=heap, **options)
        self._jar = jar

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the API (``/api/v2/...``), the UI (``/zipkin/``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def spans_endpoint(self) -> str:
        """Where span collectors post Zipkin JSON v2 (``/api/v2/spans``)."""
        return f"{self.url}/api/v2/spans"

    def output_tail(self, lines: int = 60) -> str:
        """The last lines of Zipkin's console output (its only log)."""
        return tail(self._data_dir / self.log_name, lines) if self._data_dir is not None else ""

    def trace_url(self, trace_id: str) -> str:
        """The UI's page of one trace."""
        return f"{self.url}/zipkin/traces/{trace_id}"

    def start(self) -> ZipkinServer:
        """Fetch the jar if needed, start the JVM and wait until ``/health`` says UP."""
        java = self._find_java()
        jar = self._jar or zipkin_jar(mvn=self._mvn)
        self._make_data_dir("connectrt-zipkin-")
        self._port = self._requested_port or free_port()
        settings = {
            "STORAGE_TYPE": "mem",
            "QUERY_PORT": str(self._port),
            # Armeria listens on every interface unless told; the tests need loopback only.
            "armeria.ports[0].ip": "127.0.0.1",
            "armeria.ports[0].port": str(self._port),
            "armeria.ports[0].protocols[0]": "http",
            "SELF_TRACING_ENABLED": "false",
            "logging.level.root": "WARN",
            **self._extra,
        }
        # Zipkin configures its own logging (Spring Boot's, to the console): not the test
        # JVMs' log4j2.properties, which this folder does not have.
        jvm = [o for o in self._jvm_options(self._heap) if not o.startswith("-Dlog4j2.")]
        try:
            self._spawn(
                java,
                [
                    *jvm,
                    *(f"-D{key}={value}" for key, value in settings.items()),
                    "-jar",
                    str(jar),
                ],
            )
            self._wait_until_ready()
        except BaseException:
            self._abandon_start()
            raise
        return self

    def _describe(self) -> str:
        return f"Zipkin on {self.url}"

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self._startup_timeout
        with httpx.Client(base_url=self.url, timeout=5) as http:

            def up(_: float) -> str | None:
                try:
                    response = http.get("/health")
                except httpx.HTTPError as exc:
                    return repr(exc)
                if response.status_code == 200 and '"UP"' in response.text:
                    return None
                return f"{response.status_code} {response.text[:200]}"

            self._await(up, deadline=deadline, waiting_for="answer GET /health with UP")

    def trace(self, trace_id: str) -> list[dict[str, Any]]:
        """The spans of trace ``trace_id`` (32 hex digits) as Zipkin's API returns them
        (``GET /api/v2/trace/{id}``, Zipkin JSON v2); ``[]`` while Zipkin has none."""
        response = httpx.get(f"{self.url}/api/v2/trace/{trace_id}", timeout=10)
        if response.status_code == 404:
            return []
        response.raise_for_status()
        return list(response.json())
