"""A local Spark Connect server started from the installed pyspark, for tests and benches.

pyspark ships the server (``jars/spark-connect_*.jar``, ``sbin/start-connect-server.sh``);
:class:`SparkConnectServer` runs it in the foreground as a child process
(``bin/spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``) on a
free loopback port, with the environment its Python workers need to import this project:
``PYSPARK_PYTHON`` = this interpreter and ``PYTHONPATH`` = this process's ``sys.path`` (the
server's workers are children of the server, not of the client, so only the server's
environment counts), and ``SPARK_HOME`` = :func:`~connectrt.testing.spark_home.local_spark_home`
(its workers import the installed pyspark, not ``pyspark.zip``). Clients connect with
``SparkSession.builder.remote(server.url)``.

``start()`` returns once the server has logged ``Spark Connect server started at`` and its
port accepts connections (the JVM takes 10-30 s on a loaded machine); it raises with the last
log lines if the process exits first or ``startup_timeout`` passes. A port chosen free may be
taken by another process before the JVM binds it (``free_port`` cannot hold it): when the
server then exits with a bind failure and no port was given, ``start()`` runs it again on a new
port, up to :data:`~connectrt.service.BIND_ATTEMPTS` times in all. ``stop()`` sends SIGTERM to
the server's process group (the JVM and its Python workers), waits, then kills. Not
thread-safe for concurrent start/stop.
"""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.service import ChildService, stop_child
from connectrt.testing.child_lifeline import die_with_this_thread
from connectrt.testing.spark import TEST_DRIVER_JAVA_OPTIONS
from connectrt.testing.spark_home import local_spark_home, spark_home

__all__ = ["READY_MARKER", "SparkConnectServer", "spark_home"]

READY_MARKER = "Spark Connect server started at"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_TAIL_LINES = 300
_BIND_FAILURE = "Failed to bind to address /127.0.0.1:{port}"
"""In the server's log when its gRPC port was taken before it bound it."""


def _worker_pythonpath() -> str:
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys([*paths, *existing.split(os.pathsep)]).keys()).strip(
        os.pathsep
    )


class SparkConnectServer(ChildService):
    """One Spark Connect server process on ``127.0.0.1:port`` (see the module docstring)."""

    def __init__(
        self,
        master: str = "local[4,3]",
        *,
        conf: Mapping[str, str] | None = None,
        port: int | None = None,
        python: str | None = None,
        startup_timeout: float = 240.0,
        stop_timeout: float = 30.0,
        log_dir: str | None = None,
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.master = master
        self.conf = dict(conf or {})
        self.python = python or sys.executable
        self._log_dir = log_dir
        self._proc: subprocess.Popen[str] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._ready = threading.Event()
        self._drain: threading.Thread | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:PORT``, for ``SparkSession.builder.remote`` or ``spark.remote``."""
        return f"sc://127.0.0.1:{self.port}"

    def tail(self, lines: int = 40) -> str:
        return "\n".join(list(self._tail)[-lines:])

    def _command(self) -> list[str]:
        home = local_spark_home()
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.python.worker.reuse": "true",
            "spark.driver.extraJavaOptions": TEST_DRIVER_JAVA_OPTIONS,
            **self.conf,
        }
        cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS]
        cmd += ["--name", "connectrt Spark Connect server", "--master", self.master]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(local_spark_home()),
            PYSPARK_PYTHON=self.python,
            PYSPARK_DRIVER_PYTHON=self.python,
            PYTHONPATH=_worker_pythonpath(),
            SPARK_LOCAL_IP="127.0.0.1",
        )
        env.pop("SPARK_CONNECT_MODE", None)
        env.pop("SPARK_REMOTE", None)
        return env

    def start(self) -> SparkConnectServer:
        if self._proc is not None:
            raise ConnectError("SparkConnectServer already started")
        return self._start_on_new_ports_if_lost(
            self._start_once,
            lambda: self._requested_port is None and self._exited_on_a_bind_failure(),
            lambda: f"The Spark Connect server's port {self._port}",
        )

    def _exited_on_a_bind_failure(self) -> bool:
        """Whether the last start failed because the server's port was taken meanwhile (the
        tail is whole: the failed start's ``stop()`` joined the thread that fills it)."""
        failure = _BIND_FAILURE.format(port=self._port)
        return any(failure in line for line in self._tail)

    def _start_once(self) -> SparkConnectServer:
        self._tail.clear()
        self._ready.clear()
        self._port = self._requested_port or free_port()
        log_dir = Path(self._log_dir or tempfile.mkdtemp(prefix="spark-connect-"))
        self.log_path = log_dir / "server.log"
        self._proc = subprocess.Popen(
            self._command(),
            env=self._environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group: stop() ends the JVM and workers
            preexec_fn=die_with_this_thread(),  # a killed test process takes it along
        )
        self._drain = threading.Thread(target=self._drain_output, daemon=True)
        self._drain.start()
        return self._started_or_stopped(self._wait_ready)

    def _drain_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None and self.log_path
        with open(self.log_path, "a", encoding="utf-8") as log:
            for line in self._proc.stdout:
                log.write(line)
                log.flush()
                self._tail.append(line.rstrip("\n"))
                if READY_MARKER in line:
                    self._ready.set()

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self._startup_timeout
        while not self._ready.wait(0.2):
            if self._proc.poll() is not None:
                raise ConnectError(
                    f"The Spark Connect server exited with code {self._proc.returncode} while "
                    f"starting; last lines of {self.log_path}:\n{self.tail()}"
                )
            if time.monotonic() > deadline:
                raise ConnectError(
                    f"The Spark Connect server did not log {READY_MARKER!r} within "
                    f"{self._startup_timeout:.0f} s; last lines of {self.log_path}:\n{self.tail()}"
                )
        while True:  # the marker is logged once the gRPC port is bound; check it accepts
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                    return
            except OSError as e:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise ConnectError(
                        f"The Spark Connect server does not accept connections on port "
                        f"{self.port}: {e}; last lines:\n{self.tail()}"
                    ) from e
                time.sleep(0.2)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        stop_child(proc, self._stop_timeout, kill_wait=10, group=True)
        if self._drain is not None:
            self._drain.join(10)
        if proc.stdout is not None:
            proc.stdout.close()
