"""Refuse to run a second worker on the same cluster's topics.

Without ``standby.enable`` connectrt has no worker group: one worker owns a cluster's config
topic (Kafka Connect coordinates several through group membership and a leader; connectrt's
standby clusters do too, and use :class:`WorkerGuard`'s other implementation,
:class:`connectrt.runtime.herder.leadership.LeaderFence`, instead of this guard). Two live
connectrt workers on one cluster would both write configs, task sets and statuses and corrupt
each other, so each running worker writes a heartbeat record to its status topic (the record's
shape is in :mod:`connectrt.storage.status_codec`)::

    status-topic-@connectrt-worker-heartbeat:connector-<group.id>
        -> {"topic":{..., "discoverTimestamp":<ms>,"worker_id":"host:8083","instance":"<uuid4>"}}

every ``interval_s``, and :meth:`SingleWorkerGuard.acquire` refuses to start while another
instance keeps writing one. A worker that crashed (or stopped: ``stop()`` writes nothing more)
is recognised by its heartbeat no longer changing within ``3 * interval_s``. Apache Kafka
Connect workers read that record as an active topic of a connector that does not exist and say
nothing (an unknown key would be logged at every read).

Earlier connectrt versions wrote ``worker-heartbeat-<group.id>`` records to the config topic,
which Kafka Connect logs at ERROR for every record it reads. The guard still honours such a
record (a worker of an earlier version may still be running) and, once it holds the cluster,
writes its tombstone so that compaction removes it.

This is a best-effort guard against operator mistakes, not a consensus protocol: two workers
started within the same few milliseconds are caught by the post-write check (the earlier writer
sees the later one's heartbeat and gives up), but clocks are compared only to skip the wait for
a heartbeat that is obviously old.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Protocol

from connectrt.errors import ConnectError
from connectrt.storage.config_codec import Heartbeat

__all__ = ["HeartbeatLog", "SingleWorkerGuard", "WorkerGuard"]

log = logging.getLogger(__name__)


class WorkerGuard(Protocol):
    """What the herder needs of the guard of ``connectrt worker``: this module's
    :class:`SingleWorkerGuard`, or a standby cluster's leader fence
    (:class:`connectrt.runtime.herder.leadership.LeaderFence`). ``acquire`` runs after the stores
    are read and before anything is written; ``stop`` at herder stop."""

    @property
    def running(self) -> bool: ...

    def acquire(self, timeout: float | None = None) -> None: ...

    def stop(self) -> None: ...


class HeartbeatLog(Protocol):
    """What the guard needs from a status store (KafkaStatusStore, MemoryStatusStore)."""

    @property
    def topic(self) -> str: ...

    def refresh(self, timeout: float | None = None) -> None: ...

    def heartbeats(self) -> Mapping[str, Heartbeat]: ...

    def write_heartbeat(self, group_id: str, heartbeat: Heartbeat) -> None: ...


class LegacyHeartbeats(Protocol):
    """The heartbeats earlier versions wrote to the config topic (KafkaConfigStore,
    MemoryConfigStore): read, and removed once the guard holds the cluster."""

    @property
    def topic(self) -> str: ...

    def refresh(self, timeout: float | None = None) -> None: ...

    def heartbeats(self) -> Mapping[str, Heartbeat]: ...

    def remove_heartbeat(self, group_id: str) -> None: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class SingleWorkerGuard:
    """Heartbeats of one worker on its status topic, and the check that no other is alive.

    Lifecycle: ``acquire()`` once at worker start, after the stores have started and before
    anything is written to the config topic (it blocks up to ``3 * interval_s`` when a recent
    heartbeat of another instance is
    found, and raises :class:`ConnectError` if that instance is alive); it then starts a daemon
    thread that, every ``interval_s``, reads the heartbeats written since (``log.refresh``)
    and writes its own. ``stop()`` ends the thread and writes nothing more; it is idempotent.
    A failed read or write is logged and retried at the next tick. ``legacy``, when given, is
    the config store, whose heartbeat records of earlier versions are honoured at ``acquire``
    and then removed.
    """

    def __init__(
        self,
        log: HeartbeatLog,
        group_id: str,
        worker_id: str,
        interval_s: float = 1.0,
        *,
        legacy: LegacyHeartbeats | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        if interval_s <= 0:
            raise ConnectError(f"Heartbeat interval must be positive, got {interval_s}")
        self._log = log
        self._legacy = legacy
        self.group_id = group_id
        self.worker_id = worker_id
        self.interval_s = interval_s
        self.instance = str(uuid.uuid4())
        self._clock_ms = clock_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned_about: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def acquire(self, timeout: float | None = None) -> None:
        """Check that no other worker is alive on the topic, then start heartbeating.

        ``timeout`` bounds each read of the topic (default: the store's).
        """
        if self._thread is not None:
            raise ConnectError("SingleWorkerGuard.acquire() called twice")
        self._refresh(timeout)
        seen = self._other_heartbeat()
        grace_ms = 3 * self.interval_s * 1000
        if seen is not None and self._clock_ms() - seen.timestamp_ms < grace_ms:
            log.info(
                "Found a recent heartbeat of worker %s (instance %s) on %s; waiting %.1f s "
                "to see whether it is still running",
                seen.worker_id,
                seen.instance,
                self._log.topic,
                3 * self.interval_s,
            )
            time.sleep(3 * self.interval_s)
            self._refresh(timeout)
            latest = self._other_heartbeat()
            if latest is not None and latest != seen:
                raise self._refusal(latest)
            log.info("Worker instance %s stopped heartbeating; taking over", seen.instance)
        # First heartbeat, then check nobody else wrote one concurrently: of two workers
        # starting together, the one whose heartbeat came first sees the other's and stops.
        self._beat()
        self._refresh(timeout)
        latest = self._other_heartbeat()
        if latest is not None:
            raise self._refusal(latest)
        self._remove_legacy_heartbeat()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"worker-heartbeat-{self.group_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop heartbeating (no record is written). Idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(5.0, 2 * self.interval_s))

    # -- internals --------------------------------------------------------------------------

    def _refresh(self, timeout: float | None) -> None:
        self._log.refresh(timeout)
        if self._legacy is not None:
            self._legacy.refresh(timeout)

    def _other_heartbeat(self) -> Heartbeat | None:
        latest = self._log.heartbeats().get(self.group_id)
        if latest is not None and latest.instance != self.instance:
            return latest
        if latest is None and self._legacy is not None:
            return self._legacy.heartbeats().get(self.group_id)  # never this instance's
        return None

    def _remove_legacy_heartbeat(self) -> None:
        if self._legacy is None or self.group_id not in self._legacy.heartbeats():
            return
        try:
            self._legacy.remove_heartbeat(self.group_id)
            log.info(
                "Removed the worker heartbeat an earlier connectrt version wrote to config "
                "topic %s (heartbeats now go to status topic %s)",
                self._legacy.topic,
                self._log.topic,
            )
        except Exception as exc:  # harmless if it stays: it is read and ignored
            log.warning(
                "Could not remove the old worker heartbeat from %s: %s", self._legacy.topic, exc
            )

    def _refusal(self, other: Heartbeat) -> ConnectError:
        return ConnectError(
            f"Another connectrt worker ({other.worker_id}, instance {other.instance}) is already "
            f"running on status topic {self._log.topic} (group.id {self.group_id}); a second "
            "worker on the same topics would corrupt them. Stop it first, or use a "
            "different group.id / config.storage.topic / status.storage.topic."
        )

    def _beat(self) -> None:
        self._log.write_heartbeat(
            self.group_id, Heartbeat(self.worker_id, self.instance, self._clock_ms())
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            # Another instance's heartbeat read here belongs to a worker that ignored the
            # guard. Say so once per instance (checked before our own beat, which replaces the
            # latest heartbeat in the store's view).
            try:
                self._log.refresh(max(self.interval_s, 5.0))
            except Exception as exc:
                log.warning("Could not read worker heartbeats from %s: %s", self._log.topic, exc)
            other = self._other_heartbeat()
            if other is not None and other.instance != self._warned_about:
                self._warned_about = other.instance
                log.error(
                    "Another connectrt worker (%s, instance %s) is writing heartbeats to status "
                    "topic %s (group.id %s): two workers on one cluster corrupt its topics",
                    other.worker_id,
                    other.instance,
                    self._log.topic,
                    self.group_id,
                )
            try:
                self._beat()
            except Exception as exc:
                log.warning("Could not write the worker heartbeat to %s: %s", self._log.topic, exc)
