"""Whether the worker can serve requests: the answer behind ``GET /health`` (KIP-1017).

Kafka Connect answers ``/health`` by sending a no-op request through its herder's request
queue: 200 ``healthy`` when it comes back within 10 s, 503 ``starting`` while the herder has
not finished starting, 500 ``unhealthy`` otherwise, with what the herder was doing at the time
appended to the message. connectrt's herder has no request thread; its herder-wide lock
(held for the writes to the config topic, never across plugin code: a connector or task whose
code blocks holds only its own connector's lock, and is no worker failure) is what the check
takes (at most :data:`HEALTH_CHECK_TIMEOUT_S`), and then it asks the worker's probes: each says
what is wrong (its background threads, its Kafka cluster) or nothing.

:class:`HerderStages` records what the herder is doing (``creating connector orders``), so an
unhealthy answer says where it is stuck: Kafka's stage summaries, in its words.

Threading: :meth:`WorkerHealth.check` may be called from any thread, concurrently; it holds the
herder lock only for an instant. Probes must be thread-safe and bounded in time.
:class:`HerderStages` is thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "HEALTH_CHECK_TIMEOUT_S",
    "HealthProbe",
    "HealthReport",
    "HerderStages",
    "WorkerHealth",
    "thread_probe",
]

log = logging.getLogger(__name__)

HEALTH_CHECK_TIMEOUT_S = 10.0
"""How long a health check waits for the herder (Kafka's fixed 10 s)."""

HEALTHY = "Worker has completed startup and is ready to handle requests."
STARTING = "Worker is still starting up."
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."

HealthProbe = Callable[[float], str | None]
"""``probe(timeout_s)``: what is wrong (one sentence), or None. Must return within about
``timeout_s``."""


@dataclass(frozen=True)
class HealthReport:
    """``status`` is ``healthy``, ``starting`` or ``unhealthy``; ``http_status`` its code."""

    status: str
    message: str

    @property
    def http_status(self) -> int:
        return {"healthy": 200, "starting": 503}.get(self.status, 500)


def _instant(epoch_s: float) -> str:
    """Java's ``Instant.toString()`` shape, e.g. ``2024-10-25T03:33:01.123Z``."""
    moment = datetime.fromtimestamp(epoch_s, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class HerderStages:
    """The herder's current (or last) operation, for health reports.

    ``stage(description)`` wraps one operation; nested stages on the thread that already has
    one (the herder lock is reentrant) keep the outer description.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._description: str | None = None
        self._started = 0.0
        self._completed: float | None = None
        self._owner: int | None = None

    @contextmanager
    def stage(self, description: str) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            outer = self._owner != me or self._completed is not None
            if outer:
                self._description, self._started = description, self._clock()
                self._completed, self._owner = None, me
        try:
            yield
        finally:
            if outer:
                with self._lock:
                    self._completed, self._owner = self._clock(), None

    def summarize(self) -> str | None:
        """Kafka's stage summary, or None before the first operation."""
        with self._lock:
            description, started, completed = self._description, self._started, self._completed
        if description is None:
            return None
        if completed is None:
            return f"The worker is currently {description}, which began at {_instant(started)}."
        return (
            f"The last operation the worker completed was {description}, which began at "
            f"{_instant(started)} and completed at {_instant(completed)}."
        )


class WorkerHealth:
    """The health check: readiness, the herder lock, then every probe.

    ``ready`` is set once the herder has started; ``lock`` is the herder's mutation lock;
    ``stages`` what the herder does; ``probes`` named checks (see :data:`HealthProbe`), to
    which :meth:`add_probe` adds more (e.g. the control-topic listener's thread).
    """

    def __init__(
        self,
        ready: threading.Event,
        lock: threading.RLock,
        stages: HerderStages,
        probes: dict[str, HealthProbe] | None = None,
        timeout_s: float = HEALTH_CHECK_TIMEOUT_S,
    ) -> None:
        self._ready = ready
        self._lock = lock
        self.stages = stages
        self._probes: dict[str, HealthProbe] = dict(probes or {})
        self._timeout_s = timeout_s

    @classmethod
    def for_worker(
        cls,
        ready: threading.Event,
        lock: threading.RLock,
        stages: HerderStages,
        worker: Any,
        kafka_probe: HealthProbe,
        guard: Any = None,
    ) -> WorkerHealth:
        """The herder's check: ``worker``'s reconfiguration thread, Kafka (``kafka_probe``)
        and, in ``connectrt worker``, the single-worker ``guard``'s heartbeat thread."""
        health = cls(ready, lock, stages)
        health.add_probe(
            "worker",
            thread_probe(
                "worker's task reconfiguration thread (worker-reconfig)",
                worker.reconfiguration_running,
            ),
        )
        health.add_probe("kafka", kafka_probe)
        if guard is not None:
            health.add_probe(
                "guard",
                thread_probe("single-worker guard's heartbeat thread", lambda: guard.running),
            )
        return health

    def add_probe(self, name: str, probe: HealthProbe) -> None:
        self._probes[name] = probe

    def check(self) -> HealthReport:
        """``starting`` until ready (with the stage, if any); then ``unhealthy`` with the
        reasons when the herder lock stays taken for the timeout or a probe finds a problem;
        ``healthy`` otherwise."""
        if not self._ready.is_set():
            detail = self.stages.summarize()
            return HealthReport("starting", f"{STARTING} {detail}" if detail else STARTING)
        deadline = time.monotonic() + self._timeout_s
        if not self._lock.acquire(timeout=self._timeout_s):
            detail = self.stages.summarize() or "The herder did not respond."
            return HealthReport("unhealthy", f"{UNHEALTHY} {detail}")
        self._lock.release()
        problems = []
        for name, probe in list(self._probes.items()):
            remaining = max(1.0, deadline - time.monotonic())
            try:
                problem = probe(remaining)
            except Exception as e:  # a probe that fails is a finding, not a 500 of its own
                problem = f"The {name} check failed: {type(e).__name__}: {e}"
            if problem:
                problems.append(problem)
        if problems:
            log.warning("Health check: unhealthy: %s", " ".join(problems))
            return HealthReport("unhealthy", f"{UNHEALTHY} {' '.join(problems)}")
        return HealthReport("healthy", HEALTHY)


def thread_probe(what: str, alive: Callable[[], bool]) -> HealthProbe:
    """A probe that reports ``what`` as stopped when ``alive()`` is false."""

    def probe(timeout_s: float) -> str | None:
        return None if alive() else f"The {what} is not running."

    return probe
