"""Zombie fencing for exactly-once source connectors (KIP-618).

Before a new generation of an exactly-once source connector's tasks starts (the connector
started, or its task configs changed), every task of the previous generation must be unable to
commit: a task that lost contact but still runs (a zombie) would otherwise commit records and
offsets next to its replacement. :func:`fence_zombies` does what Kafka Connect's leader does
through ``Admin.fenceProducers``: for each transactional id ``<group.id>-<connector>-<task>``
of the previous generation it initializes a producer with that id, which bumps the id's epoch
(any producer with the older epoch is then fenced: its next transactional request fails with
PRODUCER_FENCED) and makes the coordinator abort the transaction such a zombie left open.
The caller then writes ``tasks-fencing-<name>`` ``{"task-count":N}`` to the config topic.
The worker does this whatever its ``task.executor``: with ``spark`` the driver fences before
it launches the new generation's Spark tasks, whose producers then take the next epoch of
each id (and so does every attempt Spark re-runs, fencing the attempt before it).

Called on the worker's thread that starts the tasks; it blocks for about one transaction
coordinator round trip per id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaException, new_producer
from connectrt.runtime.clients.settings import OverridePolicy, producer_config
from connectrt.runtime.config.exactly_once import transactional_id
from connectrt.runtime.config.worker import WorkerConfig

log = logging.getLogger(__name__)

__all__ = ["fence_zombies"]


def fence_zombies(
    wc: WorkerConfig, connector: str, tasks: Iterable[int], timeout_s: float = 30.0
) -> list[str]:
    """Fence the transactional producers of ``connector``'s ``tasks``; returns the ids fenced.

    Raises :class:`ConnectError` naming the id that could not be fenced.
    """
    fenced = []
    group = str(wc["group.id"])
    for task in tasks:
        tid = transactional_id(group, connector, task)
        config = producer_config(
            wc.bootstrap_servers,
            wc.originals,
            None,
            OverridePolicy("None"),
            f"connector-fencing-producer-{connector}-{task}",
        )
        config.update({"transactional.id": tid, "enable.idempotence": True, "acks": "all"})
        producer = new_producer(config)
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as e:
            detail = e.args[0].str() if e.args and hasattr(e.args[0], "str") else repr(e)
            raise ConnectError(
                f"Could not fence the zombie producers of connector {connector} "
                f"(transactional.id {tid}): {detail}"
            ) from e
        finally:
            producer.flush(0)
        fenced.append(tid)
    if fenced:
        log.info("Fenced the transactional producers %s of connector %s", fenced, connector)
    return fenced
