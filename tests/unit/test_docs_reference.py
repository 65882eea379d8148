"""The docs stay true: the configuration reference is current and the guide's counter source
counts and resumes from its committed offset."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from connectrt.api import OffsetStorageReader, SourceTaskContext
from connectrt.cli.docs import config_reference
from tests.docs_support import DOCS, load_example

REFERENCE = DOCS / "reference" / "configuration.md"


def _section(page: Path, name: str) -> str:
    text = page.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert m, f"{page.name} has no {name} section"
    return m.group(1)


def test_config_reference_is_current():
    assert _section(REFERENCE, "config-reference") == config_reference(), (
        "docs/reference/configuration.md is stale: regenerate it with `connectrt config-docs`"
    )


class _Reader(OffsetStorageReader):
    def __init__(self, stored: dict[str, Any] | None) -> None:
        self.stored = stored

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        return [self.stored for _ in partitions]


class _Context(SourceTaskContext):
    def __init__(self, stored: dict[str, Any] | None) -> None:
        self._reader = _Reader(stored)

    @property
    def configs(self) -> Mapping[str, str]:
        return {}

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


def test_example_connector_counts_and_resumes():
    ex = load_example("counter-source")
    connector = ex.CounterSource()
    connector.start({"topic": "numbers", "batch.size": "3"})
    (task_config,) = connector.task_configs(4)
    task = ex.CounterTask()
    task.initialize(_Context(None))
    task.start(task_config)
    first = task.poll()
    assert [r.value for r in first] == [0, 1, 2]
    assert first[-1].source_offset == {"next": 3}
    resumed = ex.CounterTask()
    resumed.initialize(_Context({"next": 42}))
    resumed.start(task_config)
    assert [r.value for r in resumed.poll()] == [42, 43, 44]
    resumed.stop()
    assert resumed.poll() is None
