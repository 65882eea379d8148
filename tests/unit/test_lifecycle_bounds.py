"""Bounded plugin calls, per-connector locks and the task config type check, with real threads.

Management must never wait on plugin code longer than a timeout (:mod:`connectrt.runtime.
plugin_calls`), changes to one connector must not wait on another's lock
(:class:`~connectrt.runtime.herder.herder.ConnectorLocks`), and task configs must map strings to
strings (Kafka Connect's ``Map<String, String>``): nothing is converted, ``None`` never
becomes ``"None"``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api import ConfigDef, SourceConnector, Task
from connectrt.errors import ConnectError
from connectrt.runtime.herder.herder import ConnectorLocks
from connectrt.runtime.plugins.calls import PluginCallTimeout, abandoned_calls, call_plugin
from connectrt.runtime.status import TargetState
from connectrt.runtime.worker.connector import WorkerConnector, string_task_config
from tests.plugins.blocking import BlockingSourceTask


def test_a_call_that_ends_in_time_gives_its_result_or_its_error() -> None:
    assert call_plugin(lambda: 42, 5.0, "answer") == 42
    with pytest.raises(ZeroDivisionError):
        call_plugin(lambda: 1 / 0, 5.0, "division")


def test_a_call_that_overruns_is_abandoned_and_cleaned_up_if_it_returns_late() -> None:
    release = threading.Event()
    late: list[str] = []
    started = time.monotonic()
    with pytest.raises(PluginCallTimeout, match="stop\\(\\) of connector x did not return"):
        call_plugin(
            lambda: "value" if release.wait(60) else "timeout",
            0.2,
            "stop() of connector x",
            on_late=late.append,
        )
    assert time.monotonic() - started < 30, "the caller waited far beyond the timeout"
    listed = [c for c in abandoned_calls() if c.what == "stop() of connector x"]
    assert listed and listed[0].thread.name == "abandoned: stop() of connector x"
    release.set()
    listed[0].thread.join(30)
    assert late == ["value"], "the late result did not reach on_late"
    assert not [c for c in abandoned_calls() if c.what == "stop() of connector x"]


def test_connector_locks_are_per_name_reentrant_and_dropped_after_use() -> None:
    locks = ConnectorLocks()
    holding, release = threading.Event(), threading.Event()

    def hold_a() -> None:
        with locks.hold("a"):
            holding.set()
            release.wait(60)

    thread = threading.Thread(target=hold_a, daemon=True)
    thread.start()
    assert holding.wait(30)
    done = threading.Event()

    def use_b() -> None:
        with locks.hold("b"), locks.hold("b"):  # reentrant
            done.set()

    other = threading.Thread(target=use_b, daemon=True)
    other.start()
    assert done.wait(30), "connector b waited on the lock of connector a"
    release.set()
    thread.join(30)
    other.join(30)
    assert len(locks) == 0, "locks of names nobody holds were kept"


class _Connector(SourceConnector):
    configs: Any = [{}]

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return BlockingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return self.configs  # type: ignore[no-any-return]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


def _state(configs: Any) -> WorkerConnector:
    connector = _Connector()
    connector.configs = configs
    state = WorkerConnector("c", {}, connector, TargetState.STARTED)
    state.resolved = {"tasks.max": "2"}
    return state


def test_string_task_configs_are_kept_as_they_are() -> None:
    state = _state([{"a": "1", "b": ""}])
    assert state.generate_task_configs(5.0)
    assert state.task_configs == [
        {"a": "1", "b": "", "task.class": "tests.plugins.blocking.BlockingSourceTask"}
    ]


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ([{"a": None}], "task config 0 whose value for 'a' is of type NoneType, not a string"),
        ([{"a": "1"}, {"n": 3}], "task config 1 whose value for 'n' is of type int"),
        ([{1: "x"}], "task config 0 with a key of type int"),
        ([["a", "b"]], "task config 0 as a list"),
        ({"a": "b"}, "returned a dict from task_configs\\(\\)"),
    ],
)
def test_task_configs_that_are_not_maps_of_strings_are_refused(configs: Any, message: str) -> None:
    state = _state(configs)
    with pytest.raises(ConnectError, match=message):
        state.generate_task_configs(5.0)
    assert state.task_configs == [], "a refused task config was kept"


def test_the_refusal_does_not_quote_the_value() -> None:
    with pytest.raises(ConnectError) as refused:
        string_task_config("c", 0, {"password": b"s3cret-value"})
    assert "s3cret-value" not in str(refused.value)
    assert "bytes" in str(refused.value)
