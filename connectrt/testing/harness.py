"""Run connectors in-process against a real broker, from pytest or a script.

:class:`WorkerHarness` wraps a :class:`~connectrt.runtime.worker.worker.Worker` with test-friendly
defaults (fast group joins, short commit interval, a private offsets topic) and small helpers to
produce to and read from topics and to wait for states. Restarting the harness keeps its offsets
topic, so a source connector resumes from what it committed.

The waits default to 60 s and name what they wait for: a sink's consumer group join alone can
take half of ``session.timeout.ms`` on a busy machine. A test should still stop the harness in
a ``finally`` (or use it as a context manager) so a failed assertion leaves nothing running.

Not thread-safe: drive one harness from one test thread.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.offsets.stores import create_offset_store
from connectrt.runtime.plugins.registry import PluginRegistry, registry
from connectrt.runtime.status import State, Status, TargetState
from connectrt.runtime.worker.worker import Worker
from connectrt.testing.worker_defaults import test_worker_settings

__all__ = ["WorkerHarness", "create_topic", "read_topic"]

TEST_WORKER_DEFAULTS: dict[str, str] = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "offset.flush.interval.ms": "1000",
    "offset.storage.partitions": "5",
    "task.shutdown.graceful.timeout.ms": "10000",
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "500",
    "worker.startup.timeout.ms": "15000",
}


def create_topic(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    """Create ``topic`` (idempotent) and wait until it is usable."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, -1, config=dict(configs))])
    for f in futures.values():
        try:
            f.result(15)
        except Exception as e:  # already exists is fine
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise


def read_topic(
    bootstrap: str, topic: str, timeout: float = 30.0
) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """Every record of ``topic`` up to partition EOF, as ``{partition: [(key, value), ...]}``.

    Reads by ``assign()`` until each partition reports EOF (correct on Kafka and Tansu, whose
    ListOffsets end offset is wrong).
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        md = consumer.list_topics(topic, timeout=10)
        parts = sorted(md.topics[topic].partitions)
        consumer.assign([KafkaTopicPartition(topic, p, -2) for p in parts])
        out: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in parts}
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(eof) < len(parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: no EOF on partitions {set(parts) - eof}")
            for m in consumer.consume(10000, 0.5):
                err = m.error()
                partition = cast(int, m.partition())
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof.add(partition)
                        continue
                    raise RuntimeError(err.str())
                eof.discard(partition)
                out[partition].append((m.key(), m.value()))
        return out
    finally:
        consumer.close()


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes | str],
    key: Callable[[int], bytes | None] | None = None,
) -> int:
    """Produce values (acks=all) and wait for all acknowledgements; returns the count.

    Raises RuntimeError when a record is not acknowledged within 30 s or the broker refuses
    one (its delivery report carries an error).
    """
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    refused: list[KafkaError] = []

    def report(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            refused.append(err)

    n = 0
    for v in values:
        while True:
            try:
                producer.produce(topic, v, key(n) if key else None, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
    if producer.flush(30) != 0:
        raise RuntimeError("produce: not all records were acknowledged")
    if refused:
        raise RuntimeError(f"produce: {len(refused)} of {n} records refused: {refused[0]}")
    return n


class WorkerHarness:
    """A Worker on ``bootstrap_servers`` with a private offsets topic. Its config adds
    :func:`~connectrt.testing.worker_defaults.test_worker_settings` (the suite's
    ``plugin.packages``, the temporary directory for the file connectors) under
    ``worker_props``."""

    def __init__(
        self,
        bootstrap_servers: str,
        worker_props: Mapping[str, str] | None = None,
        plugins: PluginRegistry = registry,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.props: dict[str, str] = {
            **TEST_WORKER_DEFAULTS,
            **test_worker_settings(),
            "offset.storage.topic": f"connect-offsets-{uuid.uuid4().hex[:10]}",
            **(worker_props or {}),
            "bootstrap.servers": bootstrap_servers,
        }
        self.plugins = plugins
        self.worker: Worker | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> WorkerHarness:
        wc = WorkerConfig.from_props(self.props)
        self.worker = Worker(wc, create_offset_store(wc), self.plugins)
        self.worker.start()
        return self

    def stop(self) -> None:
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.stop()

    def restart(self) -> None:
        """Stop the worker gracefully and start a new one on the same offsets topic."""
        self.stop()
        self.start()

    def __enter__(self) -> WorkerHarness:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> Worker:
        if self.worker is None:
            raise RuntimeError("the harness is not started")
        return self.worker

    # -- connectors --------------------------------------------------------------------------
    def start_connector(
        self, name: str, config: Mapping[str, str], target: TargetState = TargetState.STARTED
    ) -> None:
        self.running.start_connector(name, {"name": name, **config}, target)

    def task_states(self, name: str) -> list[Status]:
        return self.running.status.tasks(name)

    def wait_for_tasks(
        self, name: str, state: State, count: int | None = None, timeout: float = 60.0
    ) -> list[Status]:
        """Wait until ``count`` tasks (default: all configured) are in ``state``."""
        worker = self.running
        want = count if count is not None else max(1, len(worker.task_configs(name)))

        def ok() -> bool:
            tasks = worker.status.tasks(name)
            return sum(1 for t in tasks if t.state is state) >= want

        if not worker.status.wait_for(ok, timeout):
            raise TimeoutError(
                f"{name}: tasks not {state} within {timeout}s: "
                f"{[(t.task, t.state, (t.trace or '')[-300:]) for t in worker.status.tasks(name)]}"
            )
        return worker.status.tasks(name)

    def wait_until(
        self, predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not reached within {timeout}s")
            time.sleep(0.05)

    def metrics(self, name: str) -> dict[int, Any]:
        return {i: r.metrics for i, r in self.running.runners(name).items()}
