"""What the herder answers about a connector: its info and its states.

Plain frozen values, built fresh for each answer and safe to share between threads; the REST
layer turns them into Kafka Connect's JSON shapes (:mod:`connectrt.rest.models`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConnectorInfo", "ConnectorStateInfo", "StateInfo"]


@dataclass(frozen=True)
class ConnectorInfo:
    """A connector's name, config (secrets masked), task ids and type (source/sink/unknown).

    ``offsets_status`` is set only in the answer to a create with initial offsets (KIP-995):
    the KIP-875 message about them."""

    name: str
    config: dict[str, str]  # secrets masked
    tasks: list[int]
    type: str
    offsets_status: str | None = None


@dataclass(frozen=True)
class StateInfo:
    """The state of one connector or task instance and the worker that reported it."""

    state: str
    worker_id: str
    trace: str | None = None
    restarts: int = 0  # automatic restarts (errors.task.restart.*), tasks only
    version: str | None = None  # the plugin version running (KIP-891); None: undefined
    stalled_call: str | None = None  # connectrt: the call a stalled task is stuck in
    pid: int | None = None  # the task's own process (task.executor=processes), tasks only


@dataclass(frozen=True)
class ConnectorStateInfo:
    """A connector's state and its tasks' states, as ``(task id, state)`` pairs;
    ``share_group``: the share group a sink's tasks run in (``consumer.group.type=share``)."""

    name: str
    connector: StateInfo
    tasks: list[tuple[int, StateInfo]]
    type: str
    share_group: str | None = None
