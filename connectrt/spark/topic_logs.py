"""The topic logs Spark's driver and executors talk through (task signals, task status).

Both ends open a :class:`TopicLog` with the worker's own client settings and a short fetch
wait, so a record written on one side reaches the other within about a tenth of a second; a
reader follows its log with a :class:`LogTail`.
"""

from __future__ import annotations

import logging
from typing import Any

from connectrt.errors import ConnectError
from connectrt.periodic import Periodic
from connectrt.runtime.clients.settings import worker_clients
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.storage.kafka_log import RecordCallback, TopicLog

__all__ = ["LogTail", "spark_topic_log"]

log = logging.getLogger(__name__)

_FETCH_WAIT_MS = 100
_POLL_PAUSE_S = 0.1


def spark_topic_log(
    wc: WorkerConfig,
    topic: str,
    role: str,
    on_record: RecordCallback,
    **topic_options: Any,
) -> TopicLog:
    """A (not started) log over ``topic`` for the Spark side ``role`` (client ids
    ``connect-<role>-producer`` etc., consumer group ``connect-<role>``); ``topic_options``
    (``partitions``, ``replication_factor``) go to :class:`TopicLog` as they are."""
    clients = worker_clients(wc.bootstrap_servers, wc.originals, role, f"connect-{role}")
    clients.consumer["fetch.wait.max.ms"] = _FETCH_WAIT_MS
    return TopicLog(
        topic,
        clients.producer,
        clients.consumer,
        clients.admin,
        on_record,
        timeout=wc["worker.startup.timeout.ms"] / 1000.0,
        **topic_options,
    )


class LogTail:
    """Follows a :class:`TopicLog` on a daemon thread named ``name``, reading what is new every
    tenth of a second; ``what`` names its records in log lines.

    Lifecycle: :meth:`start` once, then :meth:`stop` once (also without a start). ``start``
    starts the log on the calling thread (it replays the topic to its end, with :attr:`live`
    still False, so the log's record callback can tell old records from new ones), then sets
    :attr:`live` and starts the thread. A read that fails is logged and tried again; nothing
    ends the thread but ``stop``, which also stops the log. Threading: the record callback runs
    on the caller of ``start`` during the replay, then on the tail's thread.
    """

    def __init__(self, topic_log: TopicLog, name: str, what: str) -> None:
        self.live = False
        self._log = topic_log
        self._what = what
        self._ticks = Periodic(name, self._read, _POLL_PAUSE_S, at_once=True)

    def start(self) -> None:
        self._log.start()
        self.live = True
        self._ticks.start()

    def _read(self) -> None:
        try:
            self._log.read_to_end()
        except ConnectError:
            log.warning("Reading %s from %s failed; retrying", self._what, self._log.topic)
        except Exception:
            log.exception("Error reading %s from %s", self._what, self._log.topic)

    def stop(self) -> None:
        self._ticks.stop(10)
        self._log.stop(1.0)
