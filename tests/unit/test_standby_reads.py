"""A standby answers connector reads from its copy of the config and status topics.

The stores are the in-memory ones (the same record handling as the Kafka-backed ones); the
answers are the REST shapes :func:`connectrt.rest.forwarding.local_read` builds from them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectrt.errors import NotFoundError
from connectrt.rest.forwarding import local_read
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.herder.standby_reads import StandbyReads
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.secrets.masking import SecretMasker
from connectrt.storage.config_store import MemoryConfigStore
from connectrt.storage.states import State, Status
from connectrt.storage.status_store import MemoryStatusStore

LEADER = "10.0.0.1:8083"


@pytest.fixture
def reads() -> Iterator[StandbyReads]:
    configs, statuses = MemoryConfigStore(), MemoryStatusStore()
    configs.put_connector_config(
        "db",
        {
            "name": "db",
            "connector.class": "FileStreamSource",
            "file": "in.txt",
            "topic": "t",
            "producer.override.sasl.jaas.config": "secret-jaas",
        },
    )
    configs.put_task_configs("db", [{"file": "in.txt"}, {"file": "in.txt"}])
    statuses.put(Status("db", None, State.RUNNING, LEADER))
    statuses.put(Status("db", 1, State.FAILED, LEADER, trace="boom"))
    statuses.put(Status("db", 0, State.RUNNING, LEADER))
    statuses.put(Status("db", 7, State.RUNNING, LEADER))  # beyond the task count: not shown
    reads = StandbyReads(configs, statuses, ConfigSecrets(registry, SecretMasker()), registry)
    reads.start()
    yield reads
    reads.stop()


def test_list_info_config_and_status_come_from_the_topics(reads: StandbyReads) -> None:
    assert local_read(reads, "/connectors", {}) == ["db"]
    info = local_read(reads, "/connectors/db", {})
    assert info["type"] == "source"
    assert info["tasks"] == [{"connector": "db", "task": 0}, {"connector": "db", "task": 1}]
    config = local_read(reads, "/connectors/db/config", {})
    assert config["file"] == "in.txt"
    assert config["producer.override.sasl.jaas.config"] == "[hidden]"
    status = local_read(reads, "/connectors/db/status", {})
    assert status["connector"] == {"state": "RUNNING", "worker_id": LEADER}
    assert [(t["id"], t["state"]) for t in status["tasks"]] == [(0, "RUNNING"), (1, "FAILED")]
    assert status["tasks"][1]["trace"] == "boom"
    both = local_read(reads, "/connectors", {"expand": ["status", "info"]})
    assert set(both["db"]) == {"status", "info"}


def test_unknown_connectors_are_404_and_other_paths_are_forwarded(reads: StandbyReads) -> None:
    with pytest.raises(NotFoundError, match="Connector nope not found"):
        local_read(reads, "/connectors/nope/config", {})
    for path in ("/connectors/db/offsets", "/connectors/db/tasks", "/connectors/db/topics"):
        assert local_read(reads, path, {}) is None
