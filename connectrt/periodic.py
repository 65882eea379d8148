"""A function called again and again on a daemon thread of its own until stopped:
:class:`Periodic` (the stall watchdog, the metrics history, the Spark slot watch, a task
process's call reporter, the Spark topic tails).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Periodic"]


@dataclass(eq=False)
class Periodic:
    """Calls ``tick`` on a daemon thread named ``name`` until :meth:`stop`: first after
    ``interval_s`` (at once with ``at_once``), then ``interval_s`` after each call returns. A
    ``tick`` that returns a number sets the wait before the next call and after (None keeps it).

    ``tick`` handles its own errors: an exception ends the thread. Lifecycle: :meth:`start`
    (again after :meth:`stop` starts a new thread; while one runs, nothing), :meth:`stop` (also
    without a start). Threading: ``start``/``stop`` from the owner's thread; :meth:`wait` and
    :attr:`stopped` from any.
    """

    name: str
    tick: Callable[[], float | None]
    interval_s: float
    at_once: bool = False
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, join_timeout_s: float | None = 5.0) -> None:
        """Ask the thread to end after the current call and wait up to ``join_timeout_s``."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            thread.join(join_timeout_s)

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``, waking at :meth:`stop`; True once stopped."""
        return self._stop.wait(timeout_s)

    def _run(self) -> None:
        interval = self.interval_s
        if not self.at_once and self._stop.wait(interval):
            return
        while True:
            wait = self.tick()
            if wait is not None:
                interval = wait
            if self._stop.wait(interval):
                return
