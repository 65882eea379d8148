"""Debezium's PostgreSQL connector in Apache Kafka Connect, from Maven jars, for side-by-side tests.

:func:`connect_classpath` resolves Kafka Connect 4.3.1 (``data/debezium/connect/pom.xml``; Debezium
3.6.1, built against Kafka 4.3, fails on Connect 4.4 where Kafka moved ``common.utils`` classes;
the 4.3 worker runs against the 4.4 broker) and
:func:`debezium_plugin_path` Debezium's PostgreSQL connector as a plugin folder
(``data/debezium/postgres/pom.xml``), each into a user cache the way
:mod:`connectrt.testing.kafka_jars` caches the broker (``$XDG_CACHE_HOME/connectrt/...``,
resolved with Maven only when missing or stale, under a lock). :func:`normalize_event` and
:func:`event_differences` compare two connectors' JsonConverter events. :class:`KafkaConnect`
runs one distributed Kafka Connect worker JVM (``ConnectDistributed``) on a free port against a
broker, with its own internal topics, and stops it by its pid.

Lifecycle: ``start()`` once (blocks until the REST API answers), ``stop()`` once (idempotent),
or a context manager. Not thread-safe.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.java_runtime import LEAN_TEST_JVM_OPTIONS, require_java
from connectrt.testing.kafka_jars import kafka_cache_root, maven_classpath

__all__ = [
    "CONNECT_VERSION",
    "DEBEZIUM_VERSION",
    "KafkaConnect",
    "connect_classpath",
    "debezium_plugin_path",
    "event_differences",
    "normalize_event",
]

CONNECT_VERSION = "4.3.1"  # Debezium 3.6.1 does not run on 4.4 (see the pom)
DEBEZIUM_VERSION = "3.6.1.Final"

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = org.apache.kafka
logger.kafka.level = warn
logger.connect.name = org.apache.kafka.connect.runtime
logger.connect.level = info
"""


def _pom(name: str) -> bytes:
    path = f"data/debezium/{name}/pom.xml"
    return resources.files("connectrt.testing").joinpath(path).read_bytes()


def _cache(name: str) -> Path:
    return kafka_cache_root().parent / name


def connect_classpath(*, mvn: str | None = None) -> Path:
    """The folder of Kafka Connect's jars (``java -cp 'FOLDER/*'``), resolved if needed."""
    return maven_classpath(
        _pom("connect"), _cache("kafka-connect") / CONNECT_VERSION, "connect-runtime-*.jar", mvn=mvn
    )


def debezium_plugin_path(*, mvn: str | None = None) -> Path:
    """A folder for Kafka Connect's ``plugin.path`` whose one plugin (its ``libs`` folder) is
    Debezium's PostgreSQL connector with its dependencies, resolved if needed."""
    libs = maven_classpath(
        _pom("postgres"),
        _cache("debezium-postgres") / DEBEZIUM_VERSION,
        "debezium-connector-postgres-*.jar",
        mvn=mvn,
    )
    return libs.parent


class KafkaConnect:
    """One Kafka Connect distributed worker JVM with Debezium's PostgreSQL plugin."""

    def __init__(self, bootstrap: str, *, startup_timeout: float = 180.0) -> None:
        self.bootstrap = bootstrap
        self.startup_timeout = startup_timeout
        self.url = ""
        self.folder: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "connect.log"

    def start(self) -> KafkaConnect:
        java = require_java()
        libs = connect_classpath()
        plugins = debezium_plugin_path()
        self.folder = Path(tempfile.mkdtemp(prefix="connectrt-connect-"))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        run = uuid.uuid4().hex[:8]
        json = "org.apache.kafka.connect.json.JsonConverter"
        props = {
            "bootstrap.servers": self.bootstrap,
            "group.id": f"debezium-{run}",
            "config.storage.topic": f"dbz-configs-{run}",
            "offset.storage.topic": f"dbz-offsets-{run}",
            "status.storage.topic": f"dbz-status-{run}",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            "key.converter": json,
            "value.converter": json,
            "offset.flush.interval.ms": "1000",
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(port),
            "plugin.path": str(plugins),
        }
        (self.folder / "worker.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in props.items())
        )
        (self.folder / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_path))
        out = (self.folder / "jvm.out").open("wb")
        try:
            self._proc = subprocess.Popen(
                [
                    java,
                    "-Xmx512m",
                    *LEAN_TEST_JVM_OPTIONS,
                    f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
                    "-cp",
                    f"{libs}/*",
                    "org.apache.kafka.connect.cli.ConnectDistributed",
                    str(self.folder / "worker.properties"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        finally:
            out.close()
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = self.tail()
                self.stop()
                raise ConnectError(f"Kafka Connect did not start:\n{tail}")
            time.sleep(0.5)
        return self

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/connectors", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def tail(self, chars: int = 4000) -> str:
        """The end of the worker's log and JVM output (for failure messages)."""
        text = ""
        if self.folder is not None:
            for name in ("jvm.out", "connect.log"):
                try:
                    text += (self.folder / name).read_text(errors="replace")[-chars:]
                except OSError:
                    pass
        return text

    def put_connector(self, name: str, config: dict[str, str]) -> None:
        response = httpx.put(f"{self.url}/connectors/{name}/config", json=config, timeout=60)
        if response.status_code not in (200, 201):
            raise ConnectError(f"PUT /connectors/{name}/config: {response.text}")

    def status(self, name: str) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/connectors/{name}/status", timeout=30)
        return dict(response.json()) if response.status_code == 200 else {}

    def stop(self) -> None:
        """SIGTERM the JVM, SIGKILL it after 30 s; remove its folder. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
        if self.folder is not None and not os.environ.get("CONNECTRT_KEEP_CONNECT"):
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> KafkaConnect:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


_VARYING_ENVELOPE = {"ts_ms", "ts_us", "ts_ns"}
_VARYING_SOURCE = {"version", "name"}
# A snapshot's time, transaction and position are each connector's own (its slot's).
_VARYING_SNAPSHOT_SOURCE = {"ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"}


def normalize_event(event: Any, prefix: str) -> Any:
    """The event with ``prefix`` replaced by ``P`` in names and the varying fields removed."""
    if event is None:
        return None
    text = json.dumps(event).replace(f'"{prefix}.', '"P.').replace(f'"{prefix}"', '"P"')
    out = json.loads(text)
    payload = out.get("payload")
    if isinstance(payload, dict) and "source" in payload:
        for name in _VARYING_ENVELOPE:
            payload.pop(name, None)
        source = payload["source"]
        for name in _VARYING_SOURCE:
            source.pop(name, None)
        if payload.get("op") == "r":
            for name in _VARYING_SNAPSHOT_SOURCE:
                source.pop(name, None)
    return out


def event_differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Paths where ``a`` (Debezium's event) and ``b`` (connectrt's) differ, with both values
    (schema fields are matched by name)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out.extend(event_differences(a[k], b[k], f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        if all(isinstance(x, dict) and "field" in x for x in a + b):  # schema fields by name
            return event_differences({x["field"]: x for x in a}, {x["field"]: x for x in b}, path)
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(event_differences(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [(path, a, b)]
