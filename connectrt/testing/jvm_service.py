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
import signal
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from connectrt.errors import ConnectError
from connectrt.testing.child_lifeline import die_with_this_thread

__all__ = ["JvmService", "tail"]

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


class JvmService:
    """One test JVM with a folder of its own (see the module docstring)."""

    #: The error raised for this service (a subclass of ConnectError).
    error: ClassVar[type[ConnectError]] = ConnectError
    #: The service's own log, in its folder.
    log_name: ClassVar[str] = "service.log"

    def __init__(
        self,
        *,
        data_dir: str | os.PathLike[str] | None,
        stop_timeout: float,
        keep_data: bool,
    ) -> None:
        self._requested_data_dir = Path(data_dir) if data_dir is not None else None
        self._data_dir: Path | None = None
        self._owns_data_dir = False
        self._stop_timeout = stop_timeout
        #: Keep the folder (logs included) on ``stop()`` even when this instance created it.
        self.keep_data = keep_data
        self._proc: subprocess.Popen[bytes] | None = None
        self._jvm_out: int | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def data_dir(self) -> Path:
        """The service's folder (configs, logs, data)."""
        if self._data_dir is None:
            raise self.error(f"{type(self).__name__} has not been started")
        return self._data_dir

    @property
    def log_path(self) -> Path:
        """The service's own log in its folder."""
        return self.data_dir / self.log_name

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

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
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=self._stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
            except ProcessLookupError:
                pass
        self._close_jvm_out()
        if self._owns_data_dir and not self.keep_data and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._owns_data_dir = False

    def start(self) -> Self:
        """Start the JVM and return once it is ready (each subclass's own)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- for subclasses ----------------------------------------------------------------------

    def _make_data_dir(self, prefix: str) -> None:
        """The folder: the one asked for (created if missing) or a new temporary one."""
        if self._requested_data_dir is not None:
            self._data_dir = self._requested_data_dir
            self._data_dir.mkdir(parents=True, exist_ok=True)
        else:
            self._data_dir = Path(tempfile.mkdtemp(prefix=prefix))
            self._owns_data_dir = True

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

    def _close_jvm_out(self) -> None:
        if self._jvm_out is not None:
            os.close(self._jvm_out)
            self._jvm_out = None
