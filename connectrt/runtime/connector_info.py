"""What the herder answers about a connector: its info and its states.

Plain frozen values, built fresh for each answer and safe to share between threads; the REST
layer turns them into Kafka Connect's JSON shapes (:mod:`connectrt.rest.wire`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConnectorInfo", "ConnectorStateInfo", "StateInfo"]


@dataclass(frozen=True)
class ConnectorInfo:
    """A connector's name, config (secrets masked), task ids and type (source/sink/unknown)."""

    name: str
    config: dict[str, str]  # secrets masked
    tasks: list[int]
    type: str


@dataclass(frozen=True)
class StateInfo:
    """The state of one connector or task instance and the worker that reported it."""

    state: str
    worker_id: str
    trace: str | None = None
    restarts: int = 0  # automatic restarts (errors.task.restart.*), tasks only
    pid: int | None = None  # the task's own process (task.executor=processes), tasks only


@dataclass(frozen=True)
class ConnectorStateInfo:
    """A connector's state and its tasks' states, as ``(task id, state)`` pairs."""

    name: str
    connector: StateInfo
    tasks: list[tuple[int, StateInfo]]
    type: str
