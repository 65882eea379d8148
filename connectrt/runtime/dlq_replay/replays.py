"""Dead letter queue replays: the herder's collaborator behind ``/connectors/{name}/dlq/replay``.

:class:`DlqReplays` checks a replay request against the connector (it exists, is a sink or a
source, has ``errors.deadletterqueue.topic.name``), builds the run from the connector's
current config (client overrides, converters, transforms) and runs it on a thread of its own
(:class:`~connectrt.runtime.dlq_replay.run.ReplayRun`); it keeps the latest run of each
connector for the progress endpoint. One run per connector at a time: another request while
one is RUNNING or AWAITING_SINK is a conflict. :func:`replay_request` reads a request body.

Each connector's replays share one consumer group, ``connectrt-dlq-replay-<connector>``, whose
committed offsets are where the next run starts.

Lifecycle: built once per herder; :meth:`DlqReplays.close` (the herder's stop) cancels the
runs and waits a little for them. Threading: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from connectrt.errors import ConfigError, NotFoundError
from connectrt.runtime.clients.settings import OverridePolicy, consumer_config, producer_config
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.dlq_replay.progress import ReplayProgress, ReplayRequest, ReplayStatus
from connectrt.runtime.dlq_replay.run import ReplayClients, ReplayRun, ReplayTarget
from connectrt.runtime.dlq_replay.source_replay import SourceRecordReplayer
from connectrt.runtime.errors import BadRequestError, ConflictError
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.tasks.error_handling import ErrorPolicy

log = logging.getLogger(__name__)

__all__ = ["DlqReplays", "replay_group", "replay_request"]

_FIELDS = ("from", "to", "dry_run", "max_replays")


def replay_group(connector: str) -> str:
    """The consumer group holding the DLQ position of ``connector``'s replays."""
    return f"connectrt-dlq-replay-{connector}"


_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant ISO-8601 can write


def _timestamp_ms(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_MS:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value.strip()) <= _MAX_MS:
        return int(value.strip())
    if isinstance(value, str) and value.strip():
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            # Kafka timestamps start at the epoch: an earlier time selects from the first.
            return min(max(0, int(when.timestamp() * 1000)), _MAX_MS)
    raise BadRequestError(
        f"Invalid '{name}' timestamp {value!r}: expected an ISO-8601 date-time (e.g. "
        "2026-11-22T10:00:00Z; UTC when no offset is given) or epoch milliseconds"
    )


def replay_request(body: Any) -> ReplayRequest:
    """A :class:`ReplayRequest` from a JSON body ``{"from", "to", "dry_run", "max_replays"}``
    (every field optional). Raises :class:`BadRequestError` naming what is wrong."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise BadRequestError("The replay request must be a JSON object")
    unknown = sorted(set(body) - set(_FIELDS))
    if unknown:
        raise BadRequestError(
            f"Unknown field(s) in the replay request: {', '.join(unknown)} (known: "
            f"{', '.join(_FIELDS)})"
        )
    from_ms = _timestamp_ms("from", body.get("from"))
    to_ms = _timestamp_ms("to", body.get("to"))
    if from_ms is not None and to_ms is not None and from_ms >= to_ms:
        raise BadRequestError(f"'from' ({body['from']}) must be before 'to' ({body['to']})")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadRequestError("'dry_run' must be true or false")
    max_replays = body.get("max_replays")
    if max_replays is not None and (
        not isinstance(max_replays, int) or isinstance(max_replays, bool) or max_replays < 1
    ):
        raise BadRequestError("'max_replays' must be a positive integer")
    return ReplayRequest(from_ms, to_ms, dry_run, max_replays)


class DlqReplays:
    """See the module docstring. ``resolved_config(name)`` is a connector's config with its
    provider references resolved; ``require(name)`` raises NotFoundError for an unknown
    connector; ``connector_type(name)`` is ``sink``, ``source`` or ``unknown``."""

    def __init__(
        self,
        worker_config: WorkerConfig,
        plugins: PluginRegistry,
        policy: OverridePolicy,
        offset_admin: OffsetAdmin,
        require: Callable[[str], None],
        connector_type: Callable[[str], str],
        resolved_config: Callable[[str], dict[str, str]],
        await_timeout_s: float = 600.0,
    ) -> None:
        self._worker_config = worker_config
        self._plugins = plugins
        self._policy = policy
        self._offset_admin = offset_admin
        self._require = require
        self._connector_type = connector_type
        self._resolved_config = resolved_config
        self._await_timeout_s = await_timeout_s
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[ReplayRun, threading.Thread]] = {}

    def _exists(self, name: str) -> bool:
        try:
            self._require(name)
        except NotFoundError:
            return False
        return True

    def start(self, name: str, request: ReplayRequest) -> ReplayStatus:
        """Start replaying connector ``name``'s DLQ; returns the new run's first status."""
        self._require(name)
        kind = self._connector_type(name)
        if kind not in ("sink", "source"):
            raise BadRequestError(
                f"Connector {name} is neither a sink nor a source connector (its class does "
                "not load?): its dead letter queue cannot be replayed"
            )
        config = self._resolved_config(name)
        errors = ErrorPolicy.from_config(config)
        if not errors.dlq_topic:
            raise BadRequestError(
                f"Connector {name} has no dead letter queue: "
                "errors.deadletterqueue.topic.name is not set"
            )
        target = self._target(name, kind, errors, config)
        with self._lock:
            current = self._runs.get(name)
            if current is not None and current[0].progress.state.active:
                status = current[0].progress.snapshot()
                raise ConflictError(
                    f"A replay of the dead letter queue of connector {name} is already "
                    f"{status.state.value} (run {status.id}); wait for it or cancel it"
                )
            run = self._build(name, target, request, config)
            thread = threading.Thread(
                target=run.run, name=f"dlq-replay-{name}-{run.progress.id}", daemon=True
            )
            self._runs[name] = (run, thread)
            thread.start()
        log.info(
            "Replaying the dead letter queue %s of connector %s (run %s, %s)",
            target.dlq_topic,
            name,
            run.progress.id,
            request,
        )
        return run.progress.snapshot()

    def _target(
        self, name: str, kind: str, errors: ErrorPolicy, config: Mapping[str, str]
    ) -> ReplayTarget:
        topics = frozenset(t.strip() for t in config.get("topics", "").split(",") if t.strip())
        pattern = None
        if config.get("topics.regex", "").strip():
            try:
                pattern = re.compile(config["topics.regex"].strip())
            except re.error as e:  # pragma: no cover - refused when the connector was created
                raise ConfigError(f"Invalid topics.regex: {e}", "topics.regex") from e
        return ReplayTarget(
            name, kind, errors.dlq_topic, errors.dlq_context_headers, topics, pattern
        )

    def _build(
        self, name: str, target: ReplayTarget, request: ReplayRequest, config: dict[str, str]
    ) -> ReplayRun:
        wc = self._worker_config
        client_id = f"connectrt-dlq-replay-{name}"
        clients = ReplayClients(
            consumer_config=consumer_config(
                wc.bootstrap_servers,
                wc.originals,
                config,
                self._policy,
                client_id,
                replay_group(name),
            ),
            producer_config=producer_config(
                wc.bootstrap_servers, wc.originals, config, self._policy, client_id
            ),
            offset_admin=self._offset_admin,
            await_timeout_s=self._await_timeout_s,
        )
        replayer = None
        if target.connector_type == "source":
            replayer = SourceRecordReplayer.for_connector(wc, self._plugins, config)
        progress = ReplayProgress(
            id=uuid.uuid4().hex[:12],
            connector=name,
            connector_type=target.connector_type,
            dlq_topic=target.dlq_topic,
            group=replay_group(name),
            request=request,
        )
        return ReplayRun(progress, target, clients, replayer, lambda: self._exists(name))

    def status(self, name: str) -> ReplayStatus:
        """The latest run of connector ``name`` (NotFoundError when it has none)."""
        self._require(name)
        with self._lock:
            current = self._runs.get(name)
        if current is None:
            raise NotFoundError(
                f"No dead letter queue replay of connector {name} since this worker started"
            )
        return current[0].progress.snapshot()

    def cancel(self, name: str) -> ReplayStatus:
        """Stop connector ``name``'s running replay after the batch in hand (committed)."""
        self._require(name)
        with self._lock:
            current = self._runs.get(name)
        if current is None or not current[0].progress.state.active:
            raise ConflictError(f"No dead letter queue replay of connector {name} is running")
        current[0].stop()
        return current[0].progress.snapshot()

    def close(self, timeout_s: float = 10.0) -> None:
        """Cancel every run and wait up to ``timeout_s`` in all for their threads."""
        with self._lock:
            runs = list(self._runs.values())
        for run, _ in runs:
            run.stop()
        for _, thread in runs:
            thread.join(timeout_s / max(1, len(runs)))
