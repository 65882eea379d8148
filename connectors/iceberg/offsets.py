"""Kafka offsets kept in Iceberg snapshot summaries: where the sink resumes after a crash.

Every snapshot the sink commits carries, per topic it wrote, one summary property
``kafka.connect.offsets.<topic>.<group>`` (as Apache Iceberg's connector names it; ``<group>``
is the connector's consumer group ``connect-<connector name>``, so two connectors writing one
table keep separate positions) whose value is a JSON object ``{"<partition>": <next offset>}``.

The value always holds *every* partition of the topic the connector ever committed to this
table, not only those of the committing task: a task reads the latest value, overwrites its
own partitions and writes the merged object (:func:`merged_properties`). Reading walks the
snapshot lineage from the current snapshot back to the first that has the property, since
other writers' snapshots (compaction, another connector) do not carry it.

Pure functions over pyiceberg ``Table`` objects; thread-safe as far as the table object is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["OFFSETS_PREFIX", "group_id", "merged_properties", "offsets_key", "read_offsets"]

OFFSETS_PREFIX = "kafka.connect.offsets."


def group_id(connector_name: str) -> str:
    """The consumer group of a sink connector, as Kafka Connect names it."""
    return f"connect-{connector_name}"


def offsets_key(topic: str, group: str) -> str:
    """The summary property holding ``topic``'s offsets for the connector of ``group``."""
    return f"{OFFSETS_PREFIX}{topic}.{group}"


def _lineage(table: Any) -> Iterable[Any]:
    """The current snapshot, then its parent, and so on (newest first)."""
    snapshot = table.current_snapshot()
    seen: set[int] = set()
    while snapshot is not None and snapshot.snapshot_id not in seen:
        seen.add(snapshot.snapshot_id)
        yield snapshot
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None


def read_offsets(table: Any, topics: Iterable[str], group: str) -> dict[tuple[str, int], int]:
    """The committed next offset per ``(topic, partition)`` of ``topics`` in ``table``."""
    wanted = {topic: offsets_key(topic, group) for topic in topics}
    out: dict[tuple[str, int], int] = {}
    for snapshot in _lineage(table):
        if not wanted:
            break
        summary = snapshot.summary
        for topic, key in list(wanted.items()):
            raw = summary.get(key) if summary is not None else None
            if raw is None:
                continue
            del wanted[topic]
            for partition, offset in json.loads(raw).items():
                out[(topic, int(partition))] = int(offset)
    return out


def merged_properties(
    table: Any, positions: Mapping[tuple[str, int], int], group: str
) -> dict[str, str]:
    """The summary properties of a commit that moves ``positions`` forward: for each topic
    in ``positions``, the table's latest offsets of the topic with these partitions replaced."""
    topics = {topic for topic, _ in positions}
    current = read_offsets(table, topics, group)
    current.update(positions)
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(current.items()):
        if topic in topics:
            by_topic.setdefault(topic, {})[str(partition)] = offset
    return {offsets_key(t, group): json.dumps(o, sort_keys=True) for t, o in by_topic.items()}


def set_offsets(
    table: Any, changes: Mapping[tuple[str, int], int | None], group: str, attempts: int = 20
) -> None:
    """Commit a snapshot without files whose offsets are the table's with ``changes``
    applied (None: forget the partition). Retries when another commit wins the race."""
    from pyiceberg.exceptions import CommitFailedException

    topics = {topic for topic, _ in changes}
    for attempt in range(attempts):
        current = read_offsets(table, topics, group)
        for tp, offset in changes.items():
            if offset is None:
                current.pop(tp, None)
            else:
                current[tp] = offset
        by_topic: dict[str, dict[str, int]] = {topic: {} for topic in topics}
        for (topic, partition), offset in sorted(current.items()):
            by_topic[topic][str(partition)] = offset
        properties = {
            offsets_key(t, group): json.dumps(o, sort_keys=True) for t, o in by_topic.items()
        }
        try:
            with (
                table.transaction() as tx,
                tx.update_snapshot(snapshot_properties=properties).fast_append(),
            ):
                pass
            return
        except CommitFailedException:
            if attempt == attempts - 1:
                raise
            table = table.refresh()
