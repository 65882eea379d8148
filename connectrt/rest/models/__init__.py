"""The REST API's request and response bodies: one pydantic model each, the one description.

Each model is what the OpenAPI document shows (:mod:`connectrt.rest.openapi` attaches it to
the operations that read or answer it) and what the handlers use:

* a response model has a constructor ``of(...)`` from the herder's answer, and
  :meth:`.base.Body.wire` renders it: the fields that were set, in the order declared, by alias,
  then any extra keys (the models accept them). That is Kafka Connect's JSON, key order
  included; fields marked :data:`~pydantic.json_schema.SkipJsonSchema` are connectrt's
  additions that the document does not list (they were never documented);
* a request model has ``read(raw)``: the parsed JSON body, checked as Kafka Connect checks it
  (lenient where Kafka Connect is: config values may be numbers or booleans, they are stored
  as strings; values the herder checks, such as ``initial_state`` or the offsets, are passed
  on as they are), with Kafka Connect's messages (a :class:`BadRequestError` is a 400). The
  fields document the body a client should send; ``read`` refuses only what Kafka Connect
  refuses, so it accepts some bodies the document does not describe.

The schemathesis conformance run checks every answer against these models. Stateless.

One module per resource: :mod:`.base` (what every body shares), :mod:`.worker` (root, health,
control events, loggers), :mod:`.connectors`, :mod:`.offsets`, :mod:`.plugins`, :mod:`.dlq`;
this package exports them all (``from connectrt.rest import models as m``; ``m.ConnectorInfo``).
"""

from __future__ import annotations

from connectrt.rest.models.base import (
    Body,
    ConfigValue,
    ErrorBody,
    Model,
    config_map,
)
from connectrt.rest.models.connectors import (
    ConnectorConfigRequest,
    ConnectorInfo,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    ConnectorTopics,
    CreateConnectorRequest,
    ExpandedConnector,
    ExpandedConnectors,
    PatchConfigRequest,
    TaskConfig,
    TaskState,
    TopicList,
    connector_list,
)
from connectrt.rest.models.dlq import (
    REPLAY_REQUEST_SCHEMA,
    ReplayCounts,
    ReplayPartition,
    ReplayStatus,
)
from connectrt.rest.models.offsets import (
    AlterOffsetsRequest,
    ConnectorOffsets,
    OffsetsMessage,
    PartitionOffset,
    RewindRequest,
)
from connectrt.rest.models.plugins import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    PluginInfo,
)
from connectrt.rest.models.worker import (
    ControlEventOutcome,
    Health,
    LoggerLevel,
    LoggerLevelRequest,
    ServerInfo,
)

__all__ = [
    "REPLAY_REQUEST_SCHEMA",
    "AlterOffsetsRequest",
    "Body",
    "ConfigInfo",
    "ConfigInfos",
    "ConfigKeyInfo",
    "ConfigValue",
    "ConfigValueInfo",
    "ConnectorConfigRequest",
    "ConnectorInfo",
    "ConnectorOffsets",
    "ConnectorState",
    "ConnectorStateInfo",
    "ConnectorTaskId",
    "ConnectorTopics",
    "ControlEventOutcome",
    "CreateConnectorRequest",
    "ErrorBody",
    "ExpandedConnector",
    "ExpandedConnectors",
    "Health",
    "LoggerLevel",
    "LoggerLevelRequest",
    "Model",
    "OffsetsMessage",
    "PartitionOffset",
    "PatchConfigRequest",
    "PluginInfo",
    "ReplayCounts",
    "ReplayPartition",
    "ReplayStatus",
    "RewindRequest",
    "ServerInfo",
    "TaskConfig",
    "TaskState",
    "TopicList",
    "config_map",
    "connector_list",
]
