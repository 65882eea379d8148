"""``worker.memory.budget.mb``: each task's clients sized from its share, explicit settings
winning, and every sized config accepted by librdkafka itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from connectrt.api import SinkRecord, SinkTask, SourceRecord, SourceTask
from connectrt.runtime.clients.settings import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS, OverridePolicy
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.memory_budget import (
    BYTES_PER_QUEUED_MESSAGE,
    MIN_DIVISOR,
    MIN_SHARE_BYTES,
    apply_share,
    client_settings,
    task_share,
)
from connectrt.runtime.executors.runner_factory import RunnerFactory
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.sink.runner import SinkTaskRunner
from connectrt.runtime.source.runner import SourceTaskRunner
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.runner import TaskId
from connectrt.storage.offsets import MemoryOffsetStore

MiB = 1 << 20


class _Source(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


class _Sink(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        pass


def test_share_divides_the_budget_by_the_tasks_and_at_least_by_the_minimum():
    assert task_share(64, 1) == 64 * MiB // MIN_DIVISOR
    assert task_share(64, MIN_DIVISOR) == 64 * MiB // MIN_DIVISOR
    assert task_share(64, 8) == 8 * MiB
    assert task_share(64, 1000) == MIN_SHARE_BYTES  # never below the floor
    assert task_share(0, 4) is None  # the budget is off


def test_producer_and_consumer_settings_of_a_share():
    share = 16 * MiB
    assert client_settings("producer", share, {}) == {
        "queue.buffering.max.kbytes": 8192,
        "queue.buffering.max.messages": 8 * MiB // BYTES_PER_QUEUED_MESSAGE,
    }
    assert client_settings("consumer", share, {}) == {
        "queued.max.messages.kbytes": 8192,
        "fetch.max.bytes": 4 * MiB,
        "queued.min.messages": 8 * MiB // BYTES_PER_QUEUED_MESSAGE,
    }


def test_fetch_size_never_drops_below_message_max_bytes():
    """librdkafka refuses fetch.max.bytes below message.max.bytes."""
    assert client_settings("consumer", 2 * MiB, {})["fetch.max.bytes"] == 1_000_000
    big = client_settings("consumer", MIN_SHARE_BYTES, {"message.max.bytes": "5000000"})
    assert big["fetch.max.bytes"] == 5_000_000


def test_unknown_client_kind_is_an_error():
    with pytest.raises(ValueError, match="admin"):
        client_settings("admin", MiB, {})


def test_explicit_keys_are_kept_and_no_share_changes_nothing():
    cfg = {"queue.buffering.max.kbytes": 1}
    out = apply_share("producer", dict(cfg), 16 * MiB, {"queue.buffering.max.kbytes": "1"})
    assert out["queue.buffering.max.kbytes"] == 1
    assert out["queue.buffering.max.messages"] == 8 * MiB // BYTES_PER_QUEUED_MESSAGE
    assert apply_share("producer", dict(cfg), None, {}) == cfg


def _factory(tasks: int, **props: str) -> RunnerFactory:
    config = WorkerConfig.from_props({"bootstrap.servers": "127.0.0.1:1", **props})
    return RunnerFactory(
        config,
        PluginRegistry(),
        OverridePolicy("All"),
        MemoryOffsetStore(),
        StatusBoard("test"),
        lambda connector, topic, task: None,
        tasks=tasks,
    )


def _clients(factory: RunnerFactory, connector: Mapping[str, str]) -> tuple[Any, Any]:
    """The producer config of a source task and the consumer config of a sink task built by
    ``factory`` for ``connector``, after a real client was created from each."""
    source = factory.create_runner(TaskId("src", 0), _Source, {}, connector)
    sink = factory.create_runner(TaskId("snk", 0), _Sink, {}, {"topics": "t", **connector})
    assert isinstance(source, SourceTaskRunner) and isinstance(sink, SinkTaskRunner)
    producer_cfg, consumer_cfg = source._producer_config, sink._consumer_config
    Producer({**producer_cfg, "log_level": 0}).flush(0)  # librdkafka accepts the sizes
    Consumer({**consumer_cfg, "log_level": 0}).close()
    return producer_cfg, consumer_cfg


def test_the_runner_factory_sizes_task_clients_from_the_default_budget():
    producer, consumer = _clients(_factory(8), {})
    assert producer["queue.buffering.max.kbytes"] == 4096  # 64 MiB / 8 tasks / 2
    assert producer["queue.buffering.max.messages"] == 4 * MiB // BYTES_PER_QUEUED_MESSAGE
    assert consumer["queued.max.messages.kbytes"] == 4096
    assert consumer["fetch.max.bytes"] == 2 * MiB
    # What the budget does not size keeps connectrt's defaults.
    assert producer["linger.ms"] == PRODUCER_DEFAULTS["linger.ms"]
    assert consumer["fetch.queue.backoff.ms"] == CONSUMER_DEFAULTS["fetch.queue.backoff.ms"]


def test_worker_and_connector_client_settings_win_over_the_budget():
    factory = _factory(
        2,
        **{
            "worker.memory.budget.mb": "256",
            "producer.queue.buffering.max.kbytes": "1234",
            "consumer.fetch.max.bytes": "3000000",
        },
    )
    producer, consumer = _clients(
        factory,
        {
            "producer.override.queue.buffering.max.messages": "777",
            "consumer.override.queued.max.messages.kbytes": "555",
        },
    )
    assert producer["queue.buffering.max.kbytes"] == "1234"  # worker producer.*
    assert producer["queue.buffering.max.messages"] == "777"  # connector override
    assert consumer["fetch.max.bytes"] == "3000000"
    assert consumer["queued.max.messages.kbytes"] == "555"
    # The keys nobody set come from the share: 256 MiB / max(2, 4) tasks.
    assert consumer["queued.min.messages"] == 32 * MiB // BYTES_PER_QUEUED_MESSAGE


def test_a_budget_of_zero_keeps_the_fixed_client_defaults():
    producer, consumer = _clients(_factory(4, **{"worker.memory.budget.mb": "0"}), {})
    assert producer["queue.buffering.max.kbytes"] == PRODUCER_DEFAULTS["queue.buffering.max.kbytes"]
    assert consumer["fetch.max.bytes"] == CONSUMER_DEFAULTS["fetch.max.bytes"]
    assert "queued.min.messages" not in consumer


def test_a_negative_budget_is_refused():
    from connectrt.errors import ConfigError

    with pytest.raises(ConfigError, match=r"worker\.memory\.budget\.mb"):
        WorkerConfig.from_props({"worker.memory.budget.mb": "-1"})
