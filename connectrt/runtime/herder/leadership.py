"""Which worker of a standby cluster leads, and what a worker does when that changes.

``standby.enable=true`` (:mod:`connectrt.runtime.config.standby`): every worker of the cluster
runs one :class:`Leadership`. Kafka's group coordinator decides who leads
(:class:`~connectrt.runtime.clients.leader_group.LeaderGroupMember`: the member assigned the
one partition of ``standby.leadership.topic``); this class turns its decisions into actions:

* **elected**: ``start_leading()`` runs on this class's own lifecycle thread (never on the
  member's polling thread, which must keep renewing the lease): the process takes the config
  topic's ``transactional.id`` (:class:`LeaderFence`, which fences the previous leader's
  producer) and starts the herder (every connector and task).
* **deposed** (revoked, lost, self-fenced, or fenced by a successor's ``init_transactions``):
  ``stop_leading(reason)`` runs once, on a thread of its own. The process stops its connectors
  and tasks and restarts as a standby (:mod:`connectrt.process.standby`).

**Self-fencing.** The member renews a lease with the coordinator every second
(``confirmed_at``). A leader whose lease has not been confirmed for
``standby.session.timeout.ms - standby.fence.margin.ms`` deposes itself: no successor can be
assigned the partition before ``standby.session.timeout.ms`` has passed since the leader's last
heartbeat, so when the margin exceeds the time its tasks take to stop, the old leader's tasks
have stopped before the successor starts them. A leader paused (SIGSTOP, a VM freeze) longer
than that deposes itself the moment it runs again; the writes its resumed threads make in that
moment are fenced on the config and status topics (transactions: :class:`LeaderFence`) and,
for exactly-once source tasks, on their own transactional ids; an at-least-once task may still
deliver the records it had in hand (duplicates, never loss).

Threading: ``role``, ``leader_url`` and ``worker_url`` may be read from any thread (the REST
forwarding reads them on the event loop: plain attribute reads). Lifecycle: ``start()`` once
after the REST listener is bound; ``close()`` once (leaves the group).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from connectrt.errors import ConfigError
from connectrt.runtime.clients.leader_group import LeaderGroupMember
from connectrt.runtime.herder.standby_reads import StandbyReads

__all__ = ["LEADER", "STANDBY", "STOPPING", "ConfigTopicLog", "LeaderFence", "Leadership"]

log = logging.getLogger(__name__)

LEADER = "leader"
STANDBY = "standby"
STOPPING = "stopping"

_URL_REFRESH_S = 1.0
_WATCH_S = 0.1
_STOP_WAIT_S = 60.0


class Leadership:
    """See the module docstring.

    ``member`` is built by ``start(url)`` through ``new_member(url, on_elected, on_deposed)``;
    ``fence_after_s`` is session timeout minus margin.
    """

    def __init__(
        self,
        group_id: str,
        new_member: Callable[[str, Callable[[], None], Callable[[str], None]], LeaderGroupMember],
        fence_after_s: float,
        start_leading: Callable[[], None],
        stop_leading: Callable[[str], None],
    ) -> None:
        if fence_after_s <= 0:
            raise ConfigError(
                "standby.fence.margin.ms must be less than standby.session.timeout.ms",
                "standby.fence.margin.ms",
            )
        self.group_id = group_id
        self.fence_after_s = fence_after_s
        self._new_member = new_member
        self._start_leading = start_leading
        self._stop_leading = stop_leading
        self.role = STANDBY
        self.worker_url: str | None = None
        self.leader_url: str | None = None
        self.member: LeaderGroupMember | None = None
        #: A standby's copy of the topics for REST reads (set by the process; None: forward).
        self.reads: StandbyReads | None = None
        self.elected_at: float | None = None
        self._elected = threading.Event()
        self._closed = threading.Event()
        self._deposed_once = threading.Lock()
        self._deposed = False
        self._threads: list[threading.Thread] = []

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, url: str) -> None:
        """Join the leadership group as the worker advertised at ``url``."""
        self.worker_url = url
        self.member = self._new_member(url, self._elected.set, self._deposed_by_member)
        self.member.start()
        for name, target in (
            ("leadership-lifecycle", self._lifecycle),
            ("leadership-watchdog", self._watchdog),
            ("leadership-leader-url", self._follow_leader_url),
        ):
            thread = threading.Thread(target=target, name=f"{name}-{self.group_id}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """Leave the group (the coordinator hands the partition to a standby at once) and stop
        this object's threads. Call after the herder has stopped, so that the successor starts
        only once this worker's tasks are stopped."""
        self._closed.set()
        self._elected.set()  # wakes the lifecycle thread
        member = self.member
        if member is not None:
            member.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)

    def to_dict(self) -> dict[str, Any]:
        """What ``GET /leader`` shows."""
        return {
            "role": self.role,
            "worker_url": self.worker_url,
            "leader_url": self.worker_url if self.role == LEADER else self.leader_url,
            "leadership_group": self.member.group_id if self.member else None,
        }

    # -- deposition ---------------------------------------------------------------------------

    def depose(self, reason: str) -> threading.Thread | None:
        """Stop leading (once; later calls do nothing and return None). Called by the member
        (revoked, lost), the watchdog (self-fencing) and the config topic's fenced producer.
        Returns the thread running ``stop_leading``."""
        with self._deposed_once:
            if self._deposed or self._closed.is_set():
                return None
            if self.role != LEADER and not self._elected.is_set():
                return None  # never led: nothing to stop
            self._deposed = True
            self.role = STOPPING
        log.error("This worker stops leading: %s", reason)
        thread = threading.Thread(
            target=self._stop_leading, args=(reason,), name="leadership-deposed", daemon=True
        )
        thread.start()
        return thread

    def _deposed_by_member(self, reason: str) -> None:
        """The member's revoke/lost callback: wait (bounded) until the tasks have stopped, so
        that the member rejoins the group, and a successor is assigned, only after that."""
        thread = self.depose(reason)
        if thread is not None:
            thread.join(timeout=_STOP_WAIT_S)

    # -- threads ----------------------------------------------------------------------------

    def _lifecycle(self) -> None:
        self._elected.wait()
        if self._closed.is_set():
            return
        with self._deposed_once:
            if self._deposed:
                return
            self.role = LEADER
            self.elected_at = time.monotonic()
        log.info("Leading cluster %s from %s", self.group_id, self.worker_url)
        try:
            self._start_leading()
        except Exception as exc:
            log.exception("Could not start leading")
            self.depose(f"starting as the leader failed: {exc}")

    def _watchdog(self) -> None:
        while not self._closed.wait(_WATCH_S):
            member = self.member
            if self.role != LEADER or member is None:
                continue
            silent = time.monotonic() - member.confirmed_at
            if silent > self.fence_after_s:
                self.depose(
                    f"the group coordinator has not confirmed its leadership for {silent:.1f} s "
                    f"(more than standby.session.timeout.ms - standby.fence.margin.ms = "
                    f"{self.fence_after_s:.1f} s): a successor may be elected "
                    f"({member.leases_unanswered} lease commits unanswered; last lease error: "
                    f"{member.last_lease_error})"
                )

    def _follow_leader_url(self) -> None:
        while not self._closed.wait(_URL_REFRESH_S):
            member = self.member
            if self.role == LEADER or member is None:
                continue
            try:
                self.leader_url = member.leader_url()
            except Exception as exc:
                log.debug("Could not describe the leadership group: %s", exc)
                self.leader_url = None


class ConfigTopicLog(Protocol):
    """What :class:`LeaderFence` needs of a store's topic log (config, status)."""

    def write_transactionally(
        self, transactional_id: str, on_fenced: Callable[[str], None], timeout: float | None = None
    ) -> None: ...


class LeaderFence:
    """The herder's worker guard in a standby cluster: ``acquire()`` (called by
    :meth:`Herder.start` after the stores are read, before anything is written) takes the
    cluster's config-topic ``transactional.id`` (``<group.id>-leader``), which fences the
    previous leader's producer, and one more id per log of ``others`` (suffix -> log, e.g.
    ``{"-status": status log}``: ``<group.id>-leader-status``; more with :meth:`add`), so that
    the status and offset records of a deposed leader are refused by the broker too. A fenced
    write later deposes this leader (``on_fenced``)."""

    def __init__(
        self,
        log_of: Callable[[], ConfigTopicLog],
        group_id: str,
        others: Callable[[], Mapping[str, ConfigTopicLog]] = dict,
    ) -> None:
        self._log_of = log_of
        self._others: list[Callable[[], Mapping[str, ConfigTopicLog]]] = [others]
        self.transactional_id = f"{group_id}-leader"
        #: Set by the process to :meth:`Leadership.depose` before the herder starts.
        self.on_fenced: Callable[[str], None] = lambda reason: None
        self._held = False

    @property
    def running(self) -> bool:
        return self._held

    def add(self, others: Callable[[], Mapping[str, ConfigTopicLog]]) -> None:
        """More logs to fence (suffix -> log), e.g. the worker's offsets log once the worker is
        built; call before :meth:`acquire`. A log may take its id before it starts."""
        self._others.append(others)

    def acquire(self, timeout: float | None = None) -> None:
        logs: dict[str, ConfigTopicLog] = {"": self._log_of()}
        for others in self._others:
            logs.update(others())
        for suffix, topic_log in logs.items():
            topic_log.write_transactionally(
                self.transactional_id + suffix, lambda reason: self.on_fenced(reason), timeout
            )
        self._held = True
        log.info(
            "Took transactional.id %s: the %s writes of any earlier leader are fenced",
            ", ".join(self.transactional_id + suffix for suffix in logs),
            " and ".join(
                ["config-topic", *(suffix.strip("-") + "-topic" for suffix in logs if suffix)]
            ),
        )

    def stop(self) -> None:
        self._held = False
