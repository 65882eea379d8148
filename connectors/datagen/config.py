"""Datagen configuration (Confluent datagen-compatible keys) and loading the value schema.

Exactly one of ``quickstart``, ``schema.filename`` and ``schema.string`` names the Avro schema;
:func:`load_schema` reads it, derives its Connect schema and compiles its generator, raising a
ConfigError that names the key at fault (the validate endpoint shows it on that field).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from connectors.datagen.generators import Gen, HintError, compile_generator
from connectors.datagen.quickstarts import (
    DEFAULT_KEYFIELDS,
    QUICKSTARTS,
    quickstart_dir,
    quickstart_path,
)
from connectrt.api import ConfigDef, ConfigError, ConfigType, DataError, Importance, Range
from connectrt.data import Schema
from connectrt.data.avro_schema import avro_to_connect

__all__ = ["CONFIG_DEF", "DatagenSchema", "load_schema"]

TOPIC_CONFIG: Final = "kafka.topic"
QUICKSTART_CONFIG: Final = "quickstart"
SCHEMA_FILENAME_CONFIG: Final = "schema.filename"
SCHEMA_STRING_CONFIG: Final = "schema.string"
KEYFIELD_CONFIG: Final = "schema.keyfield"
MAX_INTERVAL_CONFIG: Final = "max.interval"
ITERATIONS_CONFIG: Final = "iterations"
SEED_CONFIG: Final = "random.seed"
RATE_CONFIG: Final = "rate"
BATCH_SIZE_CONFIG: Final = "batch.size"
SCHEMA_SOURCES: Final = (QUICKSTART_CONFIG, SCHEMA_FILENAME_CONFIG, SCHEMA_STRING_CONFIG)

# Set by the connector on each task config.
TASK_ID_CONFIG: Final = "datagen.task.id"
TASK_COUNT_CONFIG: Final = "datagen.task.count"

CONFIG_DEF: Final = (
    ConfigDef()
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Topic to write the generated records to.",
    )
    .define(
        QUICKSTART_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.HIGH,
        documentation="Name of a bundled schema: " + ", ".join(QUICKSTARTS) + ".",
    )
    .define(
        SCHEMA_FILENAME_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.HIGH,
        documentation="Path of an Avro schema file (.avsc), with optional arg.properties hints.",
    )
    .define(
        SCHEMA_STRING_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.HIGH,
        documentation="An Avro schema as JSON text (instead of quickstart or schema.filename).",
    )
    .define(
        KEYFIELD_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="Top-level field whose value (as a string) is the record key; a "
        "quickstart has a default (e.g. orderid for orders), otherwise keys are null.",
    )
    .define(
        MAX_INTERVAL_CONFIG,
        ConfigType.LONG,
        500,
        Range.at_least(0),
        Importance.MEDIUM,
        "Maximum interval in ms between records of a task (a random wait in 0..max.interval "
        "before each record); 0 generates as fast as possible.",
    )
    .define(
        ITERATIONS_CONFIG,
        ConfigType.LONG,
        -1,
        Range.at_least(-1),
        Importance.MEDIUM,
        "Total number of records to generate, split across tasks; -1 for no limit.",
    )
    .define(
        SEED_CONFIG,
        ConfigType.LONG,
        None,
        importance=Importance.LOW,
        documentation="Seed for deterministic output (same seed, same records, also after "
        "a restart); random when unset.",
    )
    .define(
        RATE_CONFIG,
        ConfigType.DOUBLE,
        0.0,
        Range.at_least(0),
        Importance.MEDIUM,
        "Target records per second for the whole connector (split across tasks); replaces "
        "max.interval when above 0.",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        Range.between(1, 100_000),
        Importance.LOW,
        "Maximum records returned by one poll.",
    )
)


@dataclass(frozen=True)
class DatagenSchema:
    """A loaded value schema: Avro (with hints), Connect schema, generator, key field index."""

    avro: dict[str, Any]
    schema: Schema
    generate: Gen
    key_index: int | None


def load_schema(cfg: dict[str, Any]) -> DatagenSchema:
    """Load and compile the configured schema. ``cfg`` is parsed by :data:`CONFIG_DEF`.

    Raises ConfigError naming the key at fault.
    """
    given = [k for k in SCHEMA_SOURCES if str(cfg.get(k) or "").strip()]
    if not given:
        raise ConfigError(
            "Set one of quickstart, schema.filename or schema.string "
            f"(available quickstarts: {', '.join(QUICKSTARTS)})",
            QUICKSTART_CONFIG,
        )
    if len(given) > 1:
        raise ConfigError(
            f"Only one of quickstart, schema.filename and schema.string may be set, "
            f"got {', '.join(given)}",
            given[1],
        )
    source = given[0]
    raw = str(cfg[source]).strip()
    keyfield = str(cfg.get(KEYFIELD_CONFIG) or "").strip()
    if source == QUICKSTART_CONFIG:
        path = quickstart_path(raw)
        if path is None:
            folder = quickstart_dir()
            where = "" if folder is not None else " (the quickstart schema folder was not found)"
            raise ConfigError(
                f"Unknown quickstart {raw!r}; available quickstarts: "
                f"{', '.join(QUICKSTARTS)}{where}",
                source,
                raw,
            )
        text = _read(path, source)
        keyfield = keyfield or DEFAULT_KEYFIELDS.get(raw.lower(), "")
    elif source == SCHEMA_FILENAME_CONFIG:
        text = _read(Path(raw), source)
    else:
        text = raw
    try:
        avro = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"The schema of {source} is not valid JSON: {exc}", source) from exc
    if not isinstance(avro, dict) or avro.get("type") != "record":
        raise ConfigError(f"The schema of {source} must be an Avro record", source)
    try:
        schema = avro_to_connect(avro)
    except DataError as exc:
        raise ConfigError(f"Invalid Avro schema in {source}: {exc}", source) from exc
    try:
        generate = compile_generator(avro, schema)
    except HintError as exc:
        raise ConfigError(f"Invalid generation hint in {source}: {exc}", source) from exc
    key_index = None
    if keyfield:
        field = schema.field(keyfield)
        if field is None:
            names = ", ".join(f.name for f in schema.fields)
            raise ConfigError(
                f"schema.keyfield {keyfield!r} is not a top-level field of the schema "
                f"(fields: {names})",
                KEYFIELD_CONFIG,
                keyfield,
            )
        key_index = field.index
    return DatagenSchema(avro, schema, generate, key_index)


def _read(path: Path, key: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"Cannot read schema file {str(path)!r}: {reason}", key) from exc
