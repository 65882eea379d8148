"""connectors.destination_offsets.stored_offsets: pre_commit commits what the destination stores."""

from __future__ import annotations

from connectors.destination_offsets import stored_offsets
from connectrt.api import TopicPartition


def test_each_asked_partition_gets_its_stored_offset_and_one_without_is_left_out() -> None:
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    stored = {("a", 0): 17, ("b", 0): 3, ("c", 9): 5}
    assert stored_offsets([a0, a1, b0], stored) == {a0: 17, b0: 3}


def test_nothing_stored_commits_nothing() -> None:
    assert stored_offsets([TopicPartition("a", 0)], {}) == {}
