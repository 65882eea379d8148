"""Object storage sink configuration: Confluent's S3 sink keys where they mean the same.

:data:`CONFIG_DEF` validates each key on its own; :func:`parse_config` turns a raw config into
a frozen :class:`StoreConfig` and applies the rules between keys (a time-based partitioner
needs ``path.format``, ``partition.duration.ms`` and ``timezone``; a field partitioner needs
``partition.field.name``; S3 needs ``s3.bucket.name``). Pure functions, thread-safe; no pyarrow
here, so the configuration reference can be generated without it.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.config_groups import GroupedDefinitions
from connectrt.api import ConfigError, ConfigType, Importance, Password, Range

__all__ = ["CONFIG_DEF", "FORMATS", "PARTITIONERS", "StoreConfig", "parse_config"]

BUCKET = "s3.bucket.name"
STORE_URL = "store.url"
REGION = "s3.region"
TOPICS_DIR = "topics.dir"
FLUSH_SIZE = "flush.size"
ROTATE_INTERVAL = "rotate.interval.ms"
ROTATE_SCHEDULE = "rotate.schedule.interval.ms"
FORMAT = "format.class"
PARQUET_CODEC = "parquet.codec"
PARTITIONER = "partitioner.class"
PARTITION_FIELDS = "partition.field.name"
PATH_FORMAT = "path.format"
PARTITION_DURATION = "partition.duration.ms"
LOCALE = "locale"
TIMEZONE = "timezone"
TIMESTAMP_EXTRACTOR = "timestamp.extractor"
TIMESTAMP_FIELD = "timestamp.field"
COMPATIBILITY = "schema.compatibility"
ACCESS_KEY = "aws.access.key.id"
SECRET_KEY = "aws.secret.access.key"
NULL_VALUES = "behavior.on.null.values"

# Confluent's class names and the short names, to the short name.
FORMATS: dict[str, str] = {
    "parquet": "parquet",
    "io.confluent.connect.s3.format.parquet.ParquetFormat": "parquet",
    "json": "json",
    "io.confluent.connect.s3.format.json.JsonFormat": "json",
    "avro": "avro",
    "io.confluent.connect.s3.format.avro.AvroFormat": "avro",
}
_STORAGE_PARTITIONER = "io.confluent.connect.storage.partitioner."
PARTITIONERS: dict[str, str] = {
    "default": "default",
    _STORAGE_PARTITIONER + "DefaultPartitioner": "default",
    "field": "field",
    _STORAGE_PARTITIONER + "FieldPartitioner": "field",
    "time": "time",
    _STORAGE_PARTITIONER + "TimeBasedPartitioner": "time",
    "hourly": "hourly",
    _STORAGE_PARTITIONER + "HourlyPartitioner": "hourly",
    "daily": "daily",
    _STORAGE_PARTITIONER + "DailyPartitioner": "daily",
}
_EXTRACTORS = {"Record": "record", "RecordField": "recordfield", "Wallclock": "wallclock"}
_CODECS = ("none", "uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli")
_COMPATIBILITIES = ("NONE", "BACKWARD", "FORWARD", "FULL")


def _one_of(options: Mapping[str, str], what: str) -> Any:
    def check(name: str, value: Any) -> None:
        if value is not None and value not in options:
            raise ConfigError(
                f"Unknown {what} {value!r}; expected one of: {', '.join(options)}", name, value
            )

    return check


def _lower_one_of(*options: str) -> Any:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).lower() not in options:
            raise ConfigError(f"Must be one of: {', '.join(options)}", name, value)

    return check


def _store_url(name: str, value: Any) -> None:
    if value and not str(value).startswith(("file:", "http://", "https://")):
        raise ConfigError(
            "Must be an http(s):// endpoint of S3-compatible storage or a file:// URL", name, value
        )


def _timezone(name: str, value: Any) -> None:
    if value:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(f"Unknown time zone: {exc}", name, value) from exc


_STORE, _FILES, _PARTITIONS, _SECURITY = "Storage", "Files", "Partitioner", "Security"

CONFIG_DEF = (
    GroupedDefinitions()
    .group(_STORE)
    .define(
        STORE_URL,
        ConfigType.STRING,
        None,
        _store_url,
        Importance.HIGH,
        "Where objects go: an http(s):// endpoint of S3-compatible storage (MinIO, moto...), "
        "or file:///dir for a local (or mounted) directory. Empty: AWS S3 in s3.region.",
    )
    .define(
        BUCKET,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "The bucket objects are written to (S3 only; with file:// the directory is the root).",
    )
    .define(
        REGION,
        ConfigType.STRING,
        "us-west-2",
        None,
        Importance.MEDIUM,
        "The S3 region.",
    )
    .define(
        TOPICS_DIR,
        ConfigType.STRING,
        "topics",
        None,
        Importance.HIGH,
        "The directory (key prefix) under the bucket or root that holds every topic's objects.",
    )
    .group(_FILES)
    .define(
        FLUSH_SIZE,
        ConfigType.INT,
        None,
        Range.at_least(1),
        Importance.HIGH,
        "Records of one Kafka partition per object set: the files of a partition are written "
        "once this many records were received for it. Required.",
    )
    .define(
        ROTATE_INTERVAL,
        ConfigType.LONG,
        -1,
        Range.at_least(-1),
        Importance.MEDIUM,
        "Write a partition's files once the timestamps (from timestamp.extractor) of their "
        "records span this long; -1 disables. Deterministic, so rewrites after a crash match.",
    )
    .define(
        ROTATE_SCHEDULE,
        ConfigType.LONG,
        -1,
        Range.at_least(-1),
        Importance.MEDIUM,
        "Write a partition's files this long (wall clock) after their first record, even when "
        "no more records come; -1 disables. Wall-clock boundaries are not reproducible after a "
        "crash, so exactly-once is not guaranteed with it (as in Confluent's sink).",
    )
    .define(
        FORMAT,
        ConfigType.STRING,
        None,
        _one_of(FORMATS, "format"),
        Importance.HIGH,
        "The file format: parquet, json (JSON lines) or avro, or Confluent's class names "
        "(io.confluent.connect.s3.format.parquet.ParquetFormat, ...). Required.",
    )
    .define(
        PARQUET_CODEC,
        ConfigType.STRING,
        "snappy",
        _lower_one_of(*_CODECS),
        Importance.LOW,
        "The Parquet compression codec.",
    )
    .define(
        COMPATIBILITY,
        ConfigType.STRING,
        "NONE",
        _lower_one_of(*(c.lower() for c in _COMPATIBILITIES)),
        Importance.MEDIUM,
        "When a record's value schema differs from the open file's: NONE writes the files and "
        "starts new ones; BACKWARD and FULL start new files for a newer schema version and "
        "write records of an older version in the newer schema (added fields get their "
        "default); FORWARD keeps the older schema and drops what newer records added.",
    )
    .define(
        NULL_VALUES,
        ConfigType.STRING,
        "fail",
        _lower_one_of("fail", "ignore"),
        Importance.LOW,
        "A record with a null value (tombstone): fail (report it to the dead letter queue "
        "when errors.tolerance=all, else fail the task) or ignore.",
    )
    .group(_PARTITIONS)
    .define(
        PARTITIONER,
        ConfigType.STRING,
        "default",
        _one_of(PARTITIONERS, "partitioner"),
        Importance.HIGH,
        "How objects are laid out under <topics.dir>/<topic>/: default (partition=<p>), field "
        "(<field>=<value> from partition.field.name), time (path.format), hourly, daily; "
        "Confluent's class names are accepted too.",
    )
    .define(
        PARTITION_FIELDS,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "The value fields the field partitioner encodes, in order.",
    )
    .define(
        PATH_FORMAT,
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "The time partitioner's path, in Joda-Time pattern letters as Confluent's: for "
        "instance 'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH.",
    )
    .define(
        PARTITION_DURATION,
        ConfigType.LONG,
        -1,
        Range.at_least(-1),
        Importance.MEDIUM,
        "The time partitioner's bucket width: a record's timestamp is rounded down to it.",
    )
    .define(
        LOCALE,
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "The time partitioner's locale (accepted for compatibility: the numeric path fields "
        "do not depend on it).",
    )
    .define(
        TIMEZONE,
        ConfigType.STRING,
        "",
        _timezone,
        Importance.MEDIUM,
        "The time partitioner's time zone (an IANA name such as UTC or Europe/Paris).",
    )
    .define(
        TIMESTAMP_EXTRACTOR,
        ConfigType.STRING,
        "Wallclock",
        _one_of(_EXTRACTORS, "timestamp extractor"),
        Importance.MEDIUM,
        "Where the time partitioner and rotate.interval.ms read a record's time: Record (the "
        "Kafka timestamp), RecordField (timestamp.field of the value) or Wallclock (now; not "
        "reproducible after a crash).",
    )
    .define(
        TIMESTAMP_FIELD,
        ConfigType.STRING,
        "timestamp",
        None,
        Importance.LOW,
        "The value field RecordField reads: a Timestamp, epoch milliseconds, or an ISO-8601 "
        "string.",
    )
    .group(_SECURITY)
    .define(
        ACCESS_KEY,
        ConfigType.PASSWORD,
        None,
        None,
        Importance.HIGH,
        "The S3 access key id; empty: the default AWS credential chain. Resolvable through a "
        "config provider, e.g. ${file:/secrets/s3.properties:access.key}.",
    )
    .define(
        SECRET_KEY,
        ConfigType.PASSWORD,
        None,
        None,
        Importance.HIGH,
        "The S3 secret access key.",
    )
    .build()
)


@dataclass(frozen=True)
class StoreConfig:
    """The parsed configuration of one object storage sink."""

    store_url: str | None
    bucket: str | None
    region: str
    topics_dir: str
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_ms: int
    format: str
    parquet_codec: str
    compatibility: str
    ignore_null_values: bool
    partitioner: str
    partition_fields: tuple[str, ...]
    path_format: str
    partition_duration_ms: int
    timezone: dt.tzinfo | None
    timestamp_extractor: str
    timestamp_field: str
    access_key: str | None
    secret_key: str | None

    @property
    def local_root(self) -> str | None:
        """The local directory objects go under, for a file:// store; else None."""
        url = self.store_url
        if not url or not url.startswith("file:"):
            return None
        path = url[len("file://") :] if url.startswith("file://") else url[len("file:") :]
        return path.rstrip("/") or "/"


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    text = value.value if isinstance(value, Password) else str(value)
    return text or None


def parse_config(props: Mapping[str, str]) -> StoreConfig:
    """Parse and check a raw config; ConfigError names the key at fault."""
    values = CONFIG_DEF.parse(props)
    for required in (FLUSH_SIZE, FORMAT):
        if values[required] is None:
            raise ConfigError(f"Missing required configuration {required}", required, None)
    partitioner = PARTITIONERS[values[PARTITIONER]]
    fields = tuple(values[PARTITION_FIELDS] or ())
    if partitioner == "field" and not fields:
        raise ConfigError("The field partitioner needs partition.field.name", PARTITION_FIELDS, "")
    path_format = values[PATH_FORMAT]
    duration = values[PARTITION_DURATION]
    if partitioner == "hourly":
        path_format, duration = "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", 3_600_000
    elif partitioner == "daily":
        path_format, duration = "'year'=YYYY/'month'=MM/'day'=dd", 86_400_000
    if partitioner in ("time", "hourly", "daily"):
        if not path_format:
            raise ConfigError("The time-based partitioner needs path.format", PATH_FORMAT, "")
        if duration <= 0:
            raise ConfigError(
                "The time-based partitioner needs a positive partition.duration.ms",
                PARTITION_DURATION,
                duration,
            )
        if not values[TIMEZONE]:
            raise ConfigError("The time-based partitioner needs a timezone", TIMEZONE, "")
    url = values[STORE_URL] or None
    bucket = values[BUCKET] or None
    if (url is None or not url.startswith("file:")) and bucket is None:
        raise ConfigError(f"S3 storage needs a bucket: set {BUCKET}", BUCKET, None)
    access, secret = _secret(values[ACCESS_KEY]), _secret(values[SECRET_KEY])
    if (access is None) != (secret is None):
        raise ConfigError(
            "Set both aws.access.key.id and aws.secret.access.key, or neither",
            SECRET_KEY if secret is None else ACCESS_KEY,
            Password.HIDDEN,
        )
    zone = values[TIMEZONE]
    return StoreConfig(
        store_url=url,
        bucket=bucket,
        region=values[REGION],
        topics_dir=values[TOPICS_DIR].strip("/"),
        flush_size=values[FLUSH_SIZE],
        rotate_interval_ms=values[ROTATE_INTERVAL],
        rotate_schedule_ms=values[ROTATE_SCHEDULE],
        format=FORMATS[values[FORMAT]],
        parquet_codec=values[PARQUET_CODEC].lower(),
        compatibility=values[COMPATIBILITY].upper(),
        ignore_null_values=values[NULL_VALUES].lower() == "ignore",
        partitioner=partitioner,
        partition_fields=fields,
        path_format=path_format,
        partition_duration_ms=duration,
        timezone=zoneinfo.ZoneInfo(zone) if zone else None,
        timestamp_extractor=_EXTRACTORS[values[TIMESTAMP_EXTRACTOR]],
        timestamp_field=values[TIMESTAMP_FIELD],
        access_key=access,
        secret_key=secret,
    )
