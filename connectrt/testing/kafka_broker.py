"""A single-node Apache Kafka broker for tests, run from Maven jars with plain ``java -cp``.

(One module a little over the house size: formatting, configuration, start, readiness and stop
of one JVM share the data folder and the process handle; the jars and Java lookup are already
modules of their own.)

:class:`KafkaBroker` runs one KRaft node (broker and controller in one JVM) on two free loopback
ports, with its own data folder (a temporary directory unless given), and offers the interface
of :class:`connectrt.broker.EmbeddedBroker` that tests use (``bootstrap_servers``, ``port``,
``pid``, ``is_alive()``, ``output_tail()``, ``start()``/``stop()``, context manager), so the
``broker`` fixture can yield either. It needs Java 17+ (:mod:`connectrt.testing.java_runtime`)
and, the first time on a machine, Maven to fetch the jars (:mod:`connectrt.testing.kafka_jars`).

Lifecycle: ``start()`` once; it formats the storage (a random cluster id, ``StorageTool format
--standalone``), starts the JVM and returns once the log says "Kafka Server started", a metadata
request succeeds and the process is still alive; otherwise it kills the JVM, keeps the data
folder and raises :class:`KafkaBrokerError` whose message holds the log's tail and the folder
(except when another process took one of its chosen ports before the JVM bound it: it then starts
again on new ports, in a new folder).
``stop()`` sends SIGTERM, then SIGKILL after ``stop_timeout``; it is idempotent and removes a
data folder it created unless ``keep_data`` is set. For fault tests, ``kill()`` SIGKILLs the JVM and
``restart()`` starts it again on the same ports and data folder (what it had durably written
survives). A test process killed before ``stop()`` takes the JVM along when it started it from
its main thread (:mod:`connectrt.testing.child_lifeline`). Not thread-safe for the lifecycle
calls; the read-only properties may be used from
any thread.

Layout of the data folder: ``server.properties``, ``log4j2.properties``, ``broker.log`` (the
broker's Log4j output, appended across restarts), ``jvm.out`` (the JVM's own stdout/stderr) and
``kraft/`` (the log segments and metadata).
"""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.java_runtime import run_tool
from connectrt.testing.jvm_service import JvmOptions, JvmService
from connectrt.testing.kafka_jars import kafka_classpath

__all__ = ["KafkaBroker", "KafkaBrokerError"]

_READY_MARKER = "Kafka Server started"
_BIND_FAILURE = "Address already in use"
"""In the broker's log when a listener could not bind its port."""
_client_logger = logging.getLogger("connectrt.testing.kafka_broker.client")


class KafkaBrokerError(ConnectError):
    """The Apache Kafka test broker could not be formatted, started or reached."""


def _random_cluster_id() -> str:
    """What ``StorageTool random-uuid`` prints: a random UUID, URL-safe base64 without padding,
    never starting with '-' (Kafka's rule, so the id cannot look like a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaBroker(JvmService):
    """One Apache Kafka 4.x KRaft node on ``127.0.0.1``, for tests (the folder, stop and output
    tail as :class:`~connectrt.testing.jvm_service.JvmService` keeps them).

    ``port=None`` picks a free broker port; the controller port is always picked. The other
    settings of :class:`~connectrt.testing.jvm_service.JvmOptions` apply: ``properties`` adds or
    overrides broker settings; ``startup_timeout`` bounds one start (formatting, JVM start,
    readiness; not the first jar download, which :func:`kafka_classpath` bounds).
    ``extra_listeners`` adds listeners (name -> security protocol, e.g. ``{"SASL_PLAINTEXT":
    "SASL_PLAINTEXT"}``), each on a free loopback port (:meth:`listener_bootstrap`); their SASL
    or SSL settings go in ``properties`` (``listener.name.<name>.*``). The PLAINTEXT listener
    stays the inter-broker one and the one ``bootstrap_servers`` names. ``jvm_options`` adds JVM
    arguments (e.g. ``-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=...``).

    Group timings are a test's, not production's: no initial rebalance delay, and members of
    consumer-protocol (KIP-848) groups heartbeat every second and are dropped 10 s after their
    last heartbeat (Kafka's defaults: 5 s and 45 s), so a test that kills one waits seconds,
    not most of a minute; so do share-group members, and a share group may lower its record
    lock duration to 1 s. Classic-protocol members set theirs in their own config.
    """

    error = KafkaBrokerError
    log_name = "broker.log"

    def __init__(
        self,
        port: int | None = None,
        *,
        heap: str = "512m",
        extra_listeners: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = (),
        **options: Unpack[JvmOptions],
    ) -> None:
        super().__init__(heap=heap, port=port, **options)
        self._controller_port: int | None = None
        self._extra_listeners = {k.upper(): v.upper() for k, v in (extra_listeners or {}).items()}
        self._extra_ports: dict[str, int] = {}
        self._extra_jvm_options = list(jvm_options)
        self._java: str | None = None
        self._libs: Path | None = None

    # -- properties -------------------------------------------------------------------------

    @property
    def controller_port(self) -> int:
        """The KRaft controller listener's port."""
        return self._started(self._controller_port)

    def listener_bootstrap(self, name: str) -> str:
        """``127.0.0.1:PORT`` of the extra listener ``name`` (see the constructor)."""
        port = self._extra_ports.get(name.upper())
        if port is None:
            raise KafkaBrokerError(f"KafkaBroker has no started listener {name}")
        return f"127.0.0.1:{port}"

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:PORT``, for the ``bootstrap.servers`` client setting."""
        return f"127.0.0.1:{self.port}"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> KafkaBroker:
        """Format the storage, start the broker and wait until it is ready (see the module).

        The ports are free when chosen, but another process may bind one before the JVM does
        (``free_port`` cannot hold it): when the broker then fails to bind and neither its port
        nor its folder was given, it starts again on new ports in a new folder, up to
        :data:`~connectrt.service.BIND_ATTEMPTS` times in all (the failed folder is removed)."""
        self._java = self._find_java()
        self._libs = kafka_classpath(mvn=self._mvn)
        chosen = self._requested_port is None and self._requested_data_dir is None
        keep = self.keep_data

        def forget_the_attempt() -> None:
            folder, self._data_dir = self._data_dir, None
            self._extra_ports.clear()
            self.keep_data = keep
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

        return self._start_on_new_ports_if_lost(
            self._start_once,
            lambda: chosen and self._lost_a_port(),
            lambda: f"{self._describe()}: a port",
            forget_the_attempt,
        )

    def _lost_a_port(self) -> bool:
        """Whether the last start failed because a listener's port was taken meanwhile."""
        try:
            return _BIND_FAILURE in self.log_path.read_text("utf-8", errors="replace")
        except OSError:
            return False

    def _start_once(self) -> KafkaBroker:
        self._make_data_dir("connectrt-kafka-")
        self._port = self._requested_port if self._requested_port is not None else free_port()
        self._controller_port = free_port()
        while self._controller_port == self._port:
            self._controller_port = free_port()
        taken = {self._port, self._controller_port}
        for name in self._extra_listeners:
            port = free_port()
            while port in taken:
                port = free_port()
            taken.add(port)
            self._extra_ports[name] = port
        self._write_configs()
        try:
            self._format_storage()
            self._launch()
        except BaseException:
            self._abandon_start()
            raise
        return self

    def kill(self) -> None:
        """SIGKILL the broker (a crash: nothing flushed, no controlled shutdown) and reap it.
        The ports and data folder stay reserved for :meth:`restart`."""
        self._kill_process()

    def restart(self) -> None:
        """Start the broker again on the same ports and data folder, killing it first (SIGKILL)
        if it still runs; returns once it is ready, as ``start()`` does."""
        if self._data_dir is None or self._port is None:
            raise KafkaBrokerError("KafkaBroker has not been started")
        if not (self._data_dir / "kraft" / "meta.properties").exists():
            raise KafkaBrokerError(f"No formatted data folder to restart from: {self._data_dir}")
        self._kill_process()
        try:
            self._launch()
        except BaseException:
            self._abandon_start()
            raise

    # -- internals --------------------------------------------------------------------------

    def _classpath(self) -> str:
        assert self._libs is not None
        return str(self._libs / "*")

    def _jvm_options(self, heap: str) -> list[str]:
        return [*super()._jvm_options(heap), *self._extra_jvm_options]

    def _write_configs(self) -> None:
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
                + "".join(f",{n}://127.0.0.1:{p}" for n, p in self._extra_ports.items())
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}"
            + "".join(f",{n}://127.0.0.1:{p}" for n, p in self._extra_ports.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
            + "".join(f",{n}:{proto}" for n, proto in self._extra_listeners.items()),
            "log.dirs": str(self.data_dir / "kraft"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.min.session.timeout.ms": "6000",
            "group.consumer.session.timeout.ms": "10000",
            "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.heartbeat.interval.ms": "1000",
            # Share groups (KIP-932): members dropped 10 s after their last heartbeat, and a
            # group may set its record lock duration down to 1 s (Kafka's floor is 15 s; the
            # default stays 30 s), so a test that kills a member waits seconds.
            "group.share.min.session.timeout.ms": "6000",
            "group.share.session.timeout.ms": "10000",
            "group.share.min.heartbeat.interval.ms": "500",
            "group.share.heartbeat.interval.ms": "1000",
            "group.share.min.record.lock.duration.ms": "1000",
        }
        self._write_properties("server.properties", settings)
        # The per-request loggers are noise at INFO on a busy test broker.
        self._write_log4j(
            "connectrt-kafka-test-broker",
            {"request": "kafka.request.logger", "authorizer": "kafka.authorizer.logger"},
        )

    def _format_storage(self) -> None:
        if (self.data_dir / "kraft" / "meta.properties").exists():
            return  # formatted before (a data folder given again)
        assert self._java is not None
        cmd = [
            self._java,
            *self._jvm_options("256m"),
            "-cp",
            self._classpath(),
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            _random_cluster_id(),
            "--config",
            str(self.data_dir / "server.properties"),
            "--standalone",
        ]
        try:
            result = run_tool(cmd, self._startup_timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise KafkaBrokerError(f"Formatting the Kafka storage failed: {exc}") from exc
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()[-4000:]
            raise KafkaBrokerError(
                f"'kafka.tools.StorageTool format' exited with status {result.returncode} "
                f"(data folder {self.data_dir}):\n{output}"
            )

    def _launch(self) -> None:
        assert self._java is not None
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._spawn(
            self._java,
            [
                *self._jvm_options(self._heap),
                "-cp",
                self._classpath(),
                "kafka.Kafka",
                str(self.data_dir / "server.properties"),
            ],
        )
        self._wait_until_ready(log_offset)

    def _describe(self) -> str:
        return f"Apache Kafka test broker on {self.bootstrap_servers}"

    def _log_says_started(self, offset: int) -> bool:
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(offset)
                return _READY_MARKER.encode() in handle.read()
        except OSError:
            return False

    def _wait_until_ready(self, log_offset: int) -> None:
        # Local import: only this adapter talks to the client library.
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self._startup_timeout
        self._await(
            lambda _: None if self._log_says_started(log_offset) else "",
            deadline=deadline,
            waiting_for=f"log {_READY_MARKER!r}",
            exited=" before it was ready",
        )
        settings: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "socket.connection.setup.timeout.ms": 5000,
            "logger": _client_logger,
        }
        admin = AdminClient(settings)

        def metadata(remaining: float) -> str | None:
            try:
                admin.list_topics(timeout=min(5.0, max(remaining, 0.1)))
            except KafkaException as exc:
                return str(exc)
            return None

        self._await(
            metadata,
            deadline=deadline,
            waiting_for="answer a metadata request",
            exited=" after starting",
        )
