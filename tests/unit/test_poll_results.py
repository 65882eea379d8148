"""A source task whose ``poll()`` returns the wrong type fails with a message naming the task
class and the type returned (issue 27, item 10), instead of a bare ``AttributeError``.

A real :class:`SourceTaskRunner` runs the task on the test thread, with a producer that only
records what it is given (no broker is needed to reach the send path)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api import SourceRecord, SourceRecordBatch, SourceTask
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.string import StringConverter
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.source.poll_results import (
    BadPollResult,
    bad_item_message,
    checked_poll_result,
)
from connectrt.runtime.source.runner import SourceTaskRunner
from connectrt.runtime.status import State, StatusBoard
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskFailure, TaskId
from connectrt.runtime.tasks.settings import SourceRunnerSettings
from connectrt.storage.offsets import MemoryOffsetStore
from connectrt.transforms.chain import TransformationChain


class RecordingProducer:
    """Takes what ``produce`` is given; every record is acknowledged at once."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.produced: list[tuple[Any, ...]] = []

    def produce(self, *args: Any, **kwargs: Any) -> None:
        self.produced.append(args)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        return None


def _record(i: int) -> SourceRecord:
    return SourceRecord({"p": 0}, {"n": i}, "t", None, None, None, None, f"v{i}")


class OncePollingTask(SourceTask):
    """Returns ``RESULT`` from its first ``poll()``, then stops its runner."""

    RESULT: Any = None
    runner: SourceTaskRunner | None = None

    def start(self, config: Mapping[str, str]) -> None:
        self.polls = 0

    def poll(self) -> Any:
        self.polls += 1
        if self.polls == 1:
            return type(self).RESULT
        assert self.runner is not None
        self.runner.stop()
        return None

    def stop(self) -> None:
        pass


def _run(result: Any, **connector: str) -> tuple[SourceTaskRunner, list[RecordingProducer]]:
    """Run a task whose first poll() returns ``result`` to its end; the runner and producer."""
    task = type("Task", (OncePollingTask,), {"RESULT": result, "__module__": __name__})()
    task_id = TaskId("polls", 0)
    metrics = TaskMetrics("polls", 0)
    policy = ErrorPolicy.from_config(connector)
    key, value = StringConverter(), StringConverter()
    key.configure({}, True)
    value.configure({}, False)
    header = SimpleHeaderConverter()
    header.configure({})
    transforms = None
    if connector.get("transforms"):
        transforms = TransformationChain(connector, registry.transform_class)
    producers: list[RecordingProducer] = []

    def factory(config: dict[str, Any]) -> Any:
        producers.append(RecordingProducer(config))
        return producers[-1]

    store = MemoryOffsetStore()
    store.start()
    settings = SourceRunnerSettings(
        task_config={},
        converters=TaskConverters(key=key, value=value, header=header),
        status=StatusBoard("w"),
        offset_flush_interval_ms=60000,
        transforms=transforms,
        errors=ErrorHandler(task_id, policy, metrics),
        producer_config={},
        offset_store=store,
        offset_flush_timeout_ms=1000,
        producer_factory=factory,
    )
    runner = SourceTaskRunner(task_id, task, settings)
    task.runner = runner
    runner.run()
    return runner, producers


def _failure(runner: SourceTaskRunner) -> str:
    assert isinstance(runner.failed, TaskFailure), runner.failed
    status = runner.status.task("polls", 0)
    assert status is not None and status.state is State.FAILED
    return str(runner.failed)


@pytest.mark.parametrize(
    ("result", "named"),
    [
        ({"value": 1}, "dict (builtins.dict)"),
        ("records", "str (builtins.str)"),
        ((_record(i) for i in range(2)), "generator (builtins.generator)"),
        (7, "int (builtins.int)"),
        ({}, "dict (builtins.dict)"),  # falsy: used to be silently taken as "nothing"
        (_record(0), "SourceRecord (connectrt.api.records.SourceRecord)"),
    ],
)
def test_a_poll_result_of_the_wrong_type_fails_the_task_naming_class_and_type(
    result: Any, named: str
):
    runner, _ = _run(result)
    message = _failure(runner)
    assert "TASK_POLL" in message
    assert f"{__name__}.Task.poll() returned a {named}" in message
    assert "None, a list of SourceRecord or a SourceRecordBatch" in message
    assert "AttributeError" not in message


@pytest.mark.parametrize("transforms", [False, True])
def test_a_list_holding_a_non_record_fails_the_task_naming_the_item(transforms: bool):
    config = {"errors.tolerance": "all"}  # not a tolerable conversion/transformation failure
    if transforms:
        config.update(
            {
                "transforms": "cast",
                "transforms.cast.type": "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.cast.static.field": "f",
                "transforms.cast.static.value": "x",
            }
        )
    runner, _ = _run([_record(0), {"value": 1}, _record(2)], **config)
    message = _failure(runner)
    assert f"{__name__}.Task.poll() returned a list whose item 1 is a dict" in message
    assert "not a SourceRecord" in message


def test_a_tuple_of_records_and_a_batch_are_delivered():
    for result in (
        (_record(0), _record(1)),
        SourceRecordBatch({"p": 0}, [{"n": 0}, {"n": 1}], "t", ["v0", "v1"]),
    ):
        runner, producers = _run(result)
        assert runner.failed is None
        assert [args[1] for args in producers[0].produced] == [b"v0", b"v1"]


def test_the_checks_alone():
    task = OncePollingTask()
    records = [_record(0)]
    assert checked_poll_result(task, records) is records
    assert checked_poll_result(task, (_record(0),)) == records
    with pytest.raises(BadPollResult, match="returned a set"):
        checked_poll_result(task, {1})
    assert bad_item_message(task, records) is None
    assert bad_item_message(task, [_record(0), None]) is not None
