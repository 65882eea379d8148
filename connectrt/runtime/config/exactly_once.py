"""Exactly-once source support (KIP-618): whether a source task runs transactionally, and how.

:func:`exactly_once_settings` reads the worker's ``exactly.once.source.support`` and the
connector's ``transaction.boundary``, ``transaction.boundary.interval.ms`` and
``offsets.storage.topic`` into an :class:`ExactlyOnceSettings` (None: the task runs
at-least-once). :func:`check_exactly_once` adds the per-field validation errors Kafka Connect's
distributed herder gives: ``exactly.once.support=required`` on a worker without exactly-once
support or with a connector that does not declare it, and ``transaction.boundary=connector``
with a connector that cannot define boundaries.

The settings are the same whatever the worker's ``task.executor``: a task on a thread, in a
task process or on a Spark executor builds its transactional producer from them (through
:class:`~connectrt.runtime.executors.runner_factory.RunnerFactory`). On Spark, an attempt that Spark
re-runs (after a crash, or beside a lost executor's still-running Python worker) uses the
same ``transactional.id``, so its ``init_transactions()`` fences the older attempt and aborts
its open transaction before it reads the committed offsets: KIP-618's zombie fencing.

Pure functions over configs; safe from any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from connectrt.api.config import ConfigValue
from connectrt.api.connector import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
)
from connectrt.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = [
    "BOUNDARY_CONNECTOR",
    "BOUNDARY_INTERVAL",
    "BOUNDARY_POLL",
    "ExactlyOnceSettings",
    "check_exactly_once",
    "exactly_once_settings",
    "transactional_id",
    "worker_enabled",
]

WORKER_KEY = "exactly.once.source.support"
SUPPORT_KEY = "exactly.once.support"
BOUNDARY_KEY = "transaction.boundary"
INTERVAL_KEY = "transaction.boundary.interval.ms"
OFFSETS_TOPIC_KEY = "offsets.storage.topic"
BOUNDARY_POLL = "poll"
BOUNDARY_INTERVAL = "interval"
BOUNDARY_CONNECTOR = "connector"

_NOT_DECLARED = (
    "The connector does not implement the API required for preflight validation of "
    "exactly-once source support. Please consult the documentation for the connector to "
    "determine whether it supports exactly-once semantics, and then consider reconfiguring the "
    'connector to use the value "requested" for this property (which will disable this '
    "preflight check and allow the connector to be created)."
)
_UNSUPPORTED = (
    "The connector does not support exactly-once semantics with the provided configuration."
)
_WORKER_DISABLED = "This worker does not have exactly-once source support enabled."
_NO_BOUNDARIES = (
    "The connector does not support connector-defined transaction boundaries with the given "
    "configuration. Please reconfigure it to use a different transaction boundary definition."
)


class _Config(Protocol):
    """A worker config, parsed (:class:`~connectrt.runtime.config.worker.WorkerConfig`) or a
    plain mapping."""

    def get(self, key: str, default: Any = None) -> Any: ...


@dataclass(frozen=True)
class ExactlyOnceSettings:
    """How one source task runs exactly-once.

    ``transactional_id`` is its producer's ``transactional.id``; ``boundary`` one of
    ``poll``/``interval``/``connector``; ``interval_ms`` the commit interval for ``interval``;
    ``offsets_topic`` the topic its source offsets are written to inside each transaction and
    read from (read_committed). ``transaction_timeout_ms`` (the producer's
    ``transaction.timeout.ms``) and ``max_block_ms`` (its ``max.block.ms``, Java's bound on a
    blocking producer call) bound how long a commit rides out a broker outage
    (:mod:`connectrt.runtime.source.transactions`); both default to the clients' 60 s.
    """

    transactional_id: str
    boundary: str
    interval_ms: int
    offsets_topic: str
    transaction_timeout_ms: int = 60000
    max_block_ms: int = 60000


def transactional_id(group_id: str, connector: str, task: int) -> str:
    """Kafka Connect's task ``transactional.id``: ``<group.id>-<connector>-<task>``."""
    return f"{group_id}-{connector}-{task}"


def worker_enabled(worker: _Config) -> bool:
    """Whether a worker config (parsed or raw) has ``exactly.once.source.support=enabled``."""
    return str(worker.get(WORKER_KEY) or "disabled").strip().lower() == "enabled"


def exactly_once_settings(
    worker: _Config, connector_config: Mapping[str, str], connector: str, task: int
) -> ExactlyOnceSettings | None:
    """The task's exactly-once settings, or None when it runs at-least-once (the worker's
    support is not ``enabled``), on every ``task.executor``.

    ``worker`` is the worker config (its ``group.id``, ``offset.flush.interval.ms`` and
    ``offset.storage.topic`` are used).
    """
    if not worker_enabled(worker):
        return None
    if str(worker.get("offset.storage.type") or "kafka") != "kafka":
        raise ConfigError(
            "exactly.once.source.support=enabled needs offset.storage.type=kafka: source "
            "offsets are written to the offsets topic inside each transaction",
            WORKER_KEY,
        )
    boundary = (connector_config.get(BOUNDARY_KEY) or BOUNDARY_POLL).strip().lower()
    interval = connector_config.get(INTERVAL_KEY)
    interval_ms = int(interval) if interval else int(str(worker.get("offset.flush.interval.ms")))
    topic = (connector_config.get(OFFSETS_TOPIC_KEY) or "").strip() or str(
        worker.get("offset.storage.topic")
    )
    return ExactlyOnceSettings(
        transactional_id(str(worker.get("group.id")), connector, task),
        boundary,
        interval_ms,
        topic,
    )


def check_exactly_once(
    config: Mapping[str, str | None],
    values: dict[str, ConfigValue],
    connector: SourceConnector,
    worker_support: str | None,
) -> None:
    """Add the exactly-once validation errors of a source connector config to ``values``.

    ``worker_support`` is the worker's ``exactly.once.source.support`` (None when unknown: that
    check is skipped). Every ``task.executor`` runs source tasks transactionally, so the
    executor is not checked.
    """
    raw = {k: v for k, v in config.items() if v is not None}
    support = values.get(SUPPORT_KEY)
    if _is(support, "required"):
        assert support is not None
        if worker_support is not None and worker_support.strip().lower() != "enabled":
            support.errors.append(_WORKER_DISABLED)
        support.errors.extend(_connector_support_errors(connector, raw))
    boundary = values.get(BOUNDARY_KEY)
    if _is(boundary, BOUNDARY_CONNECTOR):
        assert boundary is not None
        boundary.errors.extend(_boundary_errors(connector, raw))


def _is(value: ConfigValue | None, expected: str) -> bool:
    """Whether a validated value without errors is ``expected`` (case-insensitively)."""
    if value is None or value.errors or value.value is None:
        return False
    return str(value.value).strip().lower() == expected


def _connector_support_errors(connector: SourceConnector, config: Mapping[str, str]) -> list[str]:
    try:
        answer = connector.exactly_once_support(config)
    except Exception as e:
        log.error(
            "Failed while validating connector support for exactly-once semantics", exc_info=True
        )
        return [_unexpected(e)]
    if answer == ExactlyOnceSupport.SUPPORTED:
        return []
    if answer is None:
        return [_NOT_DECLARED]
    if answer == ExactlyOnceSupport.UNSUPPORTED:
        return [_UNSUPPORTED]
    return [f"Unexpected value returned from SourceConnector.exactly_once_support: {answer!r}"]


def _boundary_errors(connector: SourceConnector, config: Mapping[str, str]) -> list[str]:
    try:
        answer = connector.can_define_transaction_boundaries(config)
    except Exception as e:
        log.error(
            "Failed while validating connector support for defining its own transaction boundaries",
            exc_info=True,
        )
        return [_unexpected(e)]
    if answer is None:
        return [
            "This connector has returned a null value from its "
            "can_define_transaction_boundaries method, which is not permitted. The connector "
            "will be treated as if it cannot define its own transaction boundaries, and cannot "
            "be configured with 'transaction.boundary' set to 'connector'."
        ]
    if answer != ConnectorTransactionBoundaries.SUPPORTED:
        return [_NO_BOUNDARIES]
    return []


def _unexpected(error: Exception) -> str:
    text = str(error).strip()
    if text:
        return f"An unexpected error occurred during validation: {text}"
    return (
        "An unexpected error occurred during validation; please see the worker logs for more "
        "details."
    )
