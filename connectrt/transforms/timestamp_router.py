"""TimestampRouter: route to a topic named from the original topic and the record timestamp.

``topic.format`` (default ``${topic}-${timestamp}``) and ``timestamp.format`` (a Java
SimpleDateFormat pattern, default ``yyyyMMdd``, rendered in UTC). A record without a timestamp
is a DataError.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.transform import R
from connectrt.errors import DataError
from connectrt.transforms._dateformat import JavaDateFormat
from connectrt.transforms._util import copy_record
from connectrt.transforms.base import BundledTransformation

__all__ = ["TimestampRouter"]

TOPIC_FORMAT = "topic.format"
TIMESTAMP_FORMAT = "timestamp.format"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _valid_format(name: str, value: Any) -> None:
    try:
        JavaDateFormat(value)
    except ValueError as exc:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: {exc}", name, value
        ) from exc


class TimestampRouter(BundledTransformation[R]):
    """Update the record's topic field as a function of the original topic and timestamp."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            TOPIC_FORMAT,
            ConfigType.STRING,
            "${topic}-${timestamp}",
            None,
            Importance.HIGH,
            "Format string which can contain <code>${topic}</code> and "
            "<code>${timestamp}</code> as placeholders for the topic and timestamp, "
            "respectively.",
        )
        .define(
            TIMESTAMP_FORMAT,
            ConfigType.STRING,
            "yyyyMMdd",
            _valid_format,
            Importance.HIGH,
            "Format string for the timestamp that is compatible with "
            "<code>java.text.SimpleDateFormat</code>.",
        )
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._topic_format: str = parsed[TOPIC_FORMAT]
        self._format = JavaDateFormat(parsed[TIMESTAMP_FORMAT])

    def apply(self, record: R) -> R:
        ts = record.timestamp
        if ts is None:
            raise DataError(f"TimestampRouter: Timestamp missing on record: {record!r}")
        when = _EPOCH + dt.timedelta(milliseconds=ts)
        topic = self._topic_format.replace("${topic}", record.topic).replace(
            "${timestamp}", self._format.format(when)
        )
        return copy_record(record, topic=topic)
