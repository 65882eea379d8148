"""ConnectorTopics over an in-memory status store: KIP-558 tracking and its two switches."""

from __future__ import annotations

import logging

import pytest

from connectrt.errors import NotFoundError
from connectrt.runtime.errors import ForbiddenError
from connectrt.runtime.herder.topics import ConnectorTopics
from connectrt.storage.status_store import MemoryStatusStore


def _require(name: str) -> None:
    if name != "c":
        raise NotFoundError(f"Connector {name} not found")


def test_records_lists_and_resets():
    topics = ConnectorTopics(MemoryStatusStore(), _require)
    topics.record("c", "orders", 0)
    topics.record("c", "orders", 1)
    topics.record("c", "users", 1)
    assert sorted(topics.active("c")) == ["orders", "users"]
    topics.reset("c")
    assert topics.active("c") == []
    with pytest.raises(NotFoundError):
        topics.active("nope")


def test_the_switches():
    disabled = ConnectorTopics(MemoryStatusStore(), _require, tracking=False)
    disabled.record("c", "orders", 0)
    with pytest.raises(ForbiddenError, match=r"^Topic tracking is disabled\.$"):
        disabled.active("c")
    no_reset = ConnectorTopics(MemoryStatusStore(), _require, allow_reset=False)
    with pytest.raises(ForbiddenError, match=r"^Topic tracking reset is disabled\.$"):
        no_reset.reset("c")


def test_a_failed_write_is_logged_not_raised(caplog: pytest.LogCaptureFixture):
    class Broken(MemoryStatusStore):
        def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None:
            raise RuntimeError("status topic unavailable")

    with caplog.at_level(logging.ERROR):
        ConnectorTopics(Broken(), _require).record("c", "orders", 0)
    assert "Could not record topic orders of connector c" in caplog.text
