"""The Spark backend's pure parts: slot arithmetic, settings, signal records, CLI errors, the
offset store a task gets on an executor. No SparkSession and no broker needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectrt.cli import main
from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.task_payload import build_runner
from connectrt.runtime.source.transactions import TransactionalOffsets
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.spark.config import SparkBackendConfig, spark_conf
from connectrt.spark.executor_task import (
    SparkTaskPayload,
    TransactionalOnlyOffsets,
    task_offset_store,
)
from connectrt.spark.signals import Signal, signal_key
from connectrt.spark.slots import NotEnoughSlots, SlotLedger


def test_slots_keep_one_free_beyond_running_tasks():
    ledger = SlotLedger(total=10, free=1)
    ledger.reserve("a", 4)
    ledger.reserve("b", 5)  # 4 + 5 + 1 free = 10
    assert ledger.held() == 9 and ledger.held("a") == 4
    with pytest.raises(NotEnoughSlots) as info:
        ledger.reserve("c", 1)
    message = str(info.value)
    assert "connector c: its 1 task(s) need 1 slot(s)" in message
    assert "the cluster has 10 slot(s), 9 held" in message
    assert "(a: 4, b: 5)" in message and "lower tasks.max" in message
    assert "The tasks wait (UNASSIGNED) and start when other tasks end" in message
    assert ledger.held() == 9  # a refused launch holds nothing
    ledger.release("b", 5)
    ledger.reserve("c", 5)
    assert ledger.held("c") == 5 and ledger.held("b") == 0


def test_slots_more_free_and_bad_totals():
    ledger = SlotLedger(total=4, free=2)
    ledger.reserve("a", 2)
    with pytest.raises(NotEnoughSlots, match="2 must stay free"):
        ledger.reserve("b", 1)
    with pytest.raises(ValueError, match="at least one slot"):
        SlotLedger(total=0)
    ledger.release("zzz")  # releasing what was never held is harmless
    assert ledger.held() == 2


def test_a_live_ledger_follows_the_executors_and_says_so():
    """On a cluster the total is the registered executors' slots: 0 before any registered,
    then resized as executors join and leave; running tasks keep their slots."""
    ledger = SlotLedger(total=0, free=1, live=True)
    with pytest.raises(NotEnoughSlots) as info:
        ledger.reserve("a", 1)
    assert "the cluster has 0 slot(s) from 0 executor(s)" in str(info.value)
    assert "start when executors with enough cores register" in str(info.value)
    assert ledger.resize(4, 2) and not ledger.resize(4, 2)
    ledger.reserve("a", 3)
    assert ledger.resize(2, 1)  # a host left: the total drops below what is held
    assert ledger.held("a") == 3
    with pytest.raises(NotEnoughSlots, match="has 2 slot\\(s\\) from 1 executor"):
        ledger.reserve("b", 1)
    ledger.resize(8, 4)
    ledger.reserve("b", 4)
    assert ledger.held() == 7


def test_slot_watch_waits_for_the_promised_slots_and_reports_changes():
    from connectrt.spark.slot_watch import SlotWatch, expected_slots

    assert expected_slots({"spark.cores.max": "6", "spark.task.cpus": "2"}) == 3
    assert expected_slots({"spark.executor.instances": "2", "spark.executor.cores": "2"}) == 4
    assert expected_slots({"spark.master": "spark://m:7077"}) is None
    assert (
        expected_slots({"spark.cores.max": "6", "spark.dynamicAllocation.enabled": "true"}) is None
    )
    readings = iter([(0, 0), (2, 1), (4, 2), (4, 2), (6, 3)])
    last = [(0, 0)]

    def probe() -> tuple[int, int]:
        last[0] = next(readings, last[0])
        return last[0]

    ledger = SlotLedger(0, 1, live=True)
    changes: list[int] = []
    watch = SlotWatch(ledger, probe, lambda: changes.append(ledger.total), poll_s=0.01)
    watch.await_executors(timeout_s=30, expected=4)
    assert (ledger.total, ledger.executors) == (4, 2)
    assert not watch.poll() and watch.poll()  # (4, 2) again, then (6, 3)
    assert ledger.total == 6


def test_backend_config_defaults_and_passthrough():
    props = {
        "config.storage.topic": "cfg",
        "spark.master": "local[3]",
        "spark.task.maxFailures": "4",
    }
    config = SparkBackendConfig.from_props(props)
    assert config.signal_topic == "cfg-spark-signals"
    assert (config.executor, config.slots, config.free_slots) == ("threads", 0, None)
    # no free slot required on a local master (its slots are threads), one on a cluster
    assert config.free_slots_for("local[2]") == 0
    assert config.free_slots_for("local[*,4]") == 0
    assert config.free_slots_for("spark://master:7077") == 1
    assert config.free_slots_for("yarn") == 1
    assert (
        SparkBackendConfig.from_props({"task.executor.spark.free.slots": "0"}).free_slots_for(
            "spark://m:7077"
        )
        == 0
    )
    assert (
        SparkBackendConfig.from_props({"task.executor.spark.free.slots": "2"}).free_slots_for(
            "local[4]"
        )
        == 2
    )
    assert config.cancel_wait_s == 10.0
    assert spark_conf({**props, "task.executor": "spark"}) == {
        "spark.master": "local[3]",
        "spark.task.maxFailures": "4",
    }
    explicit = SparkBackendConfig.from_props(
        {"task.executor.spark.signal.topic": "sig", "task.executor.spark.slots": "16"}
    )
    assert (explicit.signal_topic, explicit.slots) == ("sig", 16)


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"offset.storage.type": "file"}, "offset.storage.type"),
        ({"task.executor.spark.free.slots": "-1"}, "task.executor.spark.free.slots"),
        ({"task.executor": "yarn"}, "task.executor"),
        ({"task.executor.spark.slots": "many"}, "task.executor.spark.slots"),
    ],
)
def test_backend_config_errors(props: dict[str, str], key: str):
    with pytest.raises(ConfigError) as info:
        SparkBackendConfig.from_props(props)
    assert key in str(info.value)


def test_signal_records_round_trip_and_reject_garbage():
    signal = Signal("run1", 7, TargetState.PAUSED, stop=False)
    assert Signal.decode(signal.encode()) == signal
    assert Signal.decode(Signal("r", 1, TargetState.STARTED, stop=True).encode()) == Signal(
        "r", 1, TargetState.STARTED, True
    )
    assert signal_key("orders-sink", 3) == b"orders-sink/3"
    for garbage in (b"not json", b"{}", b'{"run":"r","generation":1,"target":"NOPE","stop":0}'):
        assert Signal.decode(garbage) is None


def test_cli_spark_rejects_bad_settings_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    props = tmp_path / "worker.properties"
    props.write_text("bootstrap.servers=127.0.0.1:1\noffset.storage.type=file\n")
    assert main(["spark", str(props)]) == 1
    assert "task.executor=spark needs offset.storage.type=kafka" in capsys.readouterr().err
    # `connectrt worker` with task.executor=spark takes the same path.
    props.write_text("task.executor=spark\noffset.storage.type=memory\n")
    assert main(["worker", str(props)]) == 1
    assert "task.executor=spark needs offset.storage.type=kafka" in capsys.readouterr().err


def test_local_master_keeps_no_slot_free_so_local_2_runs_a_source_and_a_sink():
    ledger = SlotLedger(total=2, free=0)
    ledger.reserve("source", 1)
    ledger.reserve("sink", 1)
    with pytest.raises(NotEnoughSlots) as info:
        ledger.reserve("third", 1)
    assert "0 must stay free" in str(info.value)
    assert "a larger N in local[N]" in str(info.value)


def test_local_masters_give_their_thread_count_as_slots():
    import os

    from connectrt.spark.launchers import local_threads

    assert local_threads("local") == 1
    assert local_threads("local[4]") == 4
    assert local_threads("local[4,3]") == 4
    assert local_threads("local[*]") == (os.cpu_count() or 1)
    assert local_threads("local[*, 2]") == (os.cpu_count() or 1)
    assert local_threads("spark://master:7077") is None
    assert local_threads("yarn") is None


def _payload(kind: str, **worker: str) -> SparkTaskPayload:
    task_class = (
        "tests.plugins.eos_sequence.EosSequenceTask"
        if kind == "source"
        else "tests.plugins.sequence.SequenceFileSinkTask"
    )
    return SparkTaskPayload(
        connector="orders",
        task=1,
        kind=kind,
        target="STARTED",
        generation=1,
        worker_props={
            "bootstrap.servers": "127.0.0.1:9",
            "group.id": "g",
            "task.executor": "spark",
            **worker,
        },
        connector_config={"name": "orders", "topic": "t", "topics": "t"},
        task_config={"task.class": task_class, "topic": "t", "topics": "t"},
    )


def test_an_exactly_once_source_on_an_executor_commits_through_its_transactions_only():
    """No at-least-once offset store for it: the store its runner gets refuses writes, and
    the runner commits offsets in transactions of the producer with the task's id."""
    payload = _payload("source", **{"exactly.once.source.support": "enabled"})
    wc = WorkerConfig.from_props(payload.worker_props)
    store = task_offset_store(wc, payload)
    assert isinstance(store, TransactionalOnlyOffsets)
    with pytest.raises(ConnectError, match="in its transactions only"):
        store.set({b"k": b"v"})
    runner = build_runner(payload, store, StatusBoard("executor"), lambda *_: None)
    offsets = runner._delivery  # type: ignore[attr-defined]
    assert isinstance(offsets, TransactionalOffsets)
    assert offsets.settings.transactional_id == "g-orders-1"
    assert runner._producer_config["transactional.id"] == "g-orders-1"  # type: ignore[attr-defined]


def test_an_at_least_once_source_on_an_executor_replays_the_offsets_topic():
    from connectrt.storage.kafka_offsets import KafkaOffsetStore
    from connectrt.storage.offsets import MemoryOffsetStore

    for support in ("disabled", "preparing"):
        payload = _payload("source", **{"exactly.once.source.support": support})
        store = task_offset_store(WorkerConfig.from_props(payload.worker_props), payload)
        assert isinstance(store, KafkaOffsetStore)
    sink = _payload("sink", **{"exactly.once.source.support": "enabled"})
    store = task_offset_store(WorkerConfig.from_props(sink.worker_props), sink)
    assert type(store) is MemoryOffsetStore
