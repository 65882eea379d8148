"""Plugin metrics (KIP-877): handles, tags, sensors and stats, closing, and /metrics text."""

from __future__ import annotations

import math
from typing import Any

import pytest

from connectrt.api import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Min,
    Monitorable,
    PluginMetrics,
    Value,
)
from connectrt.rest.metrics import MetricsExposition
from connectrt.runtime.plugins.metrics import PluginMetricsRegistry
from connectrt.transforms.chain_config import TransformationStage


def _values(registry: PluginMetricsRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], Any]:
    return {(m["name"], tuple(m["tags"].items())): m["value"] for m in registry.snapshot()}


def test_metric_names_carry_the_runtimes_tags_first_and_refuse_colliding_ones():
    registry = PluginMetricsRegistry()
    handle = registry.task("orders", 3).task
    name = handle.metric_name("lag", "Records behind", {"table": "t1"})
    assert (name.group, name.description) == ("plugins", "Records behind")
    assert name.tags == (("connector", "orders"), ("task", "3"), ("table", "t1"))
    with pytest.raises(ValueError, match="Cannot use task as a tag name"):
        handle.metric_name("lag", tags={"task": "x"})


def test_gauges_and_sensor_stats_are_read_when_the_snapshot_is_taken():
    registry = PluginMetricsRegistry()
    handle = registry.connector("c")
    box = {"queue": 4}
    handle.add_metric(handle.metric_name("queue"), lambda: box["queue"])
    sensor = handle.add_sensor("sizes")
    for stat_name, stat in [
        ("count", CumulativeCount()),
        ("sum", CumulativeSum()),
        ("avg", Avg()),
        ("max", Max()),
        ("min", Min()),
        ("last", Value()),
    ]:
        sensor.add(handle.metric_name(stat_name), stat)
    assert math.isnan(_values(registry)[("avg", (("connector", "c"),))])
    for v in (3.0, 9.0, 6.0):
        sensor.record(v)
    box["queue"] = 7
    got = {name: value for (name, _), value in _values(registry).items()}
    assert got == {
        "queue": 7.0,
        "count": 3.0,
        "sum": 18.0,
        "avg": 6.0,
        "max": 9.0,
        "min": 3.0,
        "last": 6.0,
    }


def test_duplicates_unknown_names_and_closed_handles_are_refused():
    registry = PluginMetricsRegistry()
    handle = registry.connector("c")
    name = handle.metric_name("m")
    handle.add_metric(name, lambda: 1)
    with pytest.raises(ValueError, match="already exists"):
        handle.add_metric(name, lambda: 2)
    handle.add_sensor("s")
    with pytest.raises(ValueError, match="Sensor s already exists"):
        handle.add_sensor("s")
    with pytest.raises(ValueError, match="Unknown sensor x"):
        handle.remove_sensor("x")
    handle.remove_metric(name)
    with pytest.raises(ValueError, match="Unknown metric m"):
        handle.remove_metric(name)
    handle.close()
    with pytest.raises(RuntimeError, match="closed"):
        handle.add_sensor("t")


def test_removing_a_sensor_or_closing_a_handle_removes_its_metrics_only():
    registry = PluginMetricsRegistry()
    a, b = registry.connector("a"), registry.connector("b")
    sensor = a.add_sensor("s")
    sensor.add(a.metric_name("x"), CumulativeCount())
    a.add_metric(a.metric_name("y"), lambda: 1)
    b.add_metric(b.metric_name("y"), lambda: 2)
    a.remove_sensor("s")
    assert sorted(n.name + n.tag_map["connector"] for n in registry.names()) == ["ya", "yb"]
    a.close()
    a.close()  # idempotent
    assert [(n.name, n.tag_map) for n in registry.names()] == [("y", {"connector": "b"})]


def test_a_new_instance_replaces_a_stopping_ones_metric_which_cannot_remove_it():
    registry = PluginMetricsRegistry()
    old, new = registry.task("c", 0).task, registry.task("c", 0).task
    old.add_metric(old.metric_name("m"), lambda: 1)
    new.add_metric(new.metric_name("m"), lambda: 2)
    old.close()
    assert [m["value"] for m in registry.snapshot()] == [2.0]


def test_a_failing_value_function_is_left_out_of_the_snapshot():
    registry = PluginMetricsRegistry()
    handle = registry.connector("c")
    handle.add_metric(handle.metric_name("bad"), lambda: 1 / 0)
    handle.add_metric(handle.metric_name("good"), lambda: 5)
    assert [m["name"] for m in registry.snapshot()] == ["good"]


class _Plugin(Monitorable):
    def __init__(self) -> None:
        self.metrics: PluginMetrics | None = None

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        self.metrics = metrics
        metrics.add_metric(metrics.metric_name("calls"), lambda: 0)


def test_task_handles_reach_monitorable_converters_transforms_and_predicates_only():
    registry = PluginMetricsRegistry()
    converter, plain, transform, predicate = _Plugin(), object(), _Plugin(), _Plugin()
    stages = [
        TransformationStage("a", transform, predicate, False, "p"),  # type: ignore[arg-type]
        TransformationStage("b", _Plugin(), predicate, True, "p"),  # type: ignore[arg-type]
    ]
    handles = registry.task("c", 1).monitor_all({"value": converter, "key": plain}, stages)
    tags = sorted(tuple(m["tags"].items())[2:] for m in registry.snapshot())
    assert tags == [
        (("converter", "value"),),
        (("predicate", "p"),),  # one predicate instance, handed one handle
        (("transformation", "a"),),
        (("transformation", "b"),),
    ]
    handles.close()
    assert registry.snapshot() == []


def test_prometheus_text_of_plugin_metrics():
    snapshot = {
        "connectors": {},
        "tasks": [],
        "uptime_seconds": 1.0,
        "plugins": [
            {
                "name": "records-seen",
                "group": "plugins",
                "description": "Records the\nSMT saw",
                "tags": {"connector": 'or"ders', "task": "0", "transformation": "tag"},
                "value": 12.0,
            },
            {
                "name": "records-seen",
                "group": "plugins",
                "description": "",
                "tags": {"connector": "b", "task": "1", "transformation": "tag"},
                "value": math.nan,
            },
        ],
    }
    body, _ = MetricsExposition(lambda: snapshot).render(None)
    text = body.decode()
    assert (
        "# HELP connectrt_plugin_records_seen Records the\\nSMT saw\n"
        "# TYPE connectrt_plugin_records_seen gauge\n"
        'connectrt_plugin_records_seen{connector="or\\"ders",task="0",transformation="tag"} 12.0\n'
        'connectrt_plugin_records_seen{connector="b",task="1",transformation="tag"} NaN\n'
    ) in text
