"""The lifecycle the services connectrt starts share (the embedded broker, the test services):
``with Service(...) as s`` starts it and stops it on the way out, and a child process is
stopped by SIGTERM, then SIGKILL.

:class:`ManagedService` is the base of the services that own a process or a server
(:class:`~connectrt.broker.EmbeddedBroker`,
:class:`~connectrt.testing.jvm_service.JvmService`, the OIDC provider, PostgreSQL, the Spark
Connect server, the external broker adapter); each writes its own ``start()`` (returning the
started instance) and an idempotent ``stop()``, which :func:`stop_child` serves where the
service is a child process. :class:`ChildService` adds what a service that is one child
process on a loopback port exposes (``port``, ``pid``, ``is_alive``). Threading: as the
subclass's lifecycle calls (one thread); the read-only properties from any thread.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar

from connectrt.errors import ConnectError

__all__ = ["BIND_ATTEMPTS", "ChildService", "ManagedService", "stop_child"]

_T = TypeVar("_T")

log = logging.getLogger(__name__)

BIND_ATTEMPTS = 3
"""How many times :meth:`ChildService._start_on_new_ports_if_lost` starts a service."""


def stop_child(
    proc: subprocess.Popen[Any], timeout: float, *, kill_wait: float, group: bool = False
) -> None:
    """Stop the child ``proc`` if it still runs: SIGTERM, wait up to ``timeout`` seconds, then
    SIGKILL and wait up to ``kill_wait`` seconds (``subprocess.TimeoutExpired`` after that).
    ``group`` signals the child's whole process group (a child started in a session of its
    own that starts children of its own). A child already gone is fine. Blocks the caller."""
    if proc.poll() is not None:
        return
    _signal(proc, signal.SIGTERM, group)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL, group)
        proc.wait(timeout=kill_wait)


def _signal(proc: subprocess.Popen[Any], sig: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass  # gone already


class ManagedService:
    """``__enter__`` is ``start()``, ``__exit__`` is ``stop()`` (whatever the exception)."""

    def start(self) -> Self:
        """Start the service and return it once it is ready (each subclass's own)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the service; idempotent (each subclass's own)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def _started_or_stopped(self, finish: Callable[[], object]) -> Self:
        """The end of a ``start()``: run ``finish`` (typically, wait until the service answers)
        and return the service; when ``finish`` raises (an interrupt too), :meth:`stop` the
        service first, so that a failed start leaves nothing running."""
        try:
            finish()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ChildService(ManagedService):
    """A service that is one child process of this one, reached on a loopback port.

    The constructor keeps the port asked for (None: ``start()`` picks a free one) and the
    start and stop timeouts (seconds); ``start()`` sets ``_port`` and ``_proc`` (the child).
    ``error`` is the exception raised for the service, by ``port`` before it started too.
    """

    #: The error raised for this service (a subclass of ConnectError).
    error: ClassVar[type[ConnectError]] = ConnectError

    def __init__(
        self, *, port: int | None = None, startup_timeout: float, stop_timeout: float
    ) -> None:
        self._requested_port = port
        self._port: int | None = None
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._proc: subprocess.Popen[Any] | None = None

    @property
    def port(self) -> int:
        """The loopback port clients reach the service on."""
        return self._started(self._port)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _started(self, value: _T | None) -> _T:
        """``value``, something ``start()`` sets; raises ``error`` while it is None."""
        if value is None:
            raise self.error(f"{type(self).__name__} has not been started")
        return value

    def _start_on_new_ports_if_lost(
        self,
        start_once: Callable[[], Self],
        lost_a_port: Callable[[], bool],
        lost: Callable[[], str],
        forget: Callable[[], None] = lambda: None,
    ) -> Self:
        """``start_once()``, again when it failed because a port it chose was taken before
        the child bound it (``free_port`` cannot hold a port: another process may take it
        meanwhile), up to :data:`BIND_ATTEMPTS` times in all.

        ``lost_a_port()`` says, after a failed start (stopped already), whether that is why
        it failed and whether the ports were the launcher's to choose; ``lost()`` names the
        port for the warning logged (``"... port 1234"``); ``forget()`` drops what the failed
        attempt left before the next one. Any other failure is raised as it is.
        """
        for attempt in range(1, BIND_ATTEMPTS + 1):
            try:
                return start_once()
            except self.error:
                if attempt == BIND_ATTEMPTS or not lost_a_port():
                    raise
                log.warning(
                    "%s was taken before it was bound; starting again on new ports "
                    "(attempt %d of %d)",
                    lost(),
                    attempt + 1,
                    BIND_ATTEMPTS,
                )
                forget()
        raise AssertionError("unreachable")
