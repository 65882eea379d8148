"""The plugin-author API: everything a connector, converter or transform author imports.

Import from here, not from the submodules: ``from connectrt.api import SinkTask, SinkRecord``.
The package has no runtime imports, so connectors written against it run unchanged on the
standalone worker, the REST-managed worker and the Spark backend. The data model (schemas,
structs, logical types) is its sibling :mod:`connectrt.data`.

What is here, by plugin kind:

* connectors: :class:`Connector`, :class:`SourceConnector`, :class:`SinkConnector`, their
  contexts, :class:`ExactlyOnceSupport`, :class:`ConnectorTransactionBoundaries`;
* tasks: :class:`SourceTask`, :class:`SinkTask`, :class:`BatchingSinkTask` (a sink task whose
  author writes whole batches), their contexts, :class:`OffsetStorageReader`,
  :class:`TransactionContext` (exactly-once sources defining their own transactions),
  :class:`ErrantRecordReporter`;
* records: :class:`SourceRecord`, :class:`SinkRecord`, :class:`SinkRecordBatch` (what
  ``put()`` receives: the records as a list and as columns), :class:`SourceRecordBatch` (what
  ``poll()`` may return instead of a list: one partition's records as columns),
  :class:`ConnectRecord`,
  :class:`Header`, :class:`TopicPartition`, :class:`TimestampType`;
* transforms: :class:`Transformation`, :class:`Predicate`;
* converters: :class:`Converter`, :class:`HeaderConverter`, :class:`DataAndHeaderConverter`
  (one class serving as both), :class:`SchemaAndValue`, :class:`ConnectColumns`,
  ``RawHeaders`` and ``ConfigKeys`` (their signature and option types);
* configuration: :class:`ConfigDef` with :class:`ConfigType`, :class:`Importance`,
  :class:`Width`, the validators and :class:`Password`; :func:`with_prefix`;
* metrics (KIP-877): :class:`PluginMetrics` (``context.plugin_metrics``), :class:`Monitorable`
  for converters and transforms, :class:`Sensor`, :class:`MetricName` and the stats
  (:class:`CumulativeCount`, :class:`CumulativeSum`, :class:`Avg`, :class:`Max`, :class:`Min`,
  :class:`Value`);
* files: :func:`file_access`, the worker's rule for which files a plugin that opens files
  named by its config may read and write (:class:`FileAccess`, ``file.connectors.allowed.dirs``);
* errors: :class:`ConnectError` and the kinds a plugin raises (:class:`RetriableError`,
  :class:`DataError`, :class:`ConfigError`, ...).

A few names stay in their submodules on purpose (``tests/unit/test_api_surface.py`` lists
them with the reason): the type variable ``R`` and ``apply_each_in_place`` in
:mod:`connectrt.api.transform`, and ``IllegalWorkerStateError``, which only the worker raises.
"""

from connectrt.api.batching import BatchingSinkTask
from connectrt.api.config import (
    NO_DEFAULT,
    CompositeValidator,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    Validator,
    ValidList,
    ValidRegex,
    ValidString,
    Width,
    with_prefix,
)
from connectrt.api.connector import (
    Connector,
    ConnectorContext,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from connectrt.api.converter import (
    ConfigKeys,
    ConnectColumns,
    Converter,
    DataAndHeaderConverter,
    HeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    NotFoundError,
    RetriableError,
    SchemaBuilderError,
    SchemaProjectorError,
)
from connectrt.api.file_access import ALLOWED_DIRS_CONFIG, FileAccess, file_access
from connectrt.api.metrics import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    MeasurableStat,
    MetricName,
    Min,
    Monitorable,
    PluginMetrics,
    Sensor,
    Value,
)
from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import (
    ConnectRecord,
    Header,
    SinkRecord,
    SourceRecord,
    TimestampType,
    TopicPartition,
)
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import (
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
    TransactionContext,
)
from connectrt.api.transform import Predicate, Transformation

__all__ = [
    "ALLOWED_DIRS_CONFIG",
    "NO_DEFAULT",
    "AlreadyExistsError",
    "Avg",
    "BatchingSinkTask",
    "CompositeValidator",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigKeys",
    "ConfigType",
    "ConfigValue",
    "ConnectColumns",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "CumulativeCount",
    "CumulativeSum",
    "DataAndHeaderConverter",
    "DataError",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "FileAccess",
    "Header",
    "HeaderConverter",
    "Importance",
    "Max",
    "MeasurableStat",
    "MetricName",
    "Min",
    "Monitorable",
    "NonEmptyString",
    "NotFoundError",
    "OffsetStorageReader",
    "Password",
    "PluginMetrics",
    "Predicate",
    "Range",
    "RawHeaders",
    "RetriableError",
    "SchemaAndValue",
    "SchemaBuilderError",
    "SchemaProjectorError",
    "Sensor",
    "SinkConnector",
    "SinkConnectorContext",
    "SinkRecord",
    "SinkRecordBatch",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceConnectorContext",
    "SourceRecord",
    "SourceRecordBatch",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TimestampType",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "ValidList",
    "ValidRegex",
    "ValidString",
    "Validator",
    "Value",
    "Width",
    "file_access",
    "with_prefix",
]
