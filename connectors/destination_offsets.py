"""What a sink task whose destination stores the consumed offsets (the Iceberg tables, the JDBC
sink's offsets table) lets the runtime commit to Kafka: :func:`stored_offsets`.

Such a task resumes from its destination, not from the consumer group; the group's offsets
follow the destination's, so that tools reading the group see what is really written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connectrt.api import TopicPartition

__all__ = ["stored_offsets"]


def stored_offsets(
    asked: Iterable[TopicPartition], stored: Mapping[tuple[str, int], int]
) -> dict[TopicPartition, int]:
    """``pre_commit``'s answer: for each partition the runtime ``asked`` about, the offset the
    destination stores (``stored``, by ``(topic, partition)``); a partition with none stored
    is left out, so its group offset stays where it is."""
    return {
        tp: stored[(tp.topic, tp.partition)] for tp in asked if (tp.topic, tp.partition) in stored
    }
