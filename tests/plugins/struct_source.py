"""A test source of structured records, as fast as it is allowed: for byte rate limits.

:class:`StructSource` (one task) returns ``batch.size`` records per ``poll()``, endlessly: key
``"k<seq, 10 digits>"`` (a string), a ``Struct`` value (``value.kind=struct``, with its schema)
or a ``dict`` (``value.kind=map``, schemaless) ``{"seq": "<10 digits>", "pad": "x" * pad}``,
and one header ``trace`` of ``header.bytes`` characters: every record converts to the same
number of bytes. Source partition ``{"p": 0}``, offset ``{"seq": next}``.
"""

from __future__ import annotations

from collections.abc import Mapping

from connectrt.api import (
    ConfigDef,
    Header,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connectrt.data import Schema, SchemaBuilder, Struct


class StructSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return StructSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


VALUE_SCHEMA: Schema = (
    SchemaBuilder.struct()
    .name("test.Padded")
    .field("seq", Schema.STRING_SCHEMA)
    .field("pad", Schema.STRING_SCHEMA)
    .build()
)


class StructSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.batch = int(config.get("batch.size", "50"))
        self.struct = config.get("value.kind", "struct") == "struct"
        self.pad = "x" * int(config.get("pad", "100"))
        self.header = "h" * int(config.get("header.bytes", "50"))
        stored = self.context.offset_storage_reader.offset({"p": 0})
        self.seq = int(stored["seq"]) if stored else 0

    def poll(self) -> list[SourceRecord] | None:
        records = []
        for _ in range(self.batch):
            seq = f"{self.seq:010d}"
            self.seq += 1
            if self.struct:
                value: object = Struct(VALUE_SCHEMA).put("seq", seq).put("pad", self.pad)
                schema: Schema | None = VALUE_SCHEMA
            else:
                value, schema = {"seq": seq, "pad": self.pad}, None
            records.append(
                SourceRecord(
                    {"p": 0},
                    {"seq": self.seq},
                    self.topic,
                    None,
                    Schema.STRING_SCHEMA,
                    f"k{seq}",
                    schema,
                    value,
                    headers=[Header("trace", self.header, Schema.STRING_SCHEMA)],
                )
            )
        return records

    def stop(self) -> None:
        pass
