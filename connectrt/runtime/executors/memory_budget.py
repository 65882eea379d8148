"""The worker's memory budget for its tasks' Kafka clients (``worker.memory.budget.mb``).

What grows with the record rate in a worker is what librdkafka buffers: a source task's
producer queue (records produced, not yet acknowledged) and a sink task's prefetch (records
fetched, not yet consumed). Their librdkafka defaults (a 1 GiB producer queue, 64 MiB of
prefetch, 50 MiB fetches) let four busy tasks take well over a gigabyte. The budget is divided
evenly among the worker's tasks, and each task's clients are sized from its share
(:func:`client_settings`):

* a source task's producer: ``queue.buffering.max.kbytes`` = half the share, and
  ``queue.buffering.max.messages`` = the other half at ~:data:`BYTES_PER_QUEUED_MESSAGE` per
  message (librdkafka keeps ~200 bytes of bookkeeping per message on top of its payload, which
  for small records is most of the memory);
* a sink task's consumer: ``queued.max.messages.kbytes`` = half the share, ``fetch.max.bytes``
  = a quarter (a fetch response is added to the queue whole, so it may overshoot it by that
  much; never below ``message.max.bytes``, which librdkafka requires), and
  ``queued.min.messages`` (a per-partition message count) at the same bytes per message.

The share is ``budget / max(tasks, MIN_DIVISOR)``, where ``tasks`` is how many tasks the worker
runs when the task's runner is built: librdkafka cannot resize a running client, so a task
keeps its share until it restarts. Dividing by at least :data:`MIN_DIVISOR` keeps the first
tasks of a worker that grows one connector at a time from taking the whole budget; a worker
that later runs more tasks than that holds more than the budget until its earlier tasks
restart. A share is never below :data:`MIN_SHARE_BYTES` (a record of ``message.max.bytes``
must fit). Explicit client settings win: worker ``producer.*`` / ``consumer.*`` keys and
connector ``producer.override.*`` / ``consumer.override.*`` keys are never replaced.
``worker.memory.budget.mb=0`` turns the budget off (connectrt's fixed client defaults).

The budget covers the clients' buffers, not the whole process: the interpreter, the REST server
and the records a task holds in Python come on top (about 100 MB for a worker with a few
tasks; see docs/operators/running.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "BUDGET_KEY",
    "BYTES_PER_QUEUED_MESSAGE",
    "MIN_DIVISOR",
    "MIN_SHARE_BYTES",
    "apply_share",
    "client_settings",
    "task_share",
]

BUDGET_KEY: Final = "worker.memory.budget.mb"
MIN_DIVISOR: Final = 4
"""The budget is divided by at least this many tasks."""
MIN_SHARE_BYTES: Final = 4 << 20
"""No task's share is smaller (a 1 MB record, librdkafka's default maximum, must fit)."""
BYTES_PER_QUEUED_MESSAGE: Final = 256
"""What a queued message is reckoned to cost when a share is turned into message counts:
librdkafka's per-message bookkeeping plus a small record."""
_MESSAGE_MAX_BYTES_DEFAULT: Final = 1_000_000  # librdkafka's message.max.bytes default


def task_share(budget_mb: int, tasks: int) -> int | None:
    """The bytes of client buffers one task may hold: ``budget / max(tasks, MIN_DIVISOR)``,
    at least :data:`MIN_SHARE_BYTES`; None when the budget is off (``budget_mb`` 0)."""
    if budget_mb <= 0:
        return None
    return max(MIN_SHARE_BYTES, (budget_mb << 20) // max(tasks, MIN_DIVISOR))


def client_settings(kind: str, share: int, client_config: Mapping[str, Any]) -> dict[str, Any]:
    """The librdkafka settings sizing a task's ``producer`` or ``consumer`` (``kind``) to
    ``share`` bytes. ``client_config`` is the client's config so far (its
    ``message.max.bytes``, if set, bounds the fetch size from below)."""
    half = share // 2
    messages = max(1000, half // BYTES_PER_QUEUED_MESSAGE)
    if kind == "producer":
        return {
            "queue.buffering.max.kbytes": half >> 10,
            "queue.buffering.max.messages": messages,
        }
    if kind == "consumer":
        message_max = int(client_config.get("message.max.bytes", _MESSAGE_MAX_BYTES_DEFAULT))
        return {
            "queued.max.messages.kbytes": half >> 10,
            "fetch.max.bytes": max(share // 4, message_max),
            "queued.min.messages": messages,
        }
    raise ValueError(f"unknown client kind {kind!r}")


def apply_share(
    kind: str,
    client_config: dict[str, Any],
    share: int | None,
    explicit: Mapping[str, Any],
) -> dict[str, Any]:
    """``client_config`` with the settings of ``share`` (see :func:`client_settings`) where
    ``explicit`` (the keys a worker or connector config set for this client) sets none."""
    if share is None:
        return client_config
    for key, value in client_settings(kind, share, client_config).items():
        if key not in explicit:
            client_config[key] = value
    return client_config
