"""The control topic: operators (or automation) steer connectors by producing JSON events.

Set the worker property ``control.topic`` to enable it. Each record value is one event::

    {"connector": "orders-sink", "action": "RESET_TO_TIME",
     "timestamp": "2026-11-22T10:00:00+00:00", "id": "ticket-4711"}

``action`` is one of ``STOP``, ``PAUSE``, ``RESUME``, ``RESTART``, ``RESET_TO_START``,
``RESET_TO_END`` and ``RESET_TO_TIME`` (which needs an ISO-8601 ``timestamp``). Each is applied
through the :class:`~connectrt.runtime.herder.herder.Herder` with exactly the semantics of the REST
call it mirrors:

==================  =====================================================================
STOP                ``PUT /connectors/{name}/stop``
PAUSE / RESUME      ``PUT /connectors/{name}/pause`` / ``resume``
RESTART             ``POST /connectors/{name}/restart?includeTasks=true&onlyFailed=false``
RESET_TO_START      ``POST /connectors/{name}/offsets/reset {"to": "earliest"}``
RESET_TO_END        ``POST /connectors/{name}/offsets/reset {"to": "latest"}``
RESET_TO_TIME       ``POST /connectors/{name}/offsets/reset {"to": "timestamp", ...}``
==================  =====================================================================

(a reset stops the connector, moves its offsets and resumes it if it was running).

Only events that arrive after the listener started are applied: at :meth:`start` the end of
every partition is pinned and consumption begins there (a restarted worker does not replay old
events). The listener starts right after the herder, so an event produced in the moment between
the worker reporting healthy and the listener pinning its positions is not applied; the log line
``Control topic ... listening from offsets ...`` marks the boundary. End offsets come from
:meth:`OffsetAdmin.latest` (partition EOF), never from ListOffsets LATEST, which the embedded
broker answers wrongly. The topic is read with ``assign()``: no consumer group, nothing
committed, every worker on the topic applies every event it sees.

Events are applied one at a time, in order, on the listener's thread. Outcomes:

* ``applied``: the herder carried the action out;
* ``rejected``: the event is not valid or the herder refused it as a client error would be
  refused over REST (malformed JSON, missing/unknown fields, bad timestamp, unknown connector,
  an action not allowed in the connector's state...: the 4xx family);
* ``failed``: the herder tried and failed (a 5xx over REST, e.g. the broker is unreachable).

An event is never retried and never stops the listener. Every event produces one log line
naming its ``id`` (INFO when applied, WARNING otherwise) and an entry in :meth:`outcomes` (the
last ``max_outcomes``), served by the REST API at ``GET /control/events``.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    NotFoundError,
)
from connectrt.runtime.clients.kafka import (
    KafkaConsumer,
    KafkaError,
    KafkaException,
    NewTopic,
    new_admin,
    new_consumer,
)
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.errors import BadRequestError, ConflictError, ForbiddenError
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.offsets.admin import OffsetAdmin

log = logging.getLogger(__name__)

__all__ = ["ACTIONS", "ControlTopicListener"]

ACTIONS = (
    "STOP",
    "PAUSE",
    "RESUME",
    "RESTART",
    "RESET_TO_START",
    "RESET_TO_END",
    "RESET_TO_TIME",
)
# Herder errors that REST answers with a 4xx: the event is refused, not failed.
_CLIENT_ERRORS = (
    NotFoundError,
    BadRequestError,
    ConfigError,
    ForbiddenError,
    ConflictError,
    AlreadyExistsError,
)
_TIMEOUT_S = 15.0


class _Rejected(Exception):
    """The event itself is invalid."""


class ControlTopicListener:
    """Consumes ``topic`` on a daemon thread and applies its events through ``herder``.

    ``consumer_config``/``admin_config`` carry the worker's client settings (security etc.);
    ``group.id`` is only a formality for librdkafka: partitions are assigned, never joined, and
    nothing is committed.
    """

    def __init__(
        self,
        herder: Herder,
        bootstrap_servers: str,
        topic: str,
        consumer_config: Mapping[str, Any] | None = None,
        *,
        admin_config: Mapping[str, Any] | None = None,
        offset_admin: OffsetAdmin | None = None,
        max_outcomes: int = 100,
        poll_timeout: float = 0.5,
    ) -> None:
        self.herder = herder
        self.topic = topic
        self._bootstrap = bootstrap_servers
        self._consumer_config: dict[str, Any] = {
            **dict(consumer_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"connectrt-control-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
        }
        self._admin_config: dict[str, Any] = {
            **dict(admin_config or {}),
            "bootstrap.servers": bootstrap_servers,
        }
        self._offset_admin = offset_admin or herder.offset_admin
        self._poll_timeout = poll_timeout
        self._outcomes: collections.deque[dict[str, Any]] = collections.deque(maxlen=max_outcomes)
        self._outcomes_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: KafkaConsumer | None = None
        self.start_offsets: dict[TopicPartition, int] = {}

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True once the start positions are pinned and the thread consumes."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def start(self) -> None:
        """Create the topic if needed (1 partition), pin each partition's end offset and start
        the listener thread. Raises :class:`ConnectError` when the topic cannot be used."""
        if self._thread is not None:
            raise ConnectError("The control topic listener was already started")
        self._ensure_topic()
        tps = self._offset_admin.partitions([self.topic])
        if not tps:
            raise ConnectError(f"Control topic {self.topic} has no partitions")
        self.start_offsets = self._offset_admin.latest(tps)
        consumer = new_consumer(self._consumer_config)
        try:
            consumer.assign(
                [
                    KafkaTopicPartition(tp.topic, tp.partition, o)
                    for tp, o in self.start_offsets.items()
                ]
            )
        except Exception:
            consumer.close()
            raise
        self._consumer = consumer
        self._thread = threading.Thread(
            target=self._run, name=f"control-topic-{self.topic}", daemon=True
        )
        self._thread.start()
        log.info(
            "Control topic %s: listening from offsets %s",
            self.topic,
            ", ".join(f"{tp.partition}@{o}" for tp, o in sorted(self.start_offsets.items())),
        )

    def stop(self, timeout: float = 60.0) -> None:
        """Stop after the event being applied (if any); idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning(
                    "Control topic %s: listener did not stop in %.0f s", self.topic, timeout
                )
                return  # the thread still owns the consumer; it closes it when it ends
        self._close_consumer()

    def _close_consumer(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except Exception:
                log.debug("Control topic %s: error closing the consumer", self.topic, exc_info=True)

    def _ensure_topic(self) -> None:
        admin = new_admin(self._admin_config)
        futures = admin.create_topics([NewTopic(self.topic, 1, -1)], request_timeout=_TIMEOUT_S)
        for future in futures.values():
            try:
                future.result(_TIMEOUT_S)
                log.info("Control topic %s created with 1 partition", self.topic)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                raise ConnectError(f"Could not create control topic {self.topic}: {e}") from e

    # -- outcomes ------------------------------------------------------------------------------
    def outcomes(self) -> list[dict[str, Any]]:
        """The most recent outcomes, oldest first (copies)."""
        with self._outcomes_lock:
            return [dict(o) for o in self._outcomes]

    def _record(self, outcome: dict[str, Any]) -> None:
        with self._outcomes_lock:
            self._outcomes.append(outcome)
        level = logging.INFO if outcome["outcome"] == "applied" else logging.WARNING
        log.log(
            level,
            "Control event id=%s (%s) %s: action=%s connector=%s: %s",
            outcome["id"],
            outcome["position"],
            outcome["outcome"],
            outcome["action"],
            outcome["connector"],
            outcome["message"],
        )

    # -- the thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                consumer = self._consumer
                if consumer is None:
                    break
                try:
                    messages = consumer.consume(100, self._poll_timeout)
                except Exception:
                    log.exception("Control topic %s: consume failed", self.topic)
                    self._stop.wait(1.0)
                    continue
                for msg in messages:
                    if self._stop.is_set():
                        break  # not applied; a restarted worker starts at the end anyway
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            log.warning("Control topic %s: %s", self.topic, err.str())
                        continue
                    self._handle(msg.value(), f"{msg.topic()}-{msg.partition()}@{msg.offset()}")
        finally:
            if self._stop.is_set():
                self._close_consumer()

    def _handle(self, raw: bytes | None, position: str) -> None:
        outcome: dict[str, Any] = {
            "id": None,
            "connector": None,
            "action": None,
            "received_at": datetime.now(UTC).isoformat(),
            "outcome": "rejected",
            "message": "",
            "position": position,
        }
        try:
            event = _parse(raw)
            outcome["id"] = _scalar(event.get("id"))
            outcome["connector"] = _scalar(event.get("connector"))
            outcome["action"] = _scalar(event.get("action"))
            name, action, when = _validate(event)
            outcome["message"] = self._apply(name, action, when)
            outcome["outcome"] = "applied"
        except _Rejected as e:
            outcome["message"] = str(e)
        except _CLIENT_ERRORS as e:
            outcome["message"] = str(e) or type(e).__name__
        except Exception as e:  # never let one event end the listener
            outcome["outcome"] = "failed"
            outcome["message"] = f"{type(e).__name__}: {e}"
            log.debug("Control event at %s failed", position, exc_info=True)
        self._record(outcome)

    def _apply(self, name: str, action: str, when: datetime | None) -> str:
        herder = self.herder
        if action == "STOP":
            herder.stop_connector(name)
            return "connector stopped"
        if action == "PAUSE":
            herder.pause(name)
            return "connector paused"
        if action == "RESUME":
            herder.resume(name)
            return "connector resumed"
        if action == "RESTART":
            herder.restart_connector(name, include_tasks=True, only_failed=False)
            return "connector and tasks restarted"
        if action == "RESET_TO_START":
            result = herder.offsets.rewind(name, "earliest")
        elif action == "RESET_TO_END":
            result = herder.offsets.rewind(name, "latest")
        else:
            result = herder.offsets.rewind(name, "timestamp", timestamp=when)
        return "offsets reset to " + json.dumps(result.get("offsets", []), default=str)


def _parse(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        raise _Rejected("empty event (null value)")
    try:
        event = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Rejected(f"malformed JSON: {e}") from None
    if not isinstance(event, dict):
        raise _Rejected("an event must be a JSON object")
    return event


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, default=str)


def _validate(event: Mapping[str, Any]) -> tuple[str, str, datetime | None]:
    name = event.get("connector")
    if not isinstance(name, str) or not name:
        raise _Rejected("'connector' must be a non-empty string")
    action = event.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise _Rejected(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    when = None
    if action == "RESET_TO_TIME":
        stamp = event.get("timestamp")
        if not isinstance(stamp, str):
            raise _Rejected("RESET_TO_TIME needs an ISO-8601 'timestamp' string")
        try:  # parsed exactly as POST /connectors/{name}/offsets/reset parses it
            when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            raise _Rejected(f"invalid ISO-8601 timestamp {stamp!r}") from None
    return name, action, when
