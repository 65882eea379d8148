"""One worker's membership in its cluster's leadership group: Kafka's group coordinator decides.

Every ``connectrt worker`` with ``standby.enable=true`` runs one :class:`LeaderGroupMember`: a
classic-protocol consumer group member (``group.id`` = the worker's ``group.id`` +
``-leadership``) subscribed to a topic of exactly one partition. The coordinator assigns that
partition to exactly one live member: that member leads. Nothing else is elected here; the
member only reports what the coordinator decided:

* ``on_elected()`` when partition 0 is assigned to this member;
* ``on_deposed(reason)`` when it is revoked or lost (rebalance, session expiry the client
  noticed, a fatal client error).

The leader also renews a lease: every ``lease_interval_s`` it commits an offset of partition 0
(asynchronously, so that a slow answer does not delay the next commit). The coordinator accepts
the commit only from the member that holds the partition in the current generation, so a
successful commit proves, as of the moment it was *sent*, that the coordinator still counted
this member in: :attr:`confirmed_at` is the latest such moment (``time.monotonic()``). Each
commit (offset 0 always: the topic stays empty) carries its own sequence number as the
offset's metadata, and its answer is matched to its send time by that number: answers that
come out of order (a commit failed locally while an earlier one was still in flight, one
deferred by librdkafka during a rebalance) or never confirm the right moment, neither a later
one (unsafe) nor an earlier one (a leader whose confirmations drift behind hands over although
nothing failed). The coordinator cannot hand the partition to anyone else before
``session.timeout.ms`` has passed since this member's last contact (heartbeat or commit),
which is no earlier than that send; so a leader that stops its work when ``confirmed_at`` is
older than the session timeout minus a margin stops before any successor starts (the decision
is :class:`connectrt.runtime.herder.leadership.Leadership`'s).

Each member's ``client.id`` carries its advertised REST URL (``connectrt-worker <url>``); the
standbys find the leader's URL by describing the group (:meth:`LeaderGroupMember.leader_url`):
the member holding partition 0 is the leader. The URL is therefore only ever learned from the
group, never from a request.

Lifecycle: ``start()`` creates the topic if absent (one partition) and starts the member's
daemon thread, which joins the group (once no earlier process of this worker is a member any
more: :meth:`LeaderGroupMember._wait_for_earlier_self`) and polls every 100 ms (callbacks run
on it); ``close()`` leaves the
group (the coordinator reassigns the partition at once) and joins the thread. Idempotent.
Threading: ``leader_url`` may be called from any thread (it makes an admin request);
``confirmed_at`` and ``assigned`` are plain reads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.errors import ConnectError

__all__ = ["CLIENT_ID_PREFIX", "LeaderGroupMember", "url_of_client_id"]

log = logging.getLogger(__name__)

#: ``client.id`` of a member: this prefix, a space, the member's advertised REST URL.
CLIENT_ID_PREFIX = "connectrt-worker"


def url_of_client_id(client_id: str) -> str | None:
    """The URL a member put in its ``client.id``, or None (not a connectrt member)."""
    prefix, _, url = client_id.partition(" ")
    if prefix != CLIENT_ID_PREFIX or not url.startswith(("http://", "https://")):
        return None
    return url


class LeaderGroupMember:
    """See the module docstring. ``client_config`` holds the connection and security settings
    (``bootstrap.servers`` included); ``session_timeout_ms`` is the member's
    ``session.timeout.ms`` (heartbeats every third of it, at most every second)."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        group_id: str,
        topic: str,
        url: str,
        session_timeout_ms: int,
        on_elected: Callable[[], None],
        on_deposed: Callable[[str], None],
        *,
        lease_interval_s: float = 1.0,
        timeout_s: float = 30.0,
    ) -> None:
        self.group_id = group_id
        self.topic = topic
        self.url = url
        self._client_config = dict(client_config)
        self._session_ms = session_timeout_ms
        self._on_elected = on_elected
        self._on_deposed = on_deposed
        self._lease_s = lease_interval_s
        self._timeout_s = timeout_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Any = None
        self._admin: AdminClient | None = None
        self.assigned = False
        self.confirmed_at = 0.0
        #: Sequence number (the commit's metadata) -> when that lease commit was sent.
        self._lease_sent: dict[int, float] = {}
        self._lease_seq = 0
        #: The latest lease failure, for the deposition message (None: the last one held).
        self.last_lease_error: str | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Create the topic if absent, join the group and start polling (see the module)."""
        if self._thread is not None:
            return
        self._admin = AdminClient(self._client_config)
        self._ensure_topic()
        heartbeat = max(100, min(1000, self._session_ms // 3))
        consumer = Consumer(
            {
                **self._client_config,
                "group.id": self.group_id,
                "client.id": f"{CLIENT_ID_PREFIX} {self.url}",
                "session.timeout.ms": self._session_ms,
                "heartbeat.interval.ms": heartbeat,
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "latest",
                "error_cb": self._on_error,
                "on_commit": self._lease_answered,
            }
        )
        self._consumer = consumer
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"leadership-{self.group_id}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Leave the group (the partition goes to another member at once) and stop polling."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self._timeout_s)

    # -- the leader's URL -------------------------------------------------------------------

    def leader_url(self, timeout: float = 5.0) -> str | None:
        """The advertised URL of the member the coordinator assigned partition 0 (None when no
        member holds it, e.g. during a rebalance). One DescribeGroups request."""
        admin = self._admin
        if admin is None:
            return None
        futures = admin.describe_consumer_groups([self.group_id], request_timeout=timeout)
        description = futures[self.group_id].result(timeout=timeout)
        for member in description.members:
            partitions = member.assignment.topic_partitions if member.assignment else []
            if any(tp.topic == self.topic and tp.partition == 0 for tp in partitions):
                return url_of_client_id(member.client_id)
        return None

    # -- internals --------------------------------------------------------------------------

    def _ensure_topic(self) -> None:
        assert self._admin is not None
        metadata = self._admin.list_topics(timeout=self._timeout_s)
        if self.topic in metadata.topics and not metadata.topics[self.topic].error:
            count = len(metadata.topics[self.topic].partitions)
            if count != 1:
                raise ConnectError(
                    f"Leadership topic {self.topic} has {count} partitions; it needs exactly "
                    "one (one partition, one leader). Use another standby.leadership.topic."
                )
            return
        futures = self._admin.create_topics([NewTopic(self.topic, 1)])
        try:
            futures[self.topic].result(timeout=self._timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ConnectError(
                    f"Could not create leadership topic {self.topic}: {exc}"
                ) from exc

    def _wait_for_earlier_self(self) -> None:
        """Join only once no member of the group carries this worker's ``client.id``: an
        earlier process of this worker (killed, crashed, or restarted as a standby) that did
        not leave stays a member until its session expires, and a rebalance started by this
        join would wait for it that long, refusing the leader's lease commits all the while
        (the leader would hand over although nothing failed). Bounded by twice the session."""
        assert self._admin is not None
        client_id = f"{CLIENT_ID_PREFIX} {self.url}"
        deadline = time.monotonic() + 2 * self._session_ms / 1000.0
        waited = False
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                futures = self._admin.describe_consumer_groups([self.group_id], request_timeout=5)
                members = futures[self.group_id].result(timeout=10).members
            except Exception as exc:  # a group that does not exist yet, a slow broker
                log.debug("Could not describe the leadership group %s: %s", self.group_id, exc)
                return
            if not any(member.client_id == client_id for member in members):
                if waited:
                    log.info("This worker's earlier member left group %s: joining", self.group_id)
                return
            if not waited:
                log.info(
                    "Group %s still counts an earlier process of this worker (%s) as a member; "
                    "joining once the coordinator has expired it (at most "
                    "standby.session.timeout.ms)",
                    self.group_id,
                    self.url,
                )
                waited = True
            self._stop.wait(0.5)

    def _run(self) -> None:
        consumer = self._consumer
        next_lease = 0.0
        self._wait_for_earlier_self()
        consumer.subscribe(
            [self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )
        try:
            while not self._stop.is_set():
                consumer.poll(0.1)
                now = time.monotonic()
                if self.assigned and now >= next_lease:
                    next_lease = now + self._lease_s
                    self._renew_lease(consumer)
        except Exception:
            log.exception("Leadership group member of %s failed", self.group_id)
            if self.assigned:
                self.assigned = False
                self._on_deposed("the leadership group member failed")
        finally:
            try:
                consumer.close()  # leaves the group: revokes (on_revoke runs here) first
            except Exception as exc:
                log.warning("Closing the leadership group member: %s", exc)

    def _renew_lease(self, consumer: Any) -> None:
        """Send one lease commit (asynchronous: a slow coordinator does not hold up the next);
        its answer, served by ``poll`` on this thread, confirms the time it was sent."""
        now = time.monotonic()
        self._lease_seq += 1
        seq = self._lease_seq
        self._lease_sent[seq] = now
        lease = TopicPartition(self.topic, 0, 0, str(seq))  # the metadata names the commit
        try:  # offset 0 always: the topic stays empty, and the commit's check is what counts
            consumer.commit(offsets=[lease], asynchronous=True)
        except KafkaException as exc:
            del self._lease_sent[seq]
            self.last_lease_error = str(exc)
            log.warning("Could not send a lease commit to the group coordinator: %s", exc)
        # Answers that never come (a commit dropped by the client) must not pile up: anything
        # older than the session is worthless as a confirmation anyway.
        stale = now - 2 * self._session_ms / 1000.0
        for old in [n for n, sent in self._lease_sent.items() if sent < stale]:
            del self._lease_sent[old]

    @property
    def leases_unanswered(self) -> int:
        """Lease commits sent and not answered yet (diagnostics)."""
        return len(self._lease_sent)

    def _lease_answered(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """``on_commit``: each partition's metadata names the lease commit it answers."""
        for tp in partitions or []:
            metadata = tp.metadata or ""
            if tp.topic != self.topic or tp.partition != 0 or not metadata.isdigit():
                continue
            sent = self._lease_sent.pop(int(metadata), None)
            if sent is None:
                continue  # not a lease of this process (or given up as stale)
            error = err if err is not None else tp.error
            if error is not None:
                self.last_lease_error = str(error)
                log.warning("The group coordinator did not confirm this leader: %s", error)
            elif self.assigned:
                self.confirmed_at = max(self.confirmed_at, sent)
                self.last_lease_error = None
                late = time.monotonic() - sent
                if late > 2 * self._lease_s:
                    log.warning("The group coordinator confirmed this leader %.1f s late", late)

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        log.info(
            "Leadership group %s rebalanced: assigned %s (this worker %s)",
            self.group_id,
            [tp.partition for tp in partitions],
            "leads" if self.assigned else "stands by",
        )
        if any(tp.topic == self.topic and tp.partition == 0 for tp in partitions):
            self.confirmed_at = time.monotonic()  # the assignment itself is a confirmation
            self.assigned = True
            log.info("The group coordinator made this worker (%s) the leader", self.url)
            self._on_elected()

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self.assigned and any(tp.partition == 0 for tp in partitions):
            self.assigned = False
            self._on_deposed("the group coordinator revoked this worker's leadership")

    def _lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self.assigned:
            self.assigned = False
            self._on_deposed("this worker's leadership was lost (session expired)")

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            log.error("Fatal error of the leadership group member: %s", err)
        else:
            log.debug("Leadership group member: %s", err)
