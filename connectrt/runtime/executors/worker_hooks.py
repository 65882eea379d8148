"""How a worker reaches the rest of its process: :class:`WorkerHooks`, the three collaborators
it is built with.

The process assembly (:func:`connectrt.process.assembly.create_herder`) builds them before both
the worker and the herder, and hands the same objects to the herder: the worker knows nothing
of the herder, and nothing is bound late. A worker built without them (tests, benches, the
harness) resolves nothing, stores nothing and tracks no topics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from connectrt.storage.config_store import ConfigStore

__all__ = ["ConfigResolver", "PlainConfigs", "TopicTracker", "WorkerHooks"]


class ConfigResolver(Protocol):
    """Turns a raw connector config (with ``${provider:...}`` references) into the values
    handed to connectors, tasks, converters and clients, and back for storing
    (:class:`~connectrt.runtime.config.secrets.ConfigSecrets` is the implementation). Both
    register the secrets they meet with the process's log redactor. Thread-safe."""

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]: ...

    def unresolve(
        self,
        raw: Mapping[str, str],
        task_configs: list[dict[str, str]],
        resolved: Mapping[str, str] | None = None,
    ) -> list[dict[str, str]]: ...


class TopicTracker(Protocol):
    """Records the topics connectors use (KIP-558); called from task threads the first time a
    task uses a topic, must not raise (:class:`~connectrt.runtime.worker.topic_tracker.
    StatusTopicTracker` is the implementation)."""

    def record(self, name: str, topic: str, task: int) -> None: ...


class PlainConfigs:
    """The resolver of a worker without config providers: configs are used as written."""

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        return dict(config)

    def unresolve(
        self,
        raw: Mapping[str, str],
        task_configs: list[dict[str, str]],
        resolved: Mapping[str, str] | None = None,
    ) -> list[dict[str, str]]:
        return task_configs


@dataclass(frozen=True)
class WorkerHooks:
    """The worker's collaborators in its process, fixed at construction.

    ``secrets`` resolves connector configs (and puts the references back into task configs
    before they are stored); ``config_store`` keeps the task configs the worker's connectors
    generate and the exactly-once fencing counts (KIP-618 ``tasks-fencing-<name>``; None:
    nothing is stored); ``topics`` records the topics tasks use (None: not tracked).

    Lifecycle: built before the worker; the stores are started and stopped by their owner
    (the herder), not by the worker. Threading: every method may be called from any thread:
    :meth:`on_topic` from task threads (and executors' supervising threads), the others under
    a connector's lock on the worker.
    """

    secrets: ConfigResolver = field(default_factory=PlainConfigs)
    config_store: ConfigStore | None = None
    topics: TopicTracker | None = None

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """Raw config -> the values handed to connectors and tasks."""
        return self.secrets.resolve(config)

    def on_task_configs(
        self,
        name: str,
        raw: Mapping[str, str],
        resolved: Mapping[str, str],
        configs: list[dict[str, str]],
    ) -> None:
        """Store newly generated task ``configs`` of connector ``name`` (started with ``raw``
        resolved as ``resolved``) with the provider references put back (never resolved)."""
        if self.config_store is not None:
            stored = self.secrets.unresolve(raw, configs, resolved)
            self.config_store.put_task_configs(name, stored)

    def on_topic(self, name: str, topic: str, task: int) -> None:
        """Task ``task`` of connector ``name`` used ``topic``."""
        if self.topics is not None:
            self.topics.record(name, topic, task)

    def task_count(self, name: str) -> int:
        """The stored ``tasks-fencing-<name>`` task count (0: none)."""
        if self.config_store is None:
            return 0
        return int(self.config_store.snapshot().task_counts.get(name, 0))

    def on_task_count(self, name: str, count: int) -> None:
        """Store ``tasks-fencing-<name>`` after the previous generation was fenced."""
        if self.config_store is not None:
            self.config_store.put_task_count_record(name, count)
