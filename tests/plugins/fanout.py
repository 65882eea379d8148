"""A custom SMT that fans each record out into two (beyond Kafka Connect's SMT contract)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.records import ConnectRecord
from connectrt.api.transform import Transformation


class Twice(Transformation[ConnectRecord]):
    def configure(self, config: Mapping[str, Any]) -> None:
        self.suffix = str(config.get("suffix", "-copy"))

    def apply(self, record: ConnectRecord) -> list[ConnectRecord]:
        copy = record.new_record(value=f"{record.value}{self.suffix}")  # type: ignore[attr-defined]
        return [record, copy]
