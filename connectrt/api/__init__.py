"""The plugin-author API: everything a connector, converter or transform author imports.

This package has no runtime imports: connectors written against it run unchanged on the
standalone worker, the REST-managed worker and the Spark backend.
"""

from connectrt.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidList,
    ValidRegex,
    ValidString,
    Width,
)
from connectrt.api.connector import (
    Connector,
    ConnectorContext,
    ExactlyOnceSupport,
    SinkConnector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from connectrt.api.converter import Converter, HeaderConverter, SchemaAndValue
from connectrt.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    NotFoundError,
    RetriableError,
)
from connectrt.api.records import (
    ConnectRecord,
    Header,
    SinkRecord,
    SourceRecord,
    TimestampType,
    TopicPartition,
)
from connectrt.api.task import (
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
)

__all__ = [
    "NO_DEFAULT",
    "AlreadyExistsError",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "Converter",
    "DataError",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Header",
    "HeaderConverter",
    "Importance",
    "NonEmptyString",
    "NotFoundError",
    "OffsetStorageReader",
    "Password",
    "Range",
    "RetriableError",
    "SchemaAndValue",
    "SinkConnector",
    "SinkConnectorContext",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceConnectorContext",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TimestampType",
    "TopicPartition",
    "ValidList",
    "ValidRegex",
    "ValidString",
    "Width",
]
