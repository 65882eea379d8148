"""How a worker reaches the rest of its process: :class:`WorkerHooks`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["WorkerHooks"]


def _identity(config: Mapping[str, str]) -> dict[str, str]:
    return dict(config)


def _ignore(*args: Any) -> None:
    return None


def _no_count(name: str) -> int:
    return 0


@dataclass(frozen=True)
class WorkerHooks:
    """How the worker reaches the rest of the process (the herder fills these in).

    ``resolve`` turns a raw config (with ``${provider:...}`` references) into the values handed
    to connectors, tasks, converters and clients. ``on_task_configs(name, configs)`` is called
    with newly generated task configs (resolved; the herder persists them). ``on_topic(name,
    topic, task)`` is called from task threads the first time a task uses a topic.
    ``task_count(name)`` is the stored ``tasks-fencing-<name>`` count (0: none) and
    ``on_task_count(name, n)`` stores it, after the zombies of an exactly-once source connector
    were fenced (KIP-618).
    """

    resolve: Callable[[Mapping[str, str]], dict[str, str]] = _identity
    on_task_configs: Callable[[str, list[dict[str, str]]], None] = _ignore
    on_topic: Callable[[str, str, int], None] = _ignore
    task_count: Callable[[str], int] = _no_count
    on_task_count: Callable[[str, int], None] = _ignore
