"""DatagenConnector: random records from an Avro schema with generation hints.

Confluent's ``kafka-connect-datagen`` keys (``kafka.topic``, ``quickstart``,
``schema.filename``, ``schema.string``, ``schema.keyfield``, ``max.interval``, ``iterations``,
``random.seed``) plus ``rate`` (records/s for the whole connector) and ``batch.size``.

Work split: with ``T`` tasks, task ``t`` generates the records with global indexes
``t, t + T, t + 2T, ...`` (below ``iterations`` when set), so the records of all tasks together
are the sequence ``0 .. iterations-1`` and ``iteration`` hints stay unique across tasks. The
source partition is ``{"task.id": t}`` and the offset ``{"current.iteration": k}`` = records
this task generated so far; a restarted task continues at ``k``. Randomness comes from one
``random.Random`` per block of :data:`BLOCK` records of a task, seeded from
``(random.seed, t, block)``, so a task resuming mid-block re-seeds that block and skips its
first records: it produces exactly what the uninterrupted run would have (changing
``tasks.max`` changes the split, and so the records).

Values are Connect ``Struct``s with the Connect schema of the Avro schema (see
:mod:`connectors.datagen.generators`); keys are the ``schema.keyfield`` value as a STRING.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from connectors.datagen.config import (
    BATCH_SIZE_CONFIG,
    CONFIG_DEF,
    ITERATIONS_CONFIG,
    MAX_INTERVAL_CONFIG,
    RATE_CONFIG,
    SCHEMA_SOURCES,
    SEED_CONFIG,
    TASK_COUNT_CONFIG,
    TASK_ID_CONFIG,
    TOPIC_CONFIG,
    load_schema,
)
from connectrt.api import (
    ConfigDef,
    ConfigError,
    ConfigValue,
    ConnectError,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connectrt.data import Field, Schema, Struct

__all__ = ["BLOCK", "DatagenConnector", "DatagenTask", "task_record_count"]

VERSION: Final = "0.1.0"
BLOCK: Final = 1024
"""Records per random-stream block (a resumed task replays at most this many - 1)."""

TASK_PARTITION_KEY: Final = "task.id"
OFFSET_KEY: Final = "current.iteration"
_MAX_WAIT_S: Final = 0.5  # longest a poll() blocks while waiting for the next record


def task_record_count(iterations: int, task: int, tasks: int) -> int | None:
    """How many records task ``task`` of ``tasks`` generates (None: no limit)."""
    if iterations < 0:
        return None
    return max(0, (iterations - task + tasks - 1) // tasks)


class DatagenConnector(SourceConnector):
    """Splits the work into ``tasks.max`` tasks (fewer when ``iterations`` is smaller)."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._iterations = -1

    def version(self) -> str:
        return VERSION

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = super().validate(config)
        if any(values[k].errors for k in values):
            return values
        try:
            load_schema(CONFIG_DEF.parse(config))
        except ConfigError as exc:
            key = exc.name if exc.name in values else SCHEMA_SOURCES[0]
            values[key].errors.append(str(exc))
        return values

    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG_DEF.parse(config)
        load_schema(cfg)  # fail fast with the same errors validate() reports
        self._props = dict(config)
        self._iterations = cfg[ITERATIONS_CONFIG]

    def task_class(self) -> type[Task]:
        return DatagenTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        count = max(1, max_tasks)
        if self._iterations >= 0:
            count = max(1, min(count, self._iterations))
        return [
            {**self._props, TASK_ID_CONFIG: str(t), TASK_COUNT_CONFIG: str(count)}
            for t in range(count)
        ]

    def stop(self) -> None:
        pass

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        return "SUPPORTED"


class DatagenTask(SourceTask):
    """Generates up to ``batch.size`` records per poll, paced by ``rate`` or ``max.interval``.

    ``poll()`` blocks at most ~0.5 s when the next record is not due yet (or the task is done);
    ``stop()`` (from another thread) wakes it.
    """

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._topic = ""
        self._task = 0
        self._tasks = 1
        self._seed = 0
        self._limit: int | None = None
        self._position = 0  # records generated so far by this task
        self._batch = 1000
        self._partition: dict[str, int] = {}
        self._generate: Any = None
        self._schema: Schema | None = None
        self._key_field: Field | None = None
        self._rng: random.Random | None = None
        self._rng_block = -1
        # pacing
        self._rate = 0.0
        self._max_interval = 0.0
        self._pace_rng = random.Random()
        self._paced_from = 0.0
        self._paced_count = 0
        self._next_due = 0.0

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        cfg = CONFIG_DEF.parse(config)
        loaded = load_schema(cfg)
        self._generate, self._schema = loaded.generate, loaded.schema
        self._key_field = None
        if loaded.key_index is not None:
            self._key_field = loaded.schema.fields[loaded.key_index]
        self._topic = cfg[TOPIC_CONFIG]
        self._task = int(cfg.get(TASK_ID_CONFIG, 0))
        self._tasks = max(1, int(cfg.get(TASK_COUNT_CONFIG, 1)))
        seed = cfg[SEED_CONFIG]
        self._seed = seed if seed is not None else int.from_bytes(os.urandom(8), "big")
        self._limit = task_record_count(cfg[ITERATIONS_CONFIG], self._task, self._tasks)
        self._batch = cfg[BATCH_SIZE_CONFIG]
        self._partition = {TASK_PARTITION_KEY: self._task}
        committed = self.context.offset_storage_reader.offset(self._partition)
        position = 0
        if committed is not None:
            stored = committed.get(OFFSET_KEY)
            if not isinstance(stored, int) or isinstance(stored, bool) or stored < 0:
                raise ConnectError(f"Invalid datagen offset {committed!r}")
            position = stored
        self._position = position
        self._rng, self._rng_block = None, -1
        self._rate = cfg[RATE_CONFIG] / self._tasks
        self._max_interval = cfg[MAX_INTERVAL_CONFIG] / 1000.0
        self._pace_rng = random.Random(f"pace/{self._seed}/{self._task}")
        self._paced_from = time.monotonic()
        self._paced_count = 0
        self._next_due = self._paced_from
        self._stopping.clear()

    # ------------------------------------------------------------------------------ generation

    def _stream(self, position: int) -> random.Random:
        """The random stream positioned at record ``position`` of this task."""
        block = position // BLOCK
        rng = self._rng
        if rng is None or block != self._rng_block:
            rng = random.Random(f"{self._seed}/{self._task}/{block}")
            self._rng, self._rng_block = rng, block
            generate = self._generate
            base = block * BLOCK
            for skipped in range(base, position):  # resuming mid-block: replay its head
                generate(rng, self._task + skipped * self._tasks)
        return rng

    def generate(self, count: int) -> list[SourceRecord]:
        """The next ``count`` records (fewer when the limit is reached); no pacing."""
        if self._limit is not None:
            count = min(count, self._limit - self._position)
        records: list[SourceRecord] = []
        if count <= 0:
            return records
        append = records.append
        generate, schema, topic = self._generate, self._schema, self._topic
        partition, key_field = self._partition, self._key_field
        task, tasks = self._task, self._tasks
        key_schema = None
        if key_field is not None:
            optional = key_field.schema.optional
            key_schema = Schema.OPTIONAL_STRING_SCHEMA if optional else Schema.STRING_SCHEMA
        position = self._position
        rng = self._stream(position)
        for position in range(position, position + count):  # noqa: B020 - advances position
            if position % BLOCK == 0 and position // BLOCK != self._rng_block:
                rng = self._stream(position)
            value: Struct = generate(rng, task + position * tasks)
            key = None
            if key_field is not None:
                key = _key_text(value.get(key_field))
            append(
                SourceRecord(
                    partition,
                    {OFFSET_KEY: position + 1},
                    topic,
                    None,
                    key_schema,
                    key,
                    schema,
                    value,
                )
            )
        self._position = position + 1
        return records

    # -------------------------------------------------------------------------------- polling

    def _due(self, now: float) -> tuple[int, float]:
        """How many records are due now, and (when none) how long until the next one."""
        if self._rate > 0:
            due = int((now - self._paced_from) * self._rate) + 1 - self._paced_count
            if due > 0:
                return min(due, self._batch), 0.0
            wait = (self._paced_count / self._rate) - (now - self._paced_from)
            return 0, max(wait, 0.001)
        if self._max_interval > 0:
            if self._next_due < now - 1.0:
                self._next_due = now  # after a pause: resume the pace instead of a burst
            due = 0
            while self._next_due <= now and due < self._batch:
                due += 1
                self._next_due += self._pace_rng.random() * self._max_interval
            return due, 0.0 if due else self._next_due - now
        return self._batch, 0.0

    def poll(self) -> list[SourceRecord] | None:
        if self._stopping.is_set():
            return None
        if self._limit is not None and self._position >= self._limit:
            self._stopping.wait(_MAX_WAIT_S)  # done: idle until stopped
            return None
        due, wait = self._due(time.monotonic())
        if not due:
            self._stopping.wait(min(wait, _MAX_WAIT_S))
            return None
        records = self.generate(due)
        self._paced_count += len(records)
        return records

    def stop(self) -> None:
        """Called from another thread: wakes a waiting poll()."""
        self._stopping.set()


def _key_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
