"""The bodies of ``/connectors``: connector infos and states, the create, config and patch
requests, task configs and topics.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import BaseModel, Field, RootModel, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import SkipJsonSchema

from connectrt.errors import NotFoundError
from connectrt.rest.config_limits import MAX_NAME_LENGTH, ConfigLimits
from connectrt.rest.models.base import ConfigValue, Model, config_map
from connectrt.rest.models.offsets import OffsetsMessage, PartitionOffset
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder import info as herder_info

__all__ = [
    "ConnectorConfigRequest",
    "ConnectorInfo",
    "ConnectorState",
    "ConnectorStateInfo",
    "ConnectorTaskId",
    "ConnectorTopics",
    "CreateConnectorRequest",
    "ExpandedConnector",
    "ExpandedConnectors",
    "PatchConfigRequest",
    "TaskConfig",
    "TaskState",
    "TopicList",
    "connector_list",
]


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


class ConnectorInfo(Model):
    name: str
    config: dict[str, str] = Field(description="Secrets are shown as [hidden]")
    tasks: list[ConnectorTaskId]
    type: str = Field(description="source, sink or unknown")
    offsets_status: OffsetsMessage | None = Field(
        default=None, description="KIP-995: only answering a create with initial_offsets"
    )

    @classmethod
    def of(cls, info: herder_info.ConnectorInfo) -> Self:
        body: dict[str, Any] = {
            "name": info.name,
            "config": info.config,
            "tasks": [{"connector": info.name, "task": t} for t in info.tasks],
            "type": info.type,
        }
        if info.offsets_status is not None:  # KIP-995: only answering a create with offsets
            body["offsets_status"] = {"message": info.offsets_status}
        return cls.model_validate(body)


_StateName = Annotated[
    str, Field(description="UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED or RESTARTING")
]
_Trace = Annotated[str | None, Field(description="Only when FAILED")]


def _state(info: herder_info.StateInfo) -> dict[str, Any]:
    """The keys of a connector's or task's state that are set, in Kafka's order."""
    out: dict[str, Any] = {"state": info.state, "worker_id": info.worker_id}
    if info.trace:
        out["trace"] = info.trace
    if info.version is not None:
        out["version"] = info.version  # KIP-891: left out when undefined, as in Kafka
    if info.restarts:
        out["restarts"] = info.restarts  # connectrt: automatic restarts so far
    if info.stalled_call is not None:  # connectrt: stuck in one call (task.stall.timeout.ms)
        out["stalled"] = True
        out["stalled_call"] = info.stalled_call
    if info.pid is not None:
        out["pid"] = info.pid  # connectrt: the task's process (task.executor=processes)
    return out


class ConnectorState(Model):
    state: _StateName
    worker_id: str
    trace: _Trace = None
    version: SkipJsonSchema[str | None] = None  # KIP-891: the plugin version running
    restarts: SkipJsonSchema[int | None] = None
    stalled: SkipJsonSchema[bool | None] = None  # connectrt: stuck in one call
    stalled_call: SkipJsonSchema[str | None] = None
    pid: SkipJsonSchema[int | None] = None  # connectrt: the task's process

    @classmethod
    def of(cls, info: herder_info.StateInfo) -> Self:
        return cls.model_validate(_state(info))


# A task's state. Its JSON starts with ``id``, as Kafka Connect's does; the fields are declared
# in the order the document has always listed them. (No docstring: it would be the schema's.)
class TaskState(Model):
    state: _StateName
    worker_id: str
    trace: _Trace = None
    version: SkipJsonSchema[str | None] = None  # KIP-891: the plugin version running
    id: int
    restarts: int | None = Field(
        default=None, description="connectrt: automatic restarts so far (errors.task.restart.*)"
    )
    stalled: SkipJsonSchema[bool | None] = None  # connectrt: stuck in one call
    stalled_call: SkipJsonSchema[str | None] = None
    pid: SkipJsonSchema[int | None] = None  # connectrt: the task's process

    # No return annotation: pydantic would document that type in place of the fields.
    @model_serializer(mode="wrap")
    def _id_first(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        return {"id": data.pop("id"), **data} if "id" in data else data

    @classmethod
    def of(cls, task: int, info: herder_info.StateInfo) -> Self:
        return cls.model_validate({"id": task, **_state(info)})


class ConnectorStateInfo(Model):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str
    # connectrt: the share group of a sink with consumer.group.type=share (absent otherwise)
    share_group: SkipJsonSchema[str | None] = None

    @classmethod
    def of(cls, info: herder_info.ConnectorStateInfo) -> Self:
        extra = {} if info.share_group is None else {"share_group": info.share_group}
        return cls(
            name=info.name,
            connector=ConnectorState.of(info.connector),
            tasks=[TaskState.of(t, s) for t, s in sorted(info.tasks)],
            type=info.type,
            **extra,
        )


class ExpandedConnector(Model):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class ExpandedConnectors(RootModel[dict[str, ExpandedConnector]]):
    """``GET /connectors?expand=status&expand=info``: name -> what was asked for."""


class ConnectorReads(Protocol):
    """Where ``GET /connectors`` reads: the herder, or a standby's copy of the topics."""

    def connectors(self) -> list[str]: ...
    def connector_status(self, name: str) -> herder_info.ConnectorStateInfo: ...
    def connector_info(self, name: str) -> herder_info.ConnectorInfo: ...


def connector_list(reads: ConnectorReads, expand: Iterable[str]) -> Any:
    """The body of ``GET /connectors``: the names, or with ``expand`` (``status``, ``info``;
    other values ignored) the :class:`ExpandedConnectors` wire form. A connector that is gone
    by the time it is looked up (deleted meanwhile, or no status written yet) is left out."""
    names = reads.connectors()
    wanted = {e for e in expand if e in ("status", "info")}
    if not wanted:
        return names
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        try:
            if "status" in wanted:
                entry["status"] = ConnectorStateInfo.of(reads.connector_status(name)).wire()
            if "info" in wanted:
                entry["info"] = ConnectorInfo.of(reads.connector_info(name)).wire()
        except NotFoundError:
            continue
        out[name] = entry
    return out


class CreateConnectorRequest(BaseModel):
    name: str = Field(
        description="The connector name (not blank)",
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        pattern=r"\S",
    )
    config: dict[str, ConfigValue] = Field(description="Connector config; values as strings")
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = Field(
        default=None, description="KIP-980"
    )
    initial_offsets: list[PartitionOffset] | None = Field(
        default=None, description="KIP-995: offsets to start from, as a KIP-875 PATCH body's"
    )

    @classmethod
    def read(cls, raw: Any, limits: ConfigLimits) -> CreateConnectorRequest:
        """The name (from ``config.name`` when the body has none), the config as strings
        (checked against ``limits``); ``initial_state`` and ``initial_offsets`` as sent, for
        the herder to check."""
        if not isinstance(raw, dict):
            raise BadRequestError("Request body must be a JSON object")
        name = raw.get("name")
        config = config_map(raw.get("config") or {})
        if not isinstance(name, str) or not name.strip():
            name = config.get("name")
        if not isinstance(name, str) or not name.strip():
            raise BadRequestError("Connector name is required")
        limits.check_name(name.strip())
        limits.check_config(name.strip(), config)
        initial = raw.get("initial_state")
        if initial is not None and not isinstance(initial, str):
            raise BadRequestError("initial_state must be a string")
        return cls.model_construct(
            name=name.strip(),
            config=config,
            initial_state=initial,
            initial_offsets=raw.get("initial_offsets"),  # checked like a KIP-875 PATCH body
        )


class ConnectorConfigRequest(RootModel[dict[str, ConfigValue]]):
    """A whole connector config. ``[hidden]`` keeps the stored value of a secret."""

    @classmethod
    def read(cls, raw: Any) -> dict[str, str]:
        """The config, values as strings."""
        return config_map(raw)


class PatchConfigRequest(RootModel[dict[str, ConfigValue | None]]):
    """Keys to set; a null value removes the key (KIP-477)."""

    @classmethod
    def read(cls, raw: Any) -> dict[str, str | None]:
        """The keys, values as strings or None."""
        return config_map(raw, allow_null=True)


class TaskConfig(Model):
    id: ConnectorTaskId
    config: dict[str, str]

    @classmethod
    def of(cls, connector: str, task: int, config: dict[str, str]) -> Self:
        return cls.model_validate({"id": {"connector": connector, "task": task}, "config": config})


class TopicList(BaseModel):
    topics: list[str]


class ConnectorTopics(RootModel[dict[str, TopicList]]):
    """KIP-558: connector name -> the topics it used."""

    @classmethod
    def of(cls, connector: str, topics: list[str]) -> Self:
        return cls({connector: TopicList(topics=topics)})

    def wire(self) -> dict[str, Any]:
        return self.model_dump()
