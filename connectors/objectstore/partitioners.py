"""Partitioners: the directory under ``<topics.dir>/<topic>/`` each record's object goes to.

As Confluent's storage partitioners name them: default (``partition=<p>``), field
(``<field>=<value>/...``), time-based (the record time, from the timestamp extractor, rounded
down to ``partition.duration.ms`` and formatted with ``path.format`` in ``timezone``).
A partitioner works on columns: :meth:`Partitioner.encode` returns one directory per record,
or a single one when every record of the slice shares it (the default partitioner). Timestamp
extractors likewise give a column of epoch milliseconds. Stateless apart from a small cache of
formatted time buckets; used on the task thread.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence
from typing import Any

from connectors.objectstore.config import StoreConfig
from connectrt.data import Struct
from connectrt.errors import DataError

__all__ = ["Partitioner", "TimestampExtractor", "joda_to_strftime", "make_partitioner"]


class TimestampExtractor:
    """Each record's time in epoch milliseconds: Record (Kafka timestamp), RecordField (a
    value field) or Wallclock (now, the same for the whole slice)."""

    def __init__(self, kind: str, field: str) -> None:
        self.kind = kind
        self.field = field

    def extract(self, values: Sequence[Any], timestamps: Sequence[int | None]) -> list[int]:
        if self.kind == "wallclock":
            return [int(time.time() * 1000)] * len(values)
        if self.kind == "record":
            if None in timestamps:
                raise DataError("a record has no Kafka timestamp for timestamp.extractor=Record")
            return list(timestamps)  # type: ignore[arg-type]
        return [_field_millis(_field(v, self.field), self.field) for v in values]


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Struct):
        return value.get(name)
    if isinstance(value, dict):
        return value.get(name)
    raise DataError(f"cannot read field {name!r} of a {type(value).__name__} value")


def _field_millis(value: Any, name: str) -> int:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return _field_millis(dt.datetime.fromisoformat(value), name)
        except ValueError:
            pass
    raise DataError(f"timestamp field {name!r} is {value!r}, not a timestamp")


# Joda-Time pattern letters Confluent's path.format uses, as strftime directives.
_JODA = {
    "YYYY": "%Y",
    "yyyy": "%Y",
    "YY": "%y",
    "yy": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
    "DDD": "%j",
    "ww": "%V",
}
_JODA_TOKEN = re.compile(r"'([^']*)'|(YYYY|yyyy|YY|yy|MM|dd|HH|mm|ss|DDD|ww)|([A-Za-z])|(.)")


def joda_to_strftime(pattern: str) -> str:
    """``'year'=YYYY/'month'=MM`` -> ``year=%Y/month=%m``; DataError for an unknown letter."""
    out: list[str] = []
    for literal, token, unknown, other in _JODA_TOKEN.findall(pattern):
        if token:
            out.append(_JODA[token])
        elif unknown:
            raise DataError(f"path.format: unsupported pattern letter {unknown!r} in {pattern!r}")
        else:
            out.append((literal or other).replace("%", "%%"))
    return "".join(out)


class Partitioner:
    """The default partitioner: ``partition=<kafka partition>``."""

    def encode(
        self, partition: int, values: Sequence[Any], timestamps: Sequence[int | None]
    ) -> str | list[str]:
        """One directory for all ``values`` (str) or one per value (list)."""
        return f"partition={partition}"


class FieldPartitioner(Partitioner):
    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)

    def encode(
        self, partition: int, values: Sequence[Any], timestamps: Sequence[int | None]
    ) -> str | list[str]:
        return ["/".join(f"{name}={_field(v, name)}" for name in self.fields) for v in values]


class TimeBasedPartitioner(Partitioner):
    def __init__(self, config: StoreConfig) -> None:
        self.format = joda_to_strftime(config.path_format)
        self.duration = config.partition_duration_ms
        assert config.timezone is not None
        self.zone = config.timezone
        self.extractor = TimestampExtractor(config.timestamp_extractor, config.timestamp_field)
        self._paths: dict[int, str] = {}

    def _path(self, bucket: int) -> str:
        path = self._paths.get(bucket)
        if path is None:
            if len(self._paths) > 4096:
                self._paths.clear()
            moment = dt.datetime.fromtimestamp(bucket / 1000, tz=self.zone)
            path = self._paths[bucket] = moment.strftime(self.format)
        return path

    def encode(
        self, partition: int, values: Sequence[Any], timestamps: Sequence[int | None]
    ) -> str | list[str]:
        millis = self.extractor.extract(values, timestamps)
        duration = self.duration
        path = self._path
        return [path(m - m % duration) for m in millis]


def make_partitioner(config: StoreConfig) -> Partitioner:
    if config.partitioner == "default":
        return Partitioner()
    if config.partitioner == "field":
        return FieldPartitioner(config.partition_fields)
    return TimeBasedPartitioner(config)
