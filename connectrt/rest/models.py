"""The REST API's request and response bodies: one pydantic model each, the one description.

Each model is what the OpenAPI document shows (:mod:`connectrt.rest.openapi` attaches it to
the operations that read or answer it) and what the handlers use:

* a response model has a constructor ``of(...)`` from the herder's answer, and
  :meth:`_Body.wire` renders it: the fields that were set, in the order declared, by alias,
  then any extra keys (the models accept them). That is Kafka Connect's JSON, key order
  included; fields marked :data:`~pydantic.json_schema.SkipJsonSchema` are connectrt's
  additions that the document does not list (they were never documented);
* a request model has ``read(raw)``: the parsed JSON body, checked as Kafka Connect checks it
  (lenient where Kafka Connect is: config values may be numbers or booleans, they are stored
  as strings; values the herder checks, such as ``initial_state`` or the offsets, are passed
  on as they are), with Kafka Connect's messages (a :class:`BadRequestError` is a 400). The
  fields document the body a client should send; ``read`` does not reject more than it.

The schemathesis conformance run checks every answer against these models. Stateless.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.json_schema import SkipJsonSchema

from connectrt.api.config import NO_DEFAULT, ConfigKey, ConfigType, Password, render_value
from connectrt.rest.config_limits import MAX_NAME_LENGTH, ConfigLimits
from connectrt.runtime.config.connector import ValidationResult
from connectrt.runtime.dlq_replay.progress import ReplayStatus as ReplayRun
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder import info as herder_info
from connectrt.runtime.herder.loggers import KAFKA_LEVELS
from connectrt.runtime.plugins.registry import PluginDesc

__all__ = [
    "REPLAY_REQUEST_SCHEMA",
    "AlterOffsetsRequest",
    "ConfigInfos",
    "ConfigKeyInfo",
    "ConnectorConfigRequest",
    "ConnectorInfo",
    "ConnectorOffsets",
    "ConnectorState",
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
    "config_map",
]

ConfigValue = str | int | float | bool


class _Body(BaseModel):
    def wire(self) -> dict[str, Any]:
        """The JSON object of this body: the fields set (in declaration order, by alias),
        then the extra keys."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class _Model(_Body):
    model_config = ConfigDict(extra="allow")


def config_map(value: Any, allow_null: bool = False) -> dict[str, Any]:
    """A connector config from a JSON body: an object whose values are strings (numbers and
    booleans become strings, as Kafka Connect reads them; null kept when ``allow_null``).
    BadRequestError otherwise."""
    if not isinstance(value, dict):
        raise BadRequestError("Connector configuration must be a JSON object of strings")
    out: dict[str, Any] = {}
    for k, v in value.items():
        if v is None and allow_null:
            out[k] = None
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, str | int | float):
            out[k] = str(v)
        else:
            raise BadRequestError(f"Configuration value for '{k}' must be a string")
    return out


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

    @classmethod
    def of(cls, status: str, message: str) -> Self:
        return cls(status=status, message=message)  # type: ignore[arg-type]


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


class PartitionOffset(_Model):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class OffsetsMessage(_Model):
    message: str

    @classmethod
    def of(cls, message: str) -> Self:
        return cls(message=message)


class ConnectorInfo(_Model):
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


class ConnectorState(_Model):
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
class TaskState(_Model):
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


class ConnectorStateInfo(_Model):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str

    @classmethod
    def of(cls, info: herder_info.ConnectorStateInfo) -> Self:
        return cls(
            name=info.name,
            connector=ConnectorState.of(info.connector),
            tasks=[TaskState.of(t, s) for t, s in sorted(info.tasks)],
            type=info.type,
        )


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


class TaskConfig(_Model):
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


class ConnectorOffsets(_Model):
    offsets: list[PartitionOffset]


class AlterOffsetsRequest(BaseModel):
    offsets: list[PartitionOffset] = Field(description="KIP-875: the offsets to write")

    @classmethod
    def read(cls, raw: Any) -> Any:
        """The ``offsets`` as sent (None when missing), for the herder to check."""
        return raw.get("offsets") if isinstance(raw, dict) else None


class RewindRequest(BaseModel):
    to: Literal["earliest", "latest", "timestamp", "offset"]
    timestamp: datetime | None = Field(default=None, description="ISO-8601, for to=timestamp")
    offset: int | None = Field(default=None, description="For to=offset", ge=0, le=2**63 - 1)
    topic: str | None = Field(default=None, description="One topic (default: every topic)")

    @classmethod
    def read(cls, raw: Any) -> RewindRequest:
        """Checked for types; ``to`` (any string) and the offset's range are the herder's."""
        if not isinstance(raw, dict) or not isinstance(raw.get("to"), str):
            raise BadRequestError("Body must be a JSON object with a 'to' string")
        when = None
        if raw.get("timestamp") is not None:
            try:
                when = datetime.fromisoformat(str(raw["timestamp"]).replace("Z", "+00:00"))
            except ValueError:
                raise BadRequestError(f"Invalid ISO-8601 timestamp {raw['timestamp']}") from None
            if when.timestamp() < 0:  # Kafka's offsets for times start at the epoch
                raise BadRequestError(f"Timestamp {raw['timestamp']} is before 1970-01-01")
        offset = raw.get("offset")
        if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
            raise BadRequestError("'offset' must be an integer")
        topic = raw.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise BadRequestError("'topic' must be a string")
        return cls.model_construct(to=raw["to"], timestamp=when, offset=offset, topic=topic)


class ControlEventOutcome(_Model):
    id: str | None = None
    outcome: str | None = None


class PluginInfo(_Model):
    class_: str = Field(alias="class")
    type: str
    version: str | None = None

    @classmethod
    def of(cls, desc: PluginDesc) -> Self:
        body: dict[str, Any] = {"class": desc.class_name, "type": desc.type}
        version = desc.version()
        if version is not None:
            body["version"] = version
        return cls.model_validate(body)


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

    @classmethod
    def of(cls, key: ConfigKey) -> Self:
        return cls(
            name=key.name,
            type=key.type.value,
            required=key.required,
            default_value=_render_default(key),
            importance=key.importance.value,
            documentation=key.documentation,
            group=key.group,
            order_in_group=key.order_in_group,
            width=key.width.value,
            display_name=key.display_name or key.name,
            dependents=list(key.dependents),
        )


def _render_default(key: ConfigKey) -> str | None:
    if key.default is NO_DEFAULT or key.default is None:
        return None
    if key.type is ConfigType.PASSWORD:
        return Password.HIDDEN
    return render_value(key.default, key.type)


def _rendered_value(value: Any, key: ConfigKey | None) -> Any:
    if isinstance(value, Password) or (key is not None and key.type is ConfigType.PASSWORD):
        return None if value is None else Password.HIDDEN
    if value is None or isinstance(value, str):
        return value
    return render_value(value, key.type if key else None)


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

    @classmethod
    def of(cls, result: ValidationResult, hide: Callable[[str], bool] | None = None) -> Self:
        """Kafka's ConfigInfos; ``hide(key)`` masks further values (keys matching the secret
        patterns)."""
        keys = result.definition.keys
        configs = []
        for name, cv in result.values.items():
            key = keys.get(name)
            value = _rendered_value(cv.value, key)
            if value is not None and hide is not None and hide(name):
                value = Password.HIDDEN
            configs.append(
                ConfigInfo(
                    definition=ConfigKeyInfo.of(key) if key is not None else None,
                    value=ConfigValueInfo(
                        name=name,
                        value=value,
                        recommended_values=list(cv.recommended_values),
                        errors=list(cv.errors),
                        visible=cv.visible,
                    ),
                )
            )
        return cls(
            name=result.connector_class,
            error_count=result.error_count,
            groups=result.groups,
            configs=configs,
        )


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

    @classmethod
    def read(cls, raw: Any) -> str:
        """The level as sent (the herder checks the name)."""
        level = raw.get("level") if isinstance(raw, dict) else None
        if not level or not isinstance(level, str):
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        return level


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

    @classmethod
    def of(cls, status: ReplayRun) -> Self:
        request = status.request
        return cls.model_validate(
            {
                "id": status.id,
                "connector": status.connector,
                "type": status.connector_type,
                "state": status.state.value,
                "dlq_topic": status.dlq_topic,
                "group": status.group,
                "dry_run": request.dry_run,
                "from": _iso(request.from_ms),
                "to": _iso(request.to_ms),
                "max_replays": request.max_replays,
                "started": _iso(status.started_ms),
                "finished": _iso(status.finished_ms),
                "counts": {
                    "read": status.read,
                    "replayed": status.replayed,
                    "skipped": status.skipped,
                    "failed_again": status.failed_again,
                },
                "skipped_reasons": dict(status.skipped_reasons),
                "partitions": [
                    {
                        "partition": p.partition,
                        "start": p.start,
                        "end": p.end,
                        "position": p.position,
                    }
                    for p in status.partitions
                ],
                "sink_caught_up": status.sink_caught_up,
                "message": status.message,
            }
        )


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


_TIMESTAMP = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "integer", "minimum": 0, "description": "epoch milliseconds"},
        {"type": "null"},
    ]
}
#: The body of ``POST /connectors/{name}/dlq/replay`` (every field optional): the route's own
#: schema in the document; the runtime's ``replay_request`` reads and checks it.
REPLAY_REQUEST_SCHEMA = {
    "type": "object",
    "properties": {
        "from": _TIMESTAMP,
        "to": _TIMESTAMP,
        "dry_run": {"type": "boolean"},
        "max_replays": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    },
    "additionalProperties": False,
}
