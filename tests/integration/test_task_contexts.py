"""Runtime behaviour behind the task contexts: retries, rewinds, pause/resume, commits."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api import RetriableError, SourceConnector, SourceRecord, SourceTask, Task
from connectrt.api.config import ConfigDef
from connectrt.broker import EmbeddedBroker
from connectrt.data import Schema
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.status import State, TargetState
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic
from tests.plugins import recording_sink
from tests.plugins.recording_sink import RECEIVED, RecordingSink

pytestmark = pytest.mark.integration

registry.register_class(RecordingSink)

ENVELOPE = b'{"schema":{"type":"int32","optional":false},"payload":%d}'


def _values(store: str) -> list[object]:
    with recording_sink.LOCK:
        return [v for *_, v in RECEIVED[store]]


def _fill(broker: EmbeddedBroker, topic: str, start: int, count: int, partitions: int = 1):
    create_topic(broker.bootstrap_servers, topic, partitions=partitions)
    produce(broker.bootstrap_servers, topic, (ENVELOPE % i for i in range(start, start + count)))


def _sink(h: WorkerHarness, name: str, topic: str, **switches: str) -> str:
    store = uuid.uuid4().hex
    h.start_connector(
        name,
        {
            "connector.class": "RecordingSink",
            "topics": topic,
            "store.id": store,
            **{k.replace("_", "."): v for k, v in switches.items()},
        },
    )
    return store


def test_retriable_put_redelivers_the_same_batch(broker: EmbeddedBroker, unique_name):
    topic = unique_name("retry")
    _fill(broker, topic, 0, 100)
    with WorkerHarness(broker.bootstrap_servers) as h:
        store = _sink(h, "s", topic, fail_retriable_times="3")
        h.wait_until(lambda: len(_values(store)) >= 100, 60, "100 records put after 3 retries")
        metrics = h.metrics("s")[0]
        assert metrics.retries == 3
        assert h.task_states("s")[0].state is State.RUNNING
    assert _values(store) == list(range(100))


def test_rewind_in_open_skips_to_the_given_offset(broker: EmbeddedBroker, unique_name):
    topic = unique_name("rewind")
    _fill(broker, topic, 0, 20)
    with WorkerHarness(broker.bootstrap_servers) as h:
        store = _sink(h, "s", topic, rewind_on_open="15")
        h.wait_until(lambda: len(_values(store)) >= 5, 60, "the 5 records from offset 15 put")
        h.wait_until(
            lambda: h.metrics("s")[0].records_committed >= 5, 60, "their offsets committed"
        )
    assert _values(store) == [15, 16, 17, 18, 19]


def test_pause_and_resume_stop_and_restart_delivery(broker: EmbeddedBroker, unique_name):
    topic = unique_name("pause")
    _fill(broker, topic, 0, 10)
    with WorkerHarness(broker.bootstrap_servers) as h:
        store = _sink(h, "s", topic)
        h.wait_until(lambda: len(_values(store)) >= 10, 60, "the first 10 records put")
        h.running.set_target_state("s", TargetState.PAUSED)
        h.wait_for_tasks("s", State.PAUSED, timeout=60)
        produce(broker.bootstrap_servers, topic, (ENVELOPE % i for i in range(10, 20)))
        # Not a synchronisation: a paused task must put nothing during this window.
        with pytest.raises(TimeoutError):
            h.wait_until(lambda: len(_values(store)) > 10, 3, "a record put while paused")
        h.running.set_target_state("s", TargetState.STARTED)
        h.wait_for_tasks("s", State.RUNNING, timeout=60)
        h.wait_until(lambda: len(_values(store)) >= 20, 60, "the 10 new records put after resume")
    assert _values(store) == list(range(20))


def test_request_commit_commits_before_the_interval(broker: EmbeddedBroker, unique_name):
    topic = unique_name("reqcommit")
    _fill(broker, topic, 0, 30)
    props = {"offset.flush.interval.ms": "600000"}
    with WorkerHarness(broker.bootstrap_servers, props) as h:
        _sink(h, "rc", topic, request_commit="true")
        h.wait_until(
            lambda: h.metrics("rc")[0].records_committed >= 30,
            60,  # the group join included; the interval commit would come only after 10 min
            "the requested commit of 30 records",
        )
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": "connect-rc"}
        )
        try:
            (tp,) = consumer.committed([KafkaTopicPartition(topic, 0)], timeout=10)
        finally:
            consumer.close()
    assert tp.offset == 30


def test_failed_sink_task_keeps_its_trace_and_restarts(broker: EmbeddedBroker, unique_name):
    topic = unique_name("fatal")
    _fill(broker, topic, 0, 10)
    with WorkerHarness(broker.bootstrap_servers) as h:
        store = _sink(h, "f", topic, fail_fatal_at="5")
        (failed,) = h.wait_for_tasks("f", State.FAILED, timeout=60)
        assert "TASK_PUT" in (failed.trace or "")
        assert "destination rejected the batch" in (failed.trace or "")
        assert _values(store) == []  # the failing batch was not written, nothing committed
        h.running.restart_task("f", 0)  # the restarted task re-reads the uncommitted records
        h.wait_for_tasks("f", State.FAILED, timeout=60)  # same data, same config: fails again
        assert h.metrics("f")[0].records_committed == 0


class _FlakySource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return _FlakyTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class _FlakyTask(SourceTask):
    """Raises RetriableError on every other poll, emitting 50 numbered records in total."""

    PARTITION = {"flaky": 1}

    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.calls = 0
        offset = self.context.offset_storage_reader.offset(self.PARTITION)
        self.next = offset["n"] if offset else 0

    def poll(self) -> list[SourceRecord] | None:
        self.calls += 1
        if self.calls % 2 == 1:
            raise RetriableError("try again")
        if self.next >= 50:
            return None
        batch = [
            SourceRecord(
                self.PARTITION, {"n": n + 1}, self.topic, None, None, None, Schema.INT32_SCHEMA, n
            )
            for n in range(self.next, self.next + 10)
        ]
        self.next += 10
        return batch

    def stop(self) -> None:
        pass


def test_retriable_poll_is_retried_without_restarting(broker: EmbeddedBroker, unique_name):
    registry.register_class(_FlakySource)
    topic = unique_name("flaky")
    create_topic(broker.bootstrap_servers, topic)
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector("flaky", {"connector.class": "_FlakySource", "topic": topic})
        h.wait_until(
            lambda: h.metrics("flaky")[0].records_committed >= 50,
            60,
            "the offsets of all 50 records committed",
        )
        assert h.metrics("flaky")[0].retries >= 5
        assert h.task_states("flaky")[0].state is State.RUNNING
    values = [v for _, v in read_topic(broker.bootstrap_servers, topic)[0]]
    assert values == [ENVELOPE % i for i in range(50)]
