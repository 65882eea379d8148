"""The lifecycle the test JVMs share: a folder, one child process, its output, its stop.

:class:`JvmService` is the base of :class:`~connectrt.testing.kafka_broker.KafkaBroker` and
:class:`~connectrt.testing.kafka_connect.KafkaConnect`; a subclass writes its configs and says
when its JVM is ready. The folder is the one the caller named or a temporary one the instance
creates (and removes on :meth:`JvmService.stop` unless ``keep_data``). The JVM's stdout and
stderr go to ``jvm.out`` in it, the service's own log to :attr:`JvmService.log_name`. The JVM
runs in a session of its own (a Ctrl-C in the terminal reaches the test, not the JVM) and dies
with the thread that started it (:mod:`connectrt.testing.child_lifeline`).

Threading: the lifecycle calls (``_spawn``, ``stop``, ``_kill_process``) are for one thread;
the read-only properties may be read from any thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar, TypedDict, Unpack

from connectrt.errors import ConnectError
from connectrt.service import ChildService, stop_child
from connectrt.testing.child_lifeline import die_with_this_thread
from connectrt.testing.java_runtime import LEAN_TEST_JVM_OPTIONS, require_java

__all__ = ["JvmOptions", "JvmService", "tail"]

_TAIL_LINES = 60


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the file at ``path`` (of its last 64 KiB; ``""`` when it
    cannot be read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class JvmOptions(TypedDict, total=False):
    """The keyword settings every test JVM's constructor takes.

    ``data_dir``: the folder (default: a temporary one, removed on ``stop()`` unless
    ``keep_data``). ``startup_timeout`` (default 180 s) bounds one start, ``stop_timeout``
    (default 30 s) the wait for SIGTERM before SIGKILL. ``java`` and ``mvn`` name the binaries
    (default: ``JAVA_HOME``/``PATH`` and ``PATH``). ``properties`` adds to or overrides the
    service's settings."""

    data_dir: str | os.PathLike[str] | None
    startup_timeout: float
    stop_timeout: float
    java: str | None
    mvn: str | None
    keep_data: bool
    properties: Mapping[str, str] | None


class JvmService(ChildService):
    """One test JVM with a folder of its own (see the module docstring); its constructor
    takes the :class:`JvmOptions` and the JVM's ``heap`` (e.g. ``"512m"``)."""

    #: The service's own log, in its folder.
    log_name: ClassVar[str] = "service.log"

    def __init__(
        self, *, heap: str, port: int | None = None, **options: Unpack[JvmOptions]
    ) -> None:
        super().__init__(
            port=port,
            startup_timeout=options.get("startup_timeout", 180.0),
            stop_timeout=options.get("stop_timeout", 30.0),
        )
        data_dir = options.get("data_dir")
        self._requested_data_dir = Path(data_dir) if data_dir is not None else None
        self._data_dir: Path | None = None
        self._owns_data_dir = False
        #: Keep the folder (logs included) on ``stop()`` even when this instance created it.
        self.keep_data = options.get("keep_data", False)
        self._java_arg = options.get("java")
        self._mvn = options.get("mvn")
        self._heap = heap
        #: Settings that add to or override the service's own (its properties file's).
        self._extra = dict(options.get("properties") or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._jvm_out: int | None = None

    @property
    def data_dir(self) -> Path:
        """The service's folder (configs, logs, data)."""
        return self._started(self._data_dir)

    @property
    def log_path(self) -> Path:
        """The service's own log in its folder."""
        return self.data_dir / self.log_name

    def output_tail(self, lines: int = _TAIL_LINES) -> str:
        """The last lines of the service's log, then of the JVM's own output if it wrote any."""
        if self._data_dir is None:
            return ""
        text = tail(self.log_path, lines)
        jvm = tail(self._data_dir / "jvm.out", lines)
        if jvm:
            text = f"{text}\n-- JVM output ({self._data_dir / 'jvm.out'}):\n{jvm}"
        return text

    def stop(self) -> None:
        """SIGTERM the JVM, SIGKILL it after ``stop_timeout`` s; remove the folder this
        instance created unless ``keep_data``. Idempotent."""
        proc = self._proc
        if proc is not None:
            stop_child(proc, self._stop_timeout, kill_wait=30)
        self._close_jvm_out()
        if self._owns_data_dir and not self.keep_data and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._owns_data_dir = False

    # -- for subclasses ----------------------------------------------------------------------

    def _find_java(self) -> str:
        """The first step of every ``start()``: refuse a second start, then the java binary
        (the constructor's ``java``, else from ``JAVA_HOME``/``PATH``; JavaUnavailable when
        there is none or it is too old)."""
        if self._proc is not None:
            raise self.error(f"{type(self).__name__} already started")
        return require_java(self._java_arg)

    def _make_data_dir(self, prefix: str) -> None:
        """The folder: the one asked for (created if missing) or a new temporary one."""
        if self._requested_data_dir is not None:
            self._data_dir = self._requested_data_dir
            self._data_dir.mkdir(parents=True, exist_ok=True)
        else:
            self._data_dir = Path(tempfile.mkdtemp(prefix=prefix))
            self._owns_data_dir = True

    def _jvm_options(self, heap: str) -> list[str]:
        """The JVM arguments every test JVM gets: the heap, headless, exit on out-of-memory,
        the lean options and the ``log4j2.properties`` of :meth:`_write_log4j`."""
        return [
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-Djava.awt.headless=true",
            "-XX:+ExitOnOutOfMemoryError",
            *LEAN_TEST_JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
        ]

    def _write_properties(self, name: str, settings: Mapping[str, str]) -> None:
        """The service's settings file ``name`` in the folder: ``key=value`` lines of
        ``settings`` with the constructor's ``properties`` added or overriding."""
        merged = {**settings, **self._extra}
        lines = [f"{key}={value}" for key, value in merged.items()]
        (self.data_dir / name).write_text("\n".join(lines) + "\n", "utf-8")

    def _write_log4j(self, config_name: str, quiet: Mapping[str, str]) -> None:
        """``log4j2.properties``: INFO and above appended to :attr:`log_path`; the loggers of
        ``quiet`` (label -> logger name) only from WARN up."""
        lines = [
            "status = warn",
            f"name = {config_name}",
            "appender.file.type = File",
            "appender.file.name = FILE",
            f"appender.file.fileName = {self.log_path}",
            "appender.file.append = true",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = [%d] %p %m (%c)%n",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = FILE",
        ]
        for label, logger in quiet.items():
            lines += [f"logger.{label}.name = {logger}", f"logger.{label}.level = WARN"]
        (self.data_dir / "log4j2.properties").write_text("\n".join(lines) + "\n", "utf-8")

    def _describe(self) -> str:
        """How failure messages name the running service (e.g. its address)."""
        return type(self).__name__

    def _fail(self, reason: str) -> ConnectError:
        """The error for a start that failed for ``reason``, with the folder and the log's tail."""
        return self.error(
            f"{self._describe()} {reason}. Folder (kept): {self.data_dir}. "
            f"Last lines of {self.log_path}:\n{self.output_tail() or '(empty)'}"
        )

    def _await(
        self,
        probe: Callable[[float], str | None],
        *,
        deadline: float,
        waiting_for: str,
        exited: str = "",
    ) -> None:
        """Call ``probe(seconds left)`` every 0.2 s until it returns None (ready) while the JVM
        lives. A string is "not yet" (non-empty: what the last try said, for the message).
        Raises :meth:`_fail` (keeping the folder) when the JVM exits (``exited`` ends that
        message) or when ``deadline`` (``time.monotonic()``) passes: "did not
        ``waiting_for`` within ...". Blocks the calling thread."""
        proc = self._proc
        assert proc is not None
        last = ""
        while True:
            if proc.poll() is not None:
                self.keep_data = True
                raise self._fail(f"exited with status {proc.returncode}{exited}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.keep_data = True
                detail = f" (last: {last})" if last else ""
                raise self._fail(
                    f"did not {waiting_for} within {self._startup_timeout:.0f} s{detail}"
                )
            result = probe(remaining)
            if result is None and proc.poll() is None:
                return
            last = result or last
            time.sleep(0.2)

    def _spawn(self, java: str, argv: list[str]) -> None:
        """Start ``java argv...`` in the folder, its output appended to ``jvm.out``."""
        self._close_jvm_out()
        self._jvm_out = os.open(
            self.data_dir / "jvm.out", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )
        try:
            self._proc = subprocess.Popen(
                [java, *argv],
                stdin=subprocess.DEVNULL,
                stdout=self._jvm_out,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=True,  # a Ctrl-C in the terminal reaches the test, not the JVM
                preexec_fn=die_with_this_thread(),  # a killed test process takes it along
            )
        except OSError as exc:
            raise self.error(f"Could not start {java!r}: {exc}") from exc

    def _kill_process(self) -> None:
        """SIGKILL the JVM (if it runs) and reap it."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)

    def _abandon_start(self) -> None:
        """A ``start()`` failed: kill the JVM and close its output, keeping the folder (its
        logs tell why)."""
        self.keep_data = True
        self._kill_process()
        self._close_jvm_out()

    def _close_jvm_out(self) -> None:
        if self._jvm_out is not None:
            os.close(self._jvm_out)
            self._jvm_out = None
