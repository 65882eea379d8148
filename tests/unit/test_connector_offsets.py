"""ConnectorOffsets with stand-ins for the worker, the herder and the offset admin: the
KIP-875 rules (stopped connectors only, the connector asked first) and the rewind's stop and
restore, without a broker."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api.records import TopicPartition
from connectrt.errors import NotFoundError
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.offsets import ConnectorOffsets
from connectrt.runtime.status import TargetState
from connectrt.storage.offset_codec import encode_key, encode_value


class _Store:
    def __init__(self, entries: dict[bytes, bytes | None]) -> None:
        self.entries = dict(entries)

    def all(self) -> dict[bytes, bytes | None]:
        return dict(self.entries)

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        for key, value in entries.items():
            if value is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = value


class _Worker:
    def __init__(self, store: _Store) -> None:
        self.offset_store = store
        self.target = TargetState.STARTED
        self.config = WorkerConfig.from_props({})  # exactly-once disabled: the worker's store

    def target_state(self, name: str) -> TargetState:
        return self.target

    def runners(self, name: str) -> list[object]:
        return [] if self.target is TargetState.STOPPED else [object()]

    def connector_config(self, name: str) -> dict[str, str]:
        return {"connector.class": "Fake", "topics": "t"}


class _Connector:
    asked: list[Any] = []
    handled = False

    def alter_offsets(self, config: Mapping[str, str], offsets: Any) -> bool:
        self.asked.append(dict(offsets))
        return self.handled


class _Registry:
    def connector_class(self, name: str, version: str | None = None) -> type:
        return _Connector


class _Control:
    def __init__(self, worker: _Worker, kind: str) -> None:
        self.worker, self.kind, self.events = worker, kind, []

    def require(self, name: str) -> None:
        if name != "c":
            raise NotFoundError(f"Connector {name} not found")

    def connector_type(self, name: str) -> str:
        return self.kind

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        return dict(config)

    def stop_connector(self, name: str) -> None:
        self.events.append("stop")
        self.worker.target = TargetState.STOPPED

    def set_target_state(self, name: str, target: TargetState) -> None:
        self.events.append(target)
        self.worker.target = target


class _Admin:
    def __init__(self, fail: bool = False) -> None:
        self.fail, self.altered = fail, []

    def partitions(self, topics: list[str], regex: str | None = None) -> list[TopicPartition]:
        return [TopicPartition(t, 0) for t in topics]

    def latest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        if self.fail:
            raise RuntimeError("broker unreachable")
        return dict.fromkeys(tps, 42)

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        self.altered.append((group, dict(offsets)))


def _offsets(kind: str, admin: _Admin | None = None) -> tuple[ConnectorOffsets, _Worker, _Control]:
    _Connector.asked = []
    store = _Store(
        {
            encode_key("c", {"file": "a"}): encode_value({"position": 7}),
            encode_key("other", {"file": "a"}): encode_value({"position": 9}),
        }
    )
    worker = _Worker(store)
    control = _Control(worker, kind)
    offsets = ConnectorOffsets(
        worker,  # type: ignore[arg-type]
        _Registry(),  # type: ignore[arg-type]
        admin or _Admin(),  # type: ignore[arg-type]
        control,
        lambda name: threading.RLock(),
    )
    return offsets, worker, control


def test_source_offsets_of_this_connector_only():
    offsets, _, _ = _offsets("source")
    assert offsets.get("c") == [{"partition": {"file": "a"}, "offset": {"position": 7}}]
    with pytest.raises(NotFoundError):
        offsets.get("nope")


def test_changes_need_a_stopped_connector():
    offsets, worker, _ = _offsets("source")
    change = [{"partition": {"file": "a"}, "offset": {"position": 1}}]
    with pytest.raises(BadRequestError, match="'/connectors/c/stop' endpoint"):
        offsets.alter("c", change)
    worker.target = TargetState.STOPPED
    assert offsets.alter("c", change).startswith("The Connect framework-managed offsets")
    assert _Connector.asked == [{(("file", "a"),): {"position": 1}}]
    assert offsets.get("c")[0]["offset"] == {"position": 1}


def test_rewinding_a_running_source_stops_resets_and_restarts_it():
    offsets, worker, control = _offsets("source")
    assert offsets.rewind("c", "earliest") == {"offsets": []}
    assert control.events == ["stop", TargetState.STARTED]
    assert offsets.get("c") == []
    assert len(worker.offset_store.entries) == 1  # the other connector's offset is kept


def test_a_failed_sink_rewind_still_restores_the_target_state():
    offsets, _, control = _offsets("sink", _Admin(fail=True))
    with pytest.raises(RuntimeError, match="broker unreachable"):
        offsets.rewind("c", "latest")
    assert control.events == ["stop", TargetState.STARTED]


def test_sink_rewind_moves_the_consumer_group():
    admin = _Admin()
    offsets, _, _ = _offsets("sink", admin)
    moved = offsets.rewind("c", "latest")["offsets"]
    assert moved == [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 42}}
    ]
    assert admin.altered == [("connect-c", {TopicPartition("t", 0): 42})]
