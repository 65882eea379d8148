"""Pydantic models of the REST API's request and response bodies, for its OpenAPI document.

These describe the JSON that :mod:`connectrt.rest.wire` builds and the handlers read (Kafka
Connect's shapes); :mod:`connectrt.rest.openapi` attaches them to every operation. The handlers
keep building and reading plain JSON, so the wire format stays exactly Kafka Connect's (lenient
where Kafka Connect is: config values may be numbers or booleans, they are stored as strings);
the schemathesis conformance run checks every answer against these models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from connectrt.rest.config_limits import MAX_NAME_LENGTH
from connectrt.runtime.herder.loggers import KAFKA_LEVELS

__all__ = [
    "ConfigInfos",
    "ConfigKeyInfo",
    "ConnectorConfigRequest",
    "ConnectorInfo",
    "ConnectorOffsets",
    "ConnectorStateInfo",
    "ConnectorTopics",
    "ControlEventOutcome",
    "CreateConnectorRequest",
    "ErrorBody",
    "ExpandedConnectors",
    "Health",
    "LoggerLevel",
    "LoggerLevelRequest",
    "OffsetsMessage",
    "PatchConfigRequest",
    "PluginInfo",
    "ReplayStatus",
    "RewindRequest",
    "ServerInfo",
    "TaskConfig",
    "TaskState",
]

ConfigValue = str | int | float | bool


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(BaseModel):
    """Every error: Kafka Connect's ``{"error_code", "message"}``."""

    error_code: int = Field(description="The HTTP status code")
    message: str


class ServerInfo(_Model):
    version: str
    commit: str
    kafka_cluster_id: str | None = Field(description="None while Kafka is unreachable")


class Health(_Model):
    status: Literal["healthy", "starting", "unhealthy"]
    message: str


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


class PartitionOffset(_Model):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class OffsetsMessage(_Model):
    message: str


class ConnectorInfo(_Model):
    name: str
    config: dict[str, str] = Field(description="Secrets are shown as [hidden]")
    tasks: list[ConnectorTaskId]
    type: str = Field(description="source, sink or unknown")
    offsets_status: OffsetsMessage | None = Field(
        default=None, description="KIP-995: only answering a create with initial_offsets"
    )


class ConnectorState(_Model):
    state: str = Field(description="UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED or RESTARTING")
    worker_id: str
    trace: str | None = Field(default=None, description="Only when FAILED")


class TaskState(ConnectorState):
    id: int
    restarts: int | None = Field(
        default=None, description="connectrt: automatic restarts so far (errors.task.restart.*)"
    )


class ConnectorStateInfo(_Model):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str


class ExpandedConnector(_Model):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class ExpandedConnectors(RootModel[dict[str, ExpandedConnector]]):
    """``GET /connectors?expand=status&expand=info``: name -> what was asked for."""


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


class ConnectorConfigRequest(RootModel[dict[str, ConfigValue]]):
    """A whole connector config. ``[hidden]`` keeps the stored value of a secret."""


class PatchConfigRequest(RootModel[dict[str, ConfigValue | None]]):
    """Keys to set; a null value removes the key (KIP-477)."""


class TaskConfig(_Model):
    id: ConnectorTaskId
    config: dict[str, str]


class TopicList(BaseModel):
    topics: list[str]


class ConnectorTopics(RootModel[dict[str, TopicList]]):
    """KIP-558: connector name -> the topics it used."""


class ConnectorOffsets(_Model):
    offsets: list[PartitionOffset]


class AlterOffsetsRequest(BaseModel):
    offsets: list[PartitionOffset] = Field(description="KIP-875: the offsets to write")


class RewindRequest(BaseModel):
    to: Literal["earliest", "latest", "timestamp", "offset"]
    timestamp: datetime | None = Field(default=None, description="ISO-8601, for to=timestamp")
    offset: int | None = Field(default=None, description="For to=offset", ge=0, le=2**63 - 1)
    topic: str | None = Field(default=None, description="One topic (default: every topic)")


class ControlEventOutcome(_Model):
    id: str | None = None
    outcome: str | None = None


class PluginInfo(_Model):
    class_: str = Field(alias="class")
    type: str
    version: str | None = None


class ConfigKeyInfo(_Model):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(_Model):
    name: str
    value: Any = None
    recommended_values: list[Any]
    errors: list[str]
    visible: bool


class ConfigInfo(_Model):
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo


class ConfigInfos(_Model):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class LoggerLevel(_Model):
    level: str
    last_modified: int | None


def _any_case(words: list[str]) -> str:
    """A regular expression matching any of ``words`` in any letter case."""
    alternatives = ("".join(f"[{c.upper()}{c.lower()}]" for c in w) for w in words)
    return "^(?:" + "|".join(alternatives) + ")$"


class LoggerLevelRequest(BaseModel):
    level: str = Field(
        description="A log4j or Python level name, in any case: " + ", ".join(KAFKA_LEVELS),
        pattern=_any_case(list(KAFKA_LEVELS)),
    )


class ReplayCounts(_Model):
    read: int
    replayed: int
    skipped: int
    failed_again: int


class ReplayPartition(_Model):
    partition: int
    start: int
    end: int
    position: int


class ReplayStatus(_Model):
    """connectrt: one dead letter queue replay run (``/connectors/{name}/dlq/replay``)."""

    id: str
    connector: str
    type: str
    state: str
    dlq_topic: str
    group: str
    dry_run: bool
    from_: str | None = Field(alias="from")
    to: str | None
    max_replays: int | None
    started: str | None
    finished: str | None
    counts: ReplayCounts
    skipped_reasons: dict[str, int]
    partitions: list[ReplayPartition]
    sink_caught_up: bool | None
    message: str | None
