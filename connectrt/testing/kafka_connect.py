"""Apache Kafka Connect 4.4 (distributed mode) run from Maven jars, for differential tests.

:class:`KafkaConnect` starts ``org.apache.kafka.connect.cli.ConnectDistributed`` with plain
``java -cp`` on a broker the caller runs (the session's Apache Kafka), with a group id and
config/offset/status topics of its own (unique per instance) and its REST API on a free
loopback port. The jars come from Maven Central into the user cache
(``$XDG_CACHE_HOME/connectrt/kafka-connect/<version>/libs``) by the shipped
``data/kafka_connect/pom.xml``, as :mod:`connectrt.testing.kafka_jars` resolves the broker's.

The FileStream connectors: Maven Central serves ``connect-file`` only up to 4.3.1, which calls
``org.apache.kafka.common.utils.AppInfoParser``, a class Kafka 4.4 moved to
``...utils.internals``. The launcher keeps the 4.4 runtime (the version the broker runs and the
one connectrt's REST API is compared with; running Connect 4.3.1 instead would compare
connectrt with an older REST API than the one it targets) and compiles the two-method shim
``data/kafka_connect/AppInfoParser.java`` with ``javac`` into the instance's folder, on the
runtime's classpath (``org.apache.kafka.common`` classes are never loaded in plugin isolation);
``connect-file`` itself goes into a folder of ``plugin.path``, never on the classpath. So it
needs a JDK (javac), as the JSON converter's differential does.

Lifecycle: ``start()`` once; it returns when ``GET /`` answers and ``GET /health`` says the
worker completed its start-up (the herder joined its group), or kills the JVM and raises
:class:`KafkaConnectError` with the log's tail. ``stop()`` sends SIGTERM and SIGKILLs after
``stop_timeout``; idempotent; it removes the folder it created unless ``keep_data`` is set (set
it when tests failed: ``connect.log`` is kept for them). A test process killed before
``stop()`` takes the JVM along when it started it from its main thread
(:mod:`connectrt.testing.child_lifeline`). Not thread-safe for the lifecycle calls; the
read-only properties may be read from any thread.

Folder layout: ``worker.properties``, ``log4j2.properties``, ``connect.log`` (the runtime's
Log4j output), ``jvm.out`` (the JVM's stdout/stderr), ``shim/`` (the compiled class) and
``plugins/connect-file/``.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Unpack

import httpx

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.java_runtime import run_tool
from connectrt.testing.jvm_service import JvmOptions, JvmService
from connectrt.testing.kafka_jars import kafka_cache_root, maven_classpath

__all__ = ["KAFKA_CONNECT_VERSION", "KafkaConnect", "KafkaConnectError", "kafka_connect_classpath"]

#: The Kafka Connect runtime version the shipped pom pins.
KAFKA_CONNECT_VERSION = "4.4.0"

_DATA = resources.files("connectrt.testing").joinpath("data/kafka_connect")
_FILE_PLUGIN_GLOB = "connect-file-*.jar"


class KafkaConnectError(ConnectError):
    """Kafka Connect could not be resolved, compiled for, started or reached."""


def kafka_connect_classpath(*, mvn: str | None = None, timeout: float = 1800.0) -> Path:
    """The folder of the runtime's jars (and ``connect-file``'s), resolved by Maven if needed;
    raises :class:`~connectrt.testing.kafka_jars.MavenUnavailable` when Maven cannot."""
    folder = kafka_cache_root().parent / "kafka-connect" / KAFKA_CONNECT_VERSION
    pom = _DATA.joinpath("pom.xml").read_bytes()
    return maven_classpath(pom, folder, "connect-runtime-*.jar", mvn=mvn, timeout=timeout)


class KafkaConnect(JvmService):
    """One Kafka Connect 4.4 worker in distributed mode on ``127.0.0.1``, for tests.

    ``bootstrap_servers`` names the broker (Apache Kafka 4.x; Connect's admin calls fail on the
    embedded broker). Of :class:`~connectrt.testing.jvm_service.JvmOptions`: ``properties``
    adds or overrides worker settings; ``startup_timeout`` bounds one start after the jars are
    resolved. ``runtime_libs`` runs another Kafka Connect
    runtime instead (a folder of its jars, e.g. the 4.3.1 that Debezium needs,
    :mod:`connectrt.testing.debezium`): then no shim and no FileStream plugin are installed, and
    ``plugin_dirs`` lists the plugin folders to add to ``plugin.path``.
    """

    error = KafkaConnectError
    log_name = "connect.log"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        heap: str = "384m",
        runtime_libs: Path | None = None,
        plugin_dirs: Sequence[Path] = (),
        **options: Unpack[JvmOptions],
    ) -> None:
        super().__init__(heap=heap, **options)
        self.bootstrap_servers = bootstrap_servers
        self._runtime_libs = runtime_libs
        self._plugin_dirs = list(plugin_dirs)
        run = uuid.uuid4().hex[:8]
        #: The group id and internal topics, unique to this instance.
        self.group_id = f"kafka-connect-{run}"
        self.topics = {
            "config.storage.topic": f"kc-configs-{run}",
            "offset.storage.topic": f"kc-offsets-{run}",
            "status.storage.topic": f"kc-status-{run}",
        }

    # -- properties -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the REST API's base URL."""
        return f"http://127.0.0.1:{self.port}"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> KafkaConnect:
        """Resolve the jars, compile the shim, start the JVM and wait until it is ready."""
        java = self._find_java()
        libs = self._runtime_libs or kafka_connect_classpath(mvn=self._mvn)
        self._make_data_dir("connectrt-kafka-connect-")
        self._port = free_port()
        try:
            if self._runtime_libs is None:
                shim = self._compile_shim(java, libs)
                self._install_file_plugin(libs)
                jars = sorted(p for p in libs.glob("*.jar") if not p.match(_FILE_PLUGIN_GLOB))
                classpath = ":".join([*map(str, jars), str(shim)])
            else:
                classpath = f"{libs}/*"
            self._write_configs()
            self._launch(java, classpath)
        except BaseException:
            self._abandon_start()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if any(part is not None for part in exc):
            self.keep_data = True  # leaving on an exception: keep connect.log for the failure
        self.stop()

    # -- REST helpers -----------------------------------------------------------------------

    def put_connector(self, name: str, config: Mapping[str, str]) -> None:
        """``PUT /connectors/{name}/config``; raises unless answered 200 or 201."""
        response = httpx.put(f"{self.url}/connectors/{name}/config", json=dict(config), timeout=60)
        if response.status_code not in (200, 201):
            raise KafkaConnectError(f"PUT /connectors/{name}/config: {response.text}")

    def status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status`` (``{}`` unless answered 200)."""
        response = httpx.get(f"{self.url}/connectors/{name}/status", timeout=30)
        return dict(response.json()) if response.status_code == 200 else {}

    # -- internals --------------------------------------------------------------------------

    def _compile_shim(self, java: str, libs: Path) -> Path:
        javac = shutil.which("javac", path=str(Path(java).resolve().parent)) or shutil.which(
            "javac"
        )
        if javac is None:
            raise KafkaConnectError(
                "No javac (a JDK 17+) to compile the AppInfoParser shim that lets connect-file "
                "4.3.1 run on Kafka Connect 4.4"
            )
        source = self.data_dir / "AppInfoParser.java"
        source.write_text(_DATA.joinpath("AppInfoParser.java").read_text("utf-8"), "utf-8")
        out = self.data_dir / "shim"
        result = run_tool([javac, "-nowarn", "-cp", f"{libs}/*", "-d", str(out), str(source)], 300)
        if result.returncode != 0:
            raise KafkaConnectError(f"javac could not compile the shim:\n{result.stderr[-4000:]}")
        return out

    def _install_file_plugin(self, libs: Path) -> None:
        jars = sorted(libs.glob(_FILE_PLUGIN_GLOB))
        if not jars:
            raise KafkaConnectError(f"No {_FILE_PLUGIN_GLOB} in {libs}")
        folder = self.data_dir / "plugins" / "connect-file"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(jars[-1], folder / jars[-1].name)

    def _write_configs(self) -> None:
        settings = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            **self.topics,
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "3",
            "status.storage.partitions": "1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "offset.flush.interval.ms": "500",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "plugin.path": ",".join(map(str, [self.data_dir / "plugins", *self._plugin_dirs])),
            # Every plugin here ships a ServiceLoader manifest; scanning takes seconds more.
            "plugin.discovery": "service_load",
            # A lone test worker: no delay before reassigning the tasks of a departed member.
            "scheduled.rebalance.max.delay.ms": "0",
            "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "1000",
            "task.shutdown.graceful.timeout.ms": "5000",
        }
        self._write_properties("worker.properties", settings)
        # Client configs logged in full at every producer/consumer/admin creation.
        self._write_log4j("connectrt-kafka-connect-test", {"clients": "org.apache.kafka.clients"})

    def _launch(self, java: str, classpath: str) -> None:
        self._spawn(
            java,
            [
                *self._jvm_options(self._heap),
                "-cp",
                classpath,
                "org.apache.kafka.connect.cli.ConnectDistributed",
                str(self.data_dir / "worker.properties"),
            ],
        )
        self._wait_until_ready()

    def _describe(self) -> str:
        return f"Kafka Connect on {self.url}"

    def _wait_until_ready(self) -> None:
        """``GET /`` answers, then ``GET /health`` says 200 (start-up complete)."""
        deadline = time.monotonic() + self._startup_timeout
        with httpx.Client(base_url=self.url, timeout=10) as http:
            for path in ("/", "/health"):

                def answers_200(_: float, path: str = path) -> str | None:
                    try:
                        response = http.get(path)
                    except httpx.HTTPError as exc:
                        return repr(exc)
                    if response.status_code == 200:
                        return None
                    return f"{response.status_code} {response.text[:200]}"

                self._await(
                    answers_200, deadline=deadline, waiting_for=f"answer GET {path} with 200"
                )
