"""A conformance suite every connector should pass; reuse it for your own connectors.

Subclass :class:`SourceConnectorConformance` or :class:`SinkConnectorConformance` in a test
module (the class name must start with ``Test``), set ``connector_class`` and implement the
hooks. The tests need the ``broker``, ``unique_name`` and ``tmp_path`` fixtures: add
``pytest_plugins = ["connectrt.testing.pytest_plugin"]`` to your ``conftest.py``.

What is checked:

* ``start``/``stop`` of the connector and of a task can be repeated (stop is idempotent);
* ``task_configs(n)`` never returns more than ``n`` configs;
* the config definition documents every key, and the sample config validates cleanly;
* a source resumes from its committed offsets after a restart: nothing lost, nothing repeated
  after a graceful stop;
* a sink's committed consumer offsets never pass what it had durably written when its
  ``pre_commit``/``flush`` returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api import (
    Connector,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    TopicPartition,
)
from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.tasks.runner import class_path
from connectrt.testing.contexts import (
    RecordingConnectorContext,
    RecordingSinkTaskContext,
    StandaloneSourceTaskContext,
)
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic

__all__ = ["SinkConnectorConformance", "SourceConnectorConformance"]

NameFactory = Callable[[str], str]


class _ConnectorConformance:
    connector_class: ClassVar[type[Connector]]
    tasks_max_values: ClassVar[tuple[int, ...]] = (1, 2, 3)

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        """A complete, valid connector config using ``topic``."""
        raise NotImplementedError

    def _started_connector(self, config: Mapping[str, str]) -> Connector:
        connector = self.connector_class()
        connector.initialize(RecordingConnectorContext())
        connector.start(config)
        return connector

    def test_connector_start_stop_is_repeatable(self, tmp_path: Path, unique_name: NameFactory):
        config = self.connector_config(tmp_path, unique_name("t"))
        for _ in range(2):
            connector = self._started_connector(config)
            connector.stop()
            connector.stop()

    def test_task_configs_respect_tasks_max(self, tmp_path: Path, unique_name: NameFactory):
        config = self.connector_config(tmp_path, unique_name("t"))
        connector = self._started_connector(config)
        try:
            for n in self.tasks_max_values:
                configs = connector.task_configs(n)
                assert 1 <= len(configs) <= n, f"task_configs({n}) returned {len(configs)}"
                assert all(
                    isinstance(k, str) and isinstance(v, str) for c in configs for k, v in c.items()
                )
        finally:
            connector.stop()

    def test_config_is_documented_and_sample_validates(
        self, tmp_path: Path, unique_name: NameFactory
    ):
        connector = self.connector_class()
        for key in connector.config_def().keys.values():
            assert key.documentation.strip(), f"config key {key.name} has no documentation"
        config = {
            "name": "conformance",
            "connector.class": class_path(self.connector_class),
            **self.connector_config(tmp_path, unique_name("t")),
        }
        # The connector under test is the plugin being tested: registered, as a worker would
        # have discovered it (a worker loads nothing that is not a discovered plugin), unless
        # the registry knows it already (a bundled connector keeps its Kafka name).
        try:
            registry.connector_class(class_path(self.connector_class))
        except ConfigError:
            registry.register_class(self.connector_class)
        result = validate_connector_config(config, registry, OverridePolicy("All"))
        assert result.error_messages() == []

    def test_task_start_stop_is_repeatable(self, tmp_path: Path, unique_name: NameFactory):
        config = self.connector_config(tmp_path, unique_name("t"))
        connector = self._started_connector(config)
        task_config = connector.task_configs(1)[0]
        connector.stop()
        task = connector.task_class()()
        if isinstance(task, SourceTask):
            task.initialize(StandaloneSourceTaskContext(task_config))
        elif isinstance(task, SinkTask):
            task.initialize(RecordingSinkTaskContext(task_config))
        task.start(task_config)
        task.stop()
        task.stop()


class SourceConnectorConformance(_ConnectorConformance):
    """Hooks: :meth:`connector_config`, :meth:`add_input` (and optionally :meth:`setup_input`)."""

    connector_class: ClassVar[type[SourceConnector]]

    def add_input(self, config: Mapping[str, str], start: int, count: int) -> None:
        """Make records number ``start`` .. ``start + count - 1`` available to the connector,
        each producing exactly one Kafka record."""
        raise NotImplementedError

    def test_resumes_from_committed_offsets(
        self, broker: EmbeddedBroker, tmp_path: Path, unique_name: NameFactory
    ):
        topic = unique_name("conformance-src")
        create_topic(broker.bootstrap_servers, topic, partitions=1)
        config = {
            "connector.class": f"{self.connector_class.__module__}."
            f"{self.connector_class.__qualname__}",
            **self.connector_config(tmp_path, topic),
        }
        self.add_input(config, 0, 50)

        def count() -> int:
            return sum(len(v) for v in read_topic(broker.bootstrap_servers, topic).values())

        harness = WorkerHarness(broker.bootstrap_servers).start()
        try:
            harness.start_connector("conformance-src", config)
            harness.wait_until(lambda: count() >= 50, 60, "first 50 records")
            harness.stop()  # graceful: commits the offsets of everything acknowledged
            self.add_input(config, 50, 30)
            harness.start()
            harness.start_connector("conformance-src", config)
            harness.wait_until(lambda: count() >= 80, 60, "30 more records after restart")
            harness.wait_until(
                lambda: (
                    sum(m.records_committed for m in harness.metrics("conformance-src").values())
                    >= 30
                ),
                60,
                "the offsets of the 30 records after the restart committed",
            )
        finally:
            harness.stop()
        assert count() == 80, "a graceful restart must neither lose nor repeat records"


class SinkConnectorConformance(_ConnectorConformance):
    """Hooks: :meth:`connector_config` (with ``topics``) and :meth:`written_count`."""

    connector_class: ClassVar[type[SinkConnector]]

    def written_count(self, config: Mapping[str, str]) -> int:
        """How many records the external system durably holds now."""
        raise NotImplementedError

    def test_committed_offsets_never_pass_flushed(
        self, broker: EmbeddedBroker, tmp_path: Path, unique_name: NameFactory
    ):
        topic = unique_name("conformance-sink")
        # The connector, and so its consumer group, is named after the run's topic: a fixed
        # name shared the group with every earlier run on the session's broker (another
        # suite's), and the join could then wait for members long gone.
        connector = topic
        create_topic(broker.bootstrap_servers, topic, partitions=2)
        config = self.connector_config(tmp_path, topic)
        observations: list[tuple[int, int]] = []  # (sum of offsets returned, written then)
        suite = self
        base_connector = self.connector_class
        base_task = self.connector_class().task_class()
        assert issubclass(base_task, SinkTask)

        def pre_commit(task: SinkTask, offsets: Mapping[TopicPartition, int]) -> Any:
            result = base_task.pre_commit(task, offsets)
            observations.append((sum(result.values()), suite.written_count(config)))
            return result

        task_cls = type(f"Observed{base_task.__name__}", (base_task,), {"pre_commit": pre_commit})
        connector_cls = type(
            f"Observed{base_connector.__name__}{uuid.uuid4().hex[:8]}",
            (base_connector,),
            {"task_class": lambda self: task_cls, "__module__": __name__},
        )
        registry.register_class(connector_cls, "sink")
        n = 200
        produce(
            broker.bootstrap_servers,
            topic,
            (
                b'{"schema":{"type":"string","optional":false},"payload":"r%d"}' % i
                for i in range(n)
            ),
            key=lambda i: b"k%d" % (i % 7),
        )
        with WorkerHarness(broker.bootstrap_servers) as harness:
            harness.start_connector(
                connector, {**config, "connector.class": connector_cls.__name__}
            )
            harness.wait_until(
                lambda: sum(m.records_committed for m in harness.metrics(connector).values()) >= n,
                120,  # a group join plus the records, on a machine busy with other work
                "all records committed",
            )
        assert observations, "pre_commit was never called"
        for returned, written in observations:
            assert returned <= written, (
                f"pre_commit returned offsets covering {returned} records while only {written} "
                "were durably written"
            )
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"connect-{connector}"}
        )
        try:
            committed = consumer.committed(
                [KafkaTopicPartition(topic, p) for p in range(2)], timeout=10
            )
        finally:
            consumer.close()
        total = sum(max(tp.offset, 0) for tp in committed)
        assert total == n
        assert self.written_count(config) >= total
