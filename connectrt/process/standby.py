"""``connectrt worker`` in a standby cluster: lead when the group coordinator says so, else wait.

With ``standby.enable=true`` (:mod:`connectrt.runtime.config.standby`) the worker process
(:class:`~connectrt.process.assembly.WorkerProcess`) does not start its herder at once:

1. the REST listener opens (a standby answers connector reads from its own copy of the config
   and status topics and forwards everything else to the leader:
   :mod:`connectrt.rest.forwarding`) and the worker joins the leadership group
   (:class:`~connectrt.runtime.herder.leadership.Leadership`) under its advertised URL;
2. once elected, the herder starts as a single worker's does, except that instead of the
   single-worker guard it takes the ``transactional.id`` of the config, status and offsets
   topics' writers (:class:`~connectrt.runtime.herder.leadership.LeaderFence`), fencing the
   previous leader's writes to all three;
3. once deposed (revoked, session lost, self-fenced, fenced), it **restarts its own process
   image** at once (``os.execv`` with the original command line): every connector and task
   ends that instant, nothing more is written (no graceful stop: no status, offset or data
   flush, exactly as after ``kill -9``, which the runtime already survives), and the worker
   comes back as a fresh standby with nothing of the old leader's state in memory. Its process
   id stays the same; task processes of ``task.executor=process`` end with their lifeline.
4. on SIGTERM/SIGINT a leader stops its herder first and only then leaves the group, so its
   successor starts the tasks after they have stopped here (a planned hand-over takes about a
   second plus the successor's start).

Threading: :meth:`StandbyWorker.run` blocks on the caller's thread; election and deposition run
on the :class:`Leadership`'s threads.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from connectrt.listener.server import HttpServer
from connectrt.runtime.clients.leader_group import LeaderGroupMember
from connectrt.runtime.clients.settings import worker_clients
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.herder.leadership import LEADER, LeaderFence, Leadership
from connectrt.runtime.herder.standby_reads import StandbyReads
from connectrt.storage.config_store import ConfigStore
from connectrt.storage.kafka_status import KafkaStatusStore

__all__ = ["StandbyWorker", "WorkerProcess", "advertised_url", "restart_process"]

log = logging.getLogger(__name__)


def advertised_url(wc: WorkerConfig, worker_id: str) -> str:
    """The URL other workers forward to: the first listener's scheme and the worker id
    (``rest.advertised.host.name`` and ``rest.advertised.port``, else the listener's)."""
    scheme = urlsplit(wc["listeners"][0]).scheme or "http"
    return f"{scheme}://{worker_id}"


def restart_process() -> None:
    """Replace this process by a fresh run of the same command line (same pid)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    log.warning("Restarting this worker as a standby")
    for handler in logging.getLogger().handlers:
        handler.flush()
    os.execv(sys.executable, list(sys.orig_argv))


class WorkerProcess(Protocol):
    """What this module runs of :class:`connectrt.process.assembly.WorkerProcess`."""

    herder: Herder
    rest: HttpServer
    control: Any  # a ControlTopicListener, or None
    registry: Any  # a SchemaRegistryServer, or None
    prepare: Callable[[], None] | None  # run once elected, before the herder starts

    def start_rest(self) -> None: ...
    def start_herder(
        self, initial: Sequence[tuple[str, Mapping[str, str], str | None]]
    ) -> None: ...
    def stop_herder(self) -> None: ...


class StandbyWorker:
    """Runs one :class:`WorkerProcess` as a member of a standby cluster (see the module).
    ``stores`` builds a fresh config and status store pair over the cluster's topics for the
    standby's own REST reads (None: a standby forwards reads too); ``restart`` replaces the
    process after a deposition (tests of this class in-process pass their own)."""

    def __init__(
        self,
        process: WorkerProcess,
        stores: Callable[[], tuple[ConfigStore, KafkaStatusStore]] | None = None,
        restart: Callable[[], None] = restart_process,
    ) -> None:
        self.process = process
        self._stores = stores
        self._restart = restart
        herder = process.herder
        wc = herder.config
        self._session_ms: int = wc["standby.session.timeout.ms"]
        self._margin_ms: int = wc["standby.fence.margin.ms"]
        clients = worker_clients(wc.bootstrap_servers, wc.originals, "leadership", "leadership")
        client_config = {**clients.admin, "bootstrap.servers": wc.bootstrap_servers}
        group = f"{wc['group.id']}-leadership"
        topic = wc["standby.leadership.topic"]

        def new_member(
            url: str, on_elected: Callable[[], None], on_deposed: Callable[[str], None]
        ) -> LeaderGroupMember:
            return LeaderGroupMember(
                client_config,
                group,
                topic,
                url,
                self._session_ms,
                on_elected,
                on_deposed,
                timeout_s=wc["worker.startup.timeout.ms"] / 1000.0,
            )

        self.leadership = Leadership(
            wc["group.id"],
            new_member,
            (self._session_ms - self._margin_ms) / 1000.0,
            self._start_leading,
            self._stop_leading,
        )
        guard = herder.guard
        if isinstance(guard, LeaderFence):
            guard.on_fenced = self._fenced
        herder.leadership = self.leadership  # type: ignore[attr-defined]  # read by the REST app
        self._herder_started = threading.Event()
        self._stopped = threading.Event()

    def run(self, stop: threading.Event) -> None:
        """Serve REST, join the group and follow its decisions until ``stop`` is set; then stop
        the herder (if leading) before leaving the group."""
        process = self.process
        process.start_rest()
        url = advertised_url(process.herder.config, process.herder.worker.status.worker_id)
        try:
            self._start_reads()
            self.leadership.start(url)
            log.info("connectrt worker standing by in cluster %s; REST API at %s", url, url)
            stop.wait()
        finally:
            self._stopped.set()
            try:
                if self.leadership.role == LEADER or self._herder_started.is_set():
                    process.stop_herder()
            finally:
                self.leadership.close()
                self._stop_reads()
                process.rest.stop()

    # -- leadership callbacks (the Leadership's threads) --------------------------------------

    def _start_leading(self) -> None:
        process = self.process
        if self._stopped.is_set():
            return
        self._stop_reads()
        self._herder_started.set()
        process.start_herder(())  # its prepare: e.g. the Spark application of task.executor=spark
        log.info("This worker leads; it runs %d connectors", len(process.herder.connectors()))

    def _start_reads(self) -> None:
        if self._stores is None:
            return
        herder = self.process.herder
        try:
            config_store, status_store = self._stores()
            status_store.follow = True
            reads = StandbyReads(config_store, status_store, herder.secrets, herder.registry)
            reads.start()
        except Exception as exc:
            log.warning("A standby reads nothing itself (it forwards reads): %s", exc)
            return
        self.leadership.reads = reads

    def _stop_reads(self) -> None:
        reads, self.leadership.reads = self.leadership.reads, None
        if reads is not None:
            reads.stop()

    def _fenced(self, reason: str) -> None:
        self.leadership.depose(reason)

    def _stop_leading(self, reason: str) -> None:
        """Deposed: end every connector and task at once by restarting the process image (no
        graceful stop: nothing more is written, as after ``kill -9``; a planned stop is
        SIGTERM's, which is graceful)."""
        if self._stopped.is_set():
            return  # the process is stopping anyway
        log.error("Ending this worker's connectors and tasks now (%s)", reason)
        self._restart()
