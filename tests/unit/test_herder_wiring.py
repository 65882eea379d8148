"""The herder and its worker as the process assembly wires them (issue 31, item 3): built
one way round over shared collaborators, and one create or update resolving its config once
and looking its connector class up once.

A real :class:`Herder` over a real :class:`Worker` (memory stores, memory offsets), with two
counters: a config provider counting its ``get`` calls (one per resolution of a config with one
reference) and a plugin registry counting ``connector_class`` lookups. The only stand-ins are
around them: an executor that records the tasks it is asked to start instead of running them
(no Kafka needed), and an offset admin that knows no cluster (validations skip the replication
factor check, as when Kafka does not answer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from connectrt.api.config import ConfigDef
from connectrt.api.connector import Connector, SinkConnector, SourceConnector
from connectrt.api.task import SinkTask, SourceTask, Task
from connectrt.process.assembly import assemble_herder
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.task_executor import TaskHandle, WorkerView
from connectrt.runtime.executors.worker_hooks import WorkerHooks
from connectrt.runtime.herder.herder import Herder
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.secrets.masking import SecretMasker
from connectrt.runtime.secrets.providers import ConfigData, ConfigProvider, ConfigProviders
from connectrt.runtime.status import State
from connectrt.runtime.worker.worker import Worker
from connectrt.storage.config_store import MemoryConfigStore
from connectrt.storage.offsets import MemoryOffsetStore
from connectrt.storage.status_store import MemoryStatusStore

SECRET = "s3cr3t-path-from-the-vault"
REFERENCE = "${vault:connectors:path}"


class CountingProvider(ConfigProvider):
    """One value, ``path``, under ``connectors``; counts every lookup."""

    def __init__(self) -> None:
        self.gets = 0

    def configure(self, params: Mapping[str, str]) -> None:
        return None

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        self.gets += 1
        return ConfigData({"path": SECRET})

    def close(self) -> None:
        return None


class CountingRegistry(PluginRegistry):
    """The plugin registry, counting connector class lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def connector_class(self, name: str, version: str | None = None) -> type[Connector]:
        self.lookups += 1
        return super().connector_class(name, version)


class _Task(SinkTask):
    def start(self, config: Mapping[str, str]) -> None: ...

    def put(self, records: Any) -> None: ...

    def stop(self) -> None: ...


class _SourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None: ...

    def poll(self) -> None:
        return None

    def stop(self) -> None: ...


class _OneTask:
    """A connector of one task whose config carries the connector's ``path``."""

    _config: dict[str, str]

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None: ...

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"path": self._config.get("path", "")}]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class WiringSink(_OneTask, SinkConnector):
    def task_class(self) -> type[Task]:
        return _Task


class WiringSource(_OneTask, SourceConnector):
    def task_class(self) -> type[Task]:
        return _SourceTask


class RecordingExecutor:
    """Records the tasks the worker asks it to start (resolved task configs); runs none."""

    def __init__(self) -> None:
        self.started: dict[str, list[dict[str, str]]] = {}

    def start_tasks(
        self,
        worker: WorkerView,
        connector: str,
        tasks: list[tuple[int, dict[str, str]]],
        on_failure: Callable[[Any], None],
    ) -> dict[int, TaskHandle]:
        self.started[connector] = [config for _, config in tasks]
        return {}

    def stop(self) -> None:
        return None


class NoCluster(OffsetAdmin):
    """An offset admin with no Kafka behind it: the broker count is unknown."""

    def broker_count(self, timeout_s: float = 0.0) -> int | None:
        return None


class Wired:
    def __init__(self) -> None:
        self.provider = CountingProvider()
        self.registry = CountingRegistry()
        for cls in (WiringSink, WiringSource):
            self.registry.register_class(cls)
        wc = WorkerConfig.from_props(
            {"offset.storage.type": "memory", "bootstrap.servers": "localhost:9"}
        )
        secrets = ConfigSecrets(
            self.registry, SecretMasker(), ConfigProviders({"vault": self.provider})
        )
        self.config_store = MemoryConfigStore()
        self.status_store = MemoryStatusStore()
        self.herder: Herder = assemble_herder(
            wc,
            self.registry,
            self.config_store,
            self.status_store,
            NoCluster("localhost:9"),
            secrets,
        )
        self.executor = RecordingExecutor()
        self.herder.worker.executor = self.executor
        self.herder.start()

    def counts(self, act: Callable[[], object]) -> tuple[int, int]:
        """``(resolutions, class lookups)`` while ``act`` runs."""
        gets, lookups = self.provider.gets, self.registry.lookups
        act()
        return self.provider.gets - gets, self.registry.lookups - lookups


@pytest.fixture
def wired() -> Iterator[Wired]:
    w = Wired()
    try:
        yield w
    finally:
        w.herder.stop()


def _sink(name: str) -> dict[str, str]:
    return {"connector.class": "WiringSink", "topics": "orders", "path": REFERENCE}


def test_a_create_resolves_its_config_once_and_looks_its_class_up_once(wired: Wired):
    # The first config of a class also fills the secrets' definition cache (one lookup per
    # class name, not per create).
    assert wired.counts(lambda: wired.herder.create_connector("a", _sink("a"))) == (1, 2)
    assert wired.counts(lambda: wired.herder.create_connector("b", _sink("b"))) == (1, 1)

    worker = wired.herder.worker
    assert worker.status.connector("b").state is State.RUNNING  # type: ignore[union-attr]
    assert worker.resolved_config("b")["path"] == SECRET  # the create's resolution, used
    assert wired.executor.started["b"] == [
        {"path": SECRET, "task.class": f"{_Task.__module__}._Task", "topics": "orders"}
    ]
    # The task configs went to the config store through the worker's own collaborators, with
    # the reference put back (the create's resolution told which value it came from).
    stored = wired.config_store.snapshot().task_configs["b"]
    assert [dict(c)["path"] for c in stored] == [REFERENCE]
    assert wired.herder.connector_info("b").type == "sink"


def test_an_update_resolves_once_and_looks_up_once(wired: Wired):
    wired.herder.create_connector("a", _sink("a"))
    changed = {**_sink("a"), "tasks.max": "1", "topics": "orders,returns"}
    assert wired.counts(lambda: wired.herder.put_connector_config("a", changed)) == (1, 1)
    assert wired.herder.worker.resolved_config("a")["topics"] == "orders,returns"


def test_a_create_with_initial_offsets_resolves_once_and_looks_up_once(wired: Wired):
    wired.herder.create_connector("warm", {"connector.class": "WiringSource", "path": "p"})
    config = {"connector.class": "WiringSource", "path": REFERENCE}
    offsets = [{"partition": {"file": "a"}, "offset": {"position": 7}}]
    assert wired.counts(
        lambda: wired.herder.create_connector("s", config, initial_offsets=offsets)
    ) == (1, 1)
    assert wired.herder.offsets.get("s") == offsets
    assert wired.herder.worker.resolved_config("s")["path"] == SECRET
    assert wired.executor.started["s"][0]["path"] == SECRET


def test_a_restart_resolves_again(wired: Wired):
    """Only the start a create asks for reuses its resolution: a restart picks up a rotated
    secret."""
    wired.herder.create_connector("a", _sink("a"))
    assert wired.counts(lambda: wired.herder.restart_connector("a"))[0] == 1


def test_the_worker_reaches_the_stores_through_its_collaborators(wired: Wired):
    hooks = wired.herder.worker.hooks
    wired.herder.create_connector("a", _sink("a"))
    hooks.on_topic("a", "orders", 0)
    assert wired.herder.topics.active("a") == ["orders"]
    hooks.on_task_count("a", 3)
    assert hooks.task_count("a") == 3
    assert wired.config_store.snapshot().task_counts["a"] == 3


def test_a_worker_that_validates_resolves_once():
    """``Worker.start_connector`` validating itself (the test harness's path) resolves the
    config once too and looks the class up once (the validation's)."""
    provider = CountingProvider()
    registry = CountingRegistry()
    registry.register_class(WiringSink)
    secrets = ConfigSecrets(registry, SecretMasker(), ConfigProviders({"vault": provider}))
    executor = RecordingExecutor()
    worker = Worker(
        WorkerConfig.from_props({"offset.storage.type": "memory"}),
        MemoryOffsetStore(),
        registry,
        hooks=WorkerHooks(secrets=secrets),
        executor=executor,
    )
    worker.start()
    try:
        secrets.definition({"connector.class": "WiringSink"})  # the per-class cache, filled
        lookups = registry.lookups
        worker.start_connector("a", _sink("a"))
        assert (provider.gets, registry.lookups - lookups) == (1, 1)
        assert executor.started["a"][0]["path"] == SECRET
    finally:
        worker.stop()
